"""Events' standings and the list of events, worked out once per version of the events.

An event's standings read every game it holds (tens of milliseconds for 10,000 games), and
``event show`` shows them on every page; ``events`` counts the games of every event. They
change only when results do (a result, an import, a correction, a close), and each of those
moves its event's ``version`` on in the same transaction (server/store/events.py). So a node
keeps what it worked out under the version it read just before, and sees another node's
change at its next read of the events table. What is kept was read after that version had
committed: it is never older than the version it is kept under. Requests for a version being
worked out wait for that one computation.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from server.store import events as stored
from server.store.handle import Reads

T = TypeVar("T")
# Standings rows kept over every event (a row ~100 bytes): a few MB at most. An event with
# more players than this is worked out on every request (and costs the asker accordingly).
MAX_ROWS = 50_000
MAX_EVENTS = 64


class _Once:
    """One computation per key at a time, in a task of its own: later askers wait for the one
    under way, and an asker that goes away (its connection closed) does not stop it."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    async def run(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> tuple[T, bool]:
        """``compute()``'s result, and whether this call started it."""
        running = self._running.get(key)
        started = running is None
        if running is None:
            running = self._running[key] = asyncio.ensure_future(compute())
            running.add_done_callback(lambda done: self._finished(key, done))
        result: T = await asyncio.shield(running)
        return result, started

    def _finished(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved: its askers have it, if any are left


@dataclass(frozen=True, slots=True)
class Standings:
    """An event's standings and its number of games, as of ``version`` or later."""

    version: int
    games: int
    rows: tuple[tuple[str, int, int, int, int, float], ...]

    def page(self, skip: int, size: int) -> list[dict[str, Any]]:
        return [{"player": r[0], "played": r[1], "won": r[2], "drawn": r[3], "lost": r[4],
                 "points": r[5]} for r in self.rows[skip:skip + size]]


class EventStandings:
    """The standings of the events asked for lately, each under the version it reflects."""

    def __init__(self, max_rows: int = MAX_ROWS, max_events: int = MAX_EVENTS) -> None:
        self.max_rows, self.max_events = max_rows, max_events
        self._kept: OrderedDict[int, Standings] = OrderedDict()  # least recently used first
        self._rows = 0
        self._once = _Once()

    async def get(self, db: Reads, event_id: int, version: int) -> tuple[Standings, bool]:
        """The standings of ``event_id`` at ``version`` (read from its row just now), and
        whether this call worked them out."""
        kept = self._kept.get(event_id)
        if kept is not None and kept.version == version:
            self._kept.move_to_end(event_id)
            return kept, False

        async def compute() -> Standings:
            games, rows = await stored.standings(db, event_id)
            made = Standings(version, games, tuple(
                (str(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), float(r[5]))
                for r in rows))
            self._keep(event_id, made)
            return made

        return await self._once.run((event_id, version), compute)

    def _keep(self, event_id: int, made: Standings) -> None:
        old = self._kept.get(event_id)
        if old is not None and old.version > made.version:
            return  # a newer version was kept meanwhile
        if old is not None:
            self._rows -= len(old.rows)
            del self._kept[event_id]
        if len(made.rows) > self.max_rows:
            return
        self._kept[event_id] = made
        self._rows += len(made.rows)
        while self._rows > self.max_rows or len(self._kept) > self.max_events:
            _, dropped = self._kept.popitem(last=False)
            self._rows -= len(dropped.rows)


class EventListing:
    """Every event with its number of finished games, kept until any event changes.

    Its key is the number of events and the sum of their versions: events are never
    removed and a version only grows, so any new event or change to one moves the key.
    """

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._rows: list[dict[str, Any]] = []
        self._once = _Once()

    async def get(self, db: Reads) -> tuple[list[dict[str, Any]], bool]:
        """Every event (oldest first), and whether this call counted their games."""
        key = await stored.versions(db)
        if key == self._key:
            return self._rows, False

        async def compute() -> list[dict[str, Any]]:
            rows = [{"id": r["id"], "name": r["name"], "ladder": r["ladder"], "date": r["date"],
                     "status": r["status"], "games": r["games"]}
                    for r in await stored.listing(db, None)]
            if self._key is None or key > self._key:
                self._key, self._rows = key, rows
            return rows

        return await self._once.run(key, compute)
