"""The events table, and an event's games and standings a page at a time."""

from __future__ import annotations

from typing import Any

from server.api import Game, RatedUnit
from server.store.handle import Reads, WriteTx
from server.store.log import game_from_row
from server.store.matches import locking

# An event's standings, whole: ?1 the event. They count its finished, rated games: a win 1
# point, a draw ½, for each player of a side; best first, ties by name ignoring case. This
# reads every game of the event (tens of milliseconds for 10,000): `event show` keeps the
# result per version of the event (server/lobby/standings.py).
STANDINGS = """SELECT p.name AS player, count(*) AS played,
    count(CASE WHEN m.winner = mp.side THEN 1 END) AS won,
    count(CASE WHEN m.winner = 'draw' THEN 1 END) AS drawn,
    count(CASE WHEN m.winner IS DISTINCT FROM mp.side AND m.winner IS DISTINCT FROM 'draw'
          THEN 1 END) AS lost,
    CAST(count(CASE WHEN m.winner = mp.side THEN 1 END)
         + 0.5 * count(CASE WHEN m.winner = 'draw' THEN 1 END) AS DOUBLE PRECISION) AS points
    FROM matches m JOIN match_players mp ON mp.match_id = m.id
    JOIN players p ON p.id = mp.player_id
    WHERE m.event_id = ?1 AND m.status = 'finished' AND m.unrated_reason IS NULL
    GROUP BY p.id ORDER BY points DESC, p.name_key"""
GAME_COUNT = "SELECT count(*) FROM matches WHERE event_id = ?"
# A page of the games: ?1 the event, ?2 the page's size, ?3 the games before it. The rows
# skipped are counted in the index alone; only the page's rows are read from the table.
GAMES = """SELECT id, side_a, side_b, score_a, score_b, length, played_on, status, unrated_reason
    FROM matches WHERE id IN (SELECT id FROM matches WHERE event_id = ?1 ORDER BY id
    LIMIT ?2 OFFSET ?3) ORDER BY id"""
LISTING = """SELECT e.*, (SELECT count(*) FROM matches m WHERE m.event_id = e.id
    AND m.status = 'finished') AS games FROM events e"""


async def create(tx: WriteTx, name: str, ladder: str, day: str, at: str) -> int:
    row = await tx.fetchone(
        "INSERT INTO events (name, ladder, date, status, created_at) VALUES (?, ?, ?, 'open', ?) "
        "RETURNING id", (name, ladder, day, at))
    assert row is not None
    return int(row[0])


async def get(db: Reads, event_id: int) -> Any | None:
    return await db.fetchone("SELECT * FROM events WHERE id = ?", (event_id,))


async def is_open(tx: WriteTx, event_id: int) -> bool:
    """Whether the event still takes results, as this transaction sees it, the event held
    until the commit (a result and a close on two servers go one after the other)."""
    row = await tx.fetchone("SELECT status FROM events WHERE id = ?" + locking(tx), (event_id,))
    return row is not None and row[0] == "open"


async def close(tx: WriteTx, event_id: int, at: str, seq: int | None) -> None:
    """Closed now; with ``seq``, rated as a unit in that place of the rating order."""
    await tx.execute("UPDATE events SET status = 'closed', closed_at = ?, seq = ?, "
                     "version = version + 1 WHERE id = ?", (at, seq, event_id))


async def results_changed(tx: WriteTx, event_id: int) -> None:
    """The event's results change in this transaction: its version moves on."""
    await tx.execute("UPDATE events SET version = version + 1 WHERE id = ?", (event_id,))


async def versions(db: Reads) -> tuple[int, int]:
    """How many events there are and their versions summed: any change to the events (a new
    one, a result, a correction, a close) moves this on, as none is ever removed."""
    row = await db.fetchone("SELECT count(*), coalesce(sum(version), 0) FROM events")
    return (0, 0) if row is None else (int(row[0]), int(row[1]))


async def listing(db: Reads, status: str | None) -> list[Any]:
    if status:
        return await db.fetchall(LISTING + " WHERE e.status = ? ORDER BY e.id", (status,))
    return await db.fetchall(LISTING + " ORDER BY e.id")


async def standings(db: Reads, event_id: int) -> tuple[int, list[Any]]:
    """How many games the event holds, and its whole standings."""
    counted = await db.fetchone(GAME_COUNT, (event_id,))
    return (0 if counted is None else int(counted[0])), await db.fetchall(STANDINGS, (event_id,))


async def games(db: Reads, event_id: int, size: int, skip: int) -> list[Any]:
    """A page of the event's games, in the order they were recorded."""
    return await db.fetchall(GAMES, (event_id, size, skip))


async def unit(tx: WriteTx, ladder: str, event_id: int, seq: int, at: str) -> RatedUnit:
    """A closing event's games as one unit, read without the rest of the ladder's log."""
    games: list[Game] = [game_from_row(row) for row in await tx.fetchall(
        """SELECT * FROM matches WHERE event_id = ? AND status = 'finished' AND +seq IS NULL
           ORDER BY id""", (event_id,))]
    # CROSS JOIN fixes the order: from the event's games (indexed) to their players.
    ids = {row[1]: row[0] for row in await tx.fetchall(
        """SELECT p.id, p.name FROM matches m CROSS JOIN match_players mp
           CROSS JOIN players p
           WHERE m.event_id = ? AND m.status = 'finished' AND +m.seq IS NULL
           AND mp.match_id = m.id AND p.id = mp.player_id""", (event_id,))}
    return RatedUnit(ladder=ladder, seq=seq, at=at, games=tuple(games), player_ids=ids,
                     event_id=event_id)
