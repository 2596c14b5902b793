"""The replies to an admin's ``ban`` and ``unban`` as sentences."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Line = Callable[[Any, Any, Any], str]
"""(data, ladders, viewer) → a line, as :data:`clients.render.Renderer`."""


def _until(stamp: Any) -> str:
    """A ban's end: ``2027-01-15T00:00:00Z`` as ``2027-01-15``."""
    if not isinstance(stamp, str):
        return "no end date"
    return stamp[:10] if stamp[10:] in ("", "T00:00:00Z") else f"{stamp[:10]} {stamp[11:16]} UTC"


def _ban(d: Mapping[str, Any], ladders: Any, viewer: Any) -> str:
    if not d["banned"]:
        return (f"{d['player']} may log in again." if d.get("lifted")
                else f"{d['player']} was not banned.")
    when = "with no end date" if d.get("until") is None else f"until {_until(d['until'])}"
    why = f" ({d['reason']})" if d.get("reason") else ""
    return f"Banned {d['player']} {when}{why}: their connection is closed, their logins refused."


REPLIES: dict[str, Line] = {"ban": _ban, "unban": _ban}
