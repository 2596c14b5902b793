"""Reading the match log back as the units ladders apply, in the order they were applied.

The log is ``matches`` and ``events`` with their shared ``seq`` numbers: a
rated FIBS match has its own ``seq``; a closed P4P or ČAS event has one for
all its games. Ratings and history are derived from this alone. Every read
goes through a :class:`~server.api.Reader`, so the same code reads inside a
writer job, on a ``matchlobby`` sub-command's store, or from the lobby's
reader.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from datetime import date
from typing import Any, TypeVar

from server.api import Game, RatedUnit, Reader

T = TypeVar("T")


def split_side(side: str) -> tuple[str, ...]:
    return tuple(side.split("+"))


def game_from_row(row: Any) -> Game:
    """A :class:`Game` from a ``matches`` row; a result without scores counts 1–0."""
    score_a, score_b = row["score_a"], row["score_b"]
    if score_a is None or score_b is None:
        winner = row["winner"]
        score_a, score_b = {"a": (1, 0), "b": (0, 1)}.get(winner, (0, 0))
    return Game(
        side_a=split_side(row["side_a"]),
        side_b=split_side(row["side_b"]),
        score_a=score_a,
        score_b=score_b,
        played_on=date.fromisoformat(row["played_on"]),
        length=row["length"],
        unrated_reason=row["unrated_reason"],
    )


YIELD_ROWS = 4096  # rows read between two turns of the event loop


async def with_turns(rows: Iterable[T]) -> AsyncIterator[T]:
    """``rows``, with a turn of the event loop every :data:`YIELD_ROWS` of them.

    A job's reads run inline on the event loop (``server.store.writer.jobs``)
    and never wait, so reading a whole ladder's log for a correction (a
    million rows: ~30 s on the bench machine) would otherwise hold the loop,
    and every connection, for all of that time.
    """
    for n, row in enumerate(rows, 1):
        yield row
        if n % YIELD_ROWS == 0:
            await asyncio.sleep(0)


FROM_THE_START = 0  # ladder_units: every unit (seq numbers start at 1)
TO_THE_END = 2**62  # ladder_units: every unit from `since` on
# The players of a ladder's units from a given seq on (a tail, for a correction) up to another
# (a page): its matches with a seq through the (ladder, seq) index, and the games of its
# events closed between.
TAIL_PLAYERS = """SELECT mp.match_id, p.id, p.name FROM matches m
    CROSS JOIN match_players mp JOIN players p ON p.id = mp.player_id
    WHERE m.ladder = ?1 AND m.seq >= ?2 AND m.seq <= ?3 AND m.status = 'finished'
    AND mp.match_id = m.id
    UNION ALL
    SELECT mp.match_id, p.id, p.name FROM events e CROSS JOIN matches m
    CROSS JOIN match_players mp JOIN players p ON p.id = mp.player_id
    WHERE e.ladder = ?1 AND e.seq >= ?2 AND e.seq <= ?3 AND m.event_id = e.id
    AND +m.seq IS NULL AND m.status = 'finished' AND mp.match_id = m.id"""
ALL_PLAYERS = """SELECT mp.match_id, p.id, p.name FROM match_players mp
    JOIN players p ON p.id = mp.player_id JOIN matches m ON m.id = mp.match_id
    WHERE m.ladder = ?1 AND m.status = 'finished'"""


async def _player_ids(reader: Reader, ladder: str, since: int, until: int
                      ) -> dict[int, dict[str, int]]:
    ids: dict[int, dict[str, int]] = {}
    query, params = (ALL_PLAYERS, (ladder,)) if (since, until) == (
        FROM_THE_START, TO_THE_END) else (TAIL_PLAYERS, (ladder, since, until))
    async for row in reader.stream(query, params):
        ids.setdefault(row[0], {})[row[2]] = row[1]
    return ids


async def ladder_units(reader: Reader, ladder: str, since: int = FROM_THE_START,
                       until: int | None = None) -> list[RatedUnit]:
    """The units of ``ladder`` whose ``seq`` is ``since`` or later (by default every one) and
    ``until`` or earlier (by default the last), in ``seq`` order, built from committed log
    rows."""
    last = TO_THE_END if until is None else until
    ids = await _player_ids(reader, ladder, since, last)
    units: list[tuple[int, RatedUnit]] = []
    async for row in reader.stream(
        """SELECT * FROM matches WHERE ladder = ? AND seq >= ? AND seq <= ?
           AND status = 'finished'""",
        (ladder, since, last),
    ):
        units.append((row["seq"], RatedUnit(
            ladder=ladder, seq=row["seq"], at=row["finished_at"], games=(game_from_row(row),),
            player_ids=ids.get(row["id"], {}), match_id=row["id"], event_id=row["event_id"],
        )))
    events: dict[int, Any] = {}
    async for row in reader.stream(
        "SELECT * FROM events WHERE ladder = ? AND status = 'closed' AND seq >= ? AND seq <= ?",
        (ladder, since, last)
    ):
        events[row["id"]] = row
    games: dict[int, list[Game]] = {e: [] for e in events}
    event_ids: dict[int, dict[str, int]] = {e: {} for e in events}
    if events:
        async for row in reader.stream(
            """SELECT m.* FROM matches m JOIN events e ON e.id = m.event_id
               WHERE e.ladder = ? AND e.status = 'closed' AND e.seq >= ? AND e.seq <= ?
               AND m.status = 'finished' AND +m.seq IS NULL ORDER BY m.id""",
            (ladder, since, last),
        ):
            games[row["event_id"]].append(game_from_row(row))
            event_ids[row["event_id"]].update(ids.get(row["id"], {}))
    for eid, row in events.items():
        units.append((row["seq"], RatedUnit(
            ladder=ladder, seq=row["seq"], at=row["closed_at"], games=tuple(games[eid]),
            player_ids=event_ids[eid], event_id=eid,
        )))
    units.sort(key=lambda u: u[0])
    return [u for _, u in units]


async def event_unit(reader: Reader, ladder: str, event_id: int, seq: int, at: str) -> RatedUnit:
    """One closing event's unit, read without loading the rest of the ladder's log."""
    rows = await reader.fetchall(
        """SELECT * FROM matches WHERE event_id = ? AND status = 'finished' AND +seq IS NULL
           ORDER BY id""", (event_id,))
    games = [game_from_row(row) for row in rows]
    # CROSS JOIN fixes the order: from the event's games (indexed) to their players.
    ids: dict[str, int] = {}
    for row in await reader.fetchall(
        """SELECT p.id, p.name FROM matches m CROSS JOIN match_players mp
           CROSS JOIN players p
           WHERE m.event_id = ? AND m.status = 'finished' AND +m.seq IS NULL
           AND mp.match_id = m.id AND p.id = mp.player_id""", (event_id,)
    ):
        ids[row[1]] = row[0]
    return RatedUnit(ladder=ladder, seq=seq, at=at, games=tuple(games), player_ids=ids,
                     event_id=event_id)


async def event_games(reader: Reader, ladder: str) -> list[tuple[str, str, int, int]]:
    """Every rated game of a ladder's closed events, in the order they were rated.

    The same games, in the same order, as :func:`ladder_units` yields: event
    by event in closing order, each read through the event index (a single
    query would sort the whole history). A whole-history system (ČAS's Peklo)
    reloads from it.
    """
    events = [row[0] for row in await reader.fetchall(
        "SELECT id FROM events WHERE ladder = ? AND status = 'closed' AND seq IS NOT NULL "
        "ORDER BY seq", (ladder,))]
    out: list[tuple[str, str, int, int]] = []
    for event_id in events:
        for a, b, sa, sb, winner in await reader.fetchall(
            """SELECT side_a, side_b, score_a, score_b, winner FROM matches
               WHERE event_id = ? AND status = 'finished' AND +seq IS NULL
               AND unrated_reason IS NULL ORDER BY id""", (event_id,)
        ):
            if sa is None or sb is None:
                sa, sb = {"a": (1, 0), "b": (0, 1)}.get(winner, (0, 0))
            out.append((a, b, sa, sb))
    return out


class SqliteLog:
    """The log as a plugin reads it (``server.api.LogReader``), through one reader."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader

    async def units(self, ladder: str, since: int = 0, until: int | None = None
                    ) -> list[RatedUnit]:
        return await ladder_units(self.reader, ladder, since, until)

    async def event_games(self, ladder: str) -> list[tuple[str, str, int, int]]:
        return await event_games(self.reader, ladder)
