"""Replies that list many rows, one page at a time.

A client asks for rows ``FROM`` (1-based) on, ``COUNT`` of them; a reply holds
at most a page of them, so that no single reply can fill a connection's budget
of unread bytes, and when the client asked for more than the page held,
``next`` is the arguments of the same command that fetch the rest (``null``
when nothing is left). A client that wants everything sends ``next`` back
until it is ``null``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The most rows a reply holds, each a few dozen to a few hundred bytes: a page stays well
# under a connection's budget of unread bytes (``limits.outgoing_bytes``).
LADDER_PAGE = 500  # ladder rows of ~100-170 bytes: ~85 KB at most
EVENT_PAGE = 200  # an event's games (~170-500 bytes) and as many standings (~90)
HISTORY_PAGE = 500  # history entries of ~130-170 bytes


@dataclass(frozen=True, slots=True)
class Page:
    start: int
    """The first row's position, 1-based."""
    asked: int | None
    """How many rows the client asked for from ``start`` (``None``: all of them)."""
    size: int
    """The most rows this reply holds."""

    @classmethod
    def of(cls, args: dict[str, Any], default: int | None, limit: int) -> Page:
        """The page a command's ``from`` and ``count`` arguments ask for."""
        asked = args.get("count")
        asked = default if asked is None else asked
        return cls(max(1, args.get("from") or 1), asked,
                   limit if asked is None else min(asked, limit))

    def slice(self, rows: list[Any]) -> list[Any]:
        return rows[self.start - 1:self.start - 1 + self.size]

    def next(self, args: dict[str, Any], served: int, total: int) -> dict[str, Any] | None:
        """The arguments that fetch what was asked beyond the ``served`` rows, if any."""
        end = self.start - 1 + served
        if end >= total or (self.asked is not None and served >= self.asked):
            return None
        rest = {k: v for k, v in args.items() if v is not None and v is not False}
        rest["from"] = end + 1
        if self.asked is None:
            rest.pop("count", None)
        else:
            rest["count"] = self.asked - served
        return rest
