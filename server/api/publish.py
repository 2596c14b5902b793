"""How a plugin tells connected people what happened, once it has been committed."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

Data = dict[str, Any] | Callable[[], dict[str, Any]]
"""A push's data, or a function making it (called once, after the reply has gone out)."""


class Publisher(Protocol):
    def push(self, event: str, data: Data, *, players: Iterable[str] = (),
             watchers: str | None = None) -> None:
        """Send ``{"event": event, "data": data}`` to the connections of ``players`` and, with
        ``watchers``, to everyone watching that ladder; each connection gets it once."""
