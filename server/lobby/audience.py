"""Who hears a push, said by name (players, a ladder's watchers, the admins), not by
connection.

A push is addressed once, when the command that caused it decides it, and each lobby
process resolves the address to the connections it holds when it sends the push: the one
path every push takes (:meth:`server.lobby.lobby.Lobby.publish`), and the shape a push
needs to reach the players of other nodes, which no process can name the connections of.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Audience:
    """``players`` by name (any case), everyone watching the ladder ``watchers``, with
    ``admins`` every admin logged in, and with ``everyone`` every connection (a shout). Each
    connection hears a push once."""

    players: tuple[str, ...] = ()
    watchers: str | None = None
    admins: bool = False
    everyone: bool = False

    def __bool__(self) -> bool:
        return bool(self.players) or self.watchers is not None or self.admins or self.everyone

    def as_text(self) -> str:
        """The audience as one line of JSON (the ``pushes`` table's ``audience``)."""
        shown: dict[str, Any] = {"players": list(self.players)}
        if self.watchers is not None:
            shown["watchers"] = self.watchers
        if self.admins:
            shown["admins"] = True
        if self.everyone:
            shown["everyone"] = True
        return json.dumps(shown, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_text(cls, text: str) -> Audience:
        shown = json.loads(text)
        return cls(tuple(shown.get("players", ())), shown.get("watchers"),
                   bool(shown.get("admins", False)), bool(shown.get("everyone", False)))


def to_players(*names: str) -> Audience:
    return Audience(players=names)
