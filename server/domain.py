"""Domain events the lobby emits and the one small interface plugins implement.

A plugin reacts to an event inside the transaction that records it (so its
derived rows commit atomically with the result) and learns about the commit
afterwards, which is when it may publish anything.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiosqlite

from ratings_plugin.games import Game


@dataclass(frozen=True)
class RatedUnit:
    """What a ladder applies in one step: one FIBS match, or one closed event's games."""

    ladder: str
    seq: int
    at: str
    games: tuple[Game, ...]
    player_ids: Mapping[str, int]
    match_id: int | None = None
    event_id: int | None = None

    @property
    def cause(self) -> dict[str, int]:
        """What history shows as the cause: the match, the event, or both."""
        cause: dict[str, int] = {}
        if self.match_id is not None:
            cause["match"] = self.match_id
        if self.event_id is not None:
            cause["event"] = self.event_id
        assert cause
        return cause


@dataclass(frozen=True)
class MatchFinished:
    unit: RatedUnit


@dataclass(frozen=True)
class EventClosed:
    unit: RatedUnit


@dataclass(frozen=True)
class LadderCorrected:
    """The log of ``ladder`` changed in the past (void, adjudicate): recompute it.

    With ``since`` (the ``seq`` of the corrected unit), ``units`` are the
    ladder's units from that one on, and the ladder as it stood before them
    is what its stored history says; without, ``units`` are the whole log.
    """

    ladder: str
    units: tuple[RatedUnit, ...]
    player_ids: Mapping[str, int] = field(default_factory=dict)
    cause: dict[str, int] = field(default_factory=dict)
    since: int | None = None


DomainEvent = MatchFinished | EventClosed | LadderCorrected


class Plugin(Protocol):
    async def load(self, conn: aiosqlite.Connection, publish: bool = True) -> None:
        """(Re)build in-memory state from the database as ``conn`` sees it.

        ``publish`` is false when ``conn`` is inside an uncommitted transaction.
        """

    async def handle(self, conn: aiosqlite.Connection, event: DomainEvent) -> Any:
        """Write derived rows for ``event`` in the current transaction; return an outcome."""

    def committed(self, outcome: Any) -> None:
        """The transaction holding ``outcome`` committed: publish it."""
