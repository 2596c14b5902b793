"""The matches table: live matches from the invitation on, event results, corrections."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.store.handle import Reads, WriteTx

NEW_LIVE = """INSERT INTO matches (id, ladder, side_a, side_b, length, played_on, status,
    created_at) VALUES (?, ?, ?, ?, ?, ?, 'playing', ?)"""
SIDES = "INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)"
# Who plays a live match. A row is read only with its match's status (a row a server of an
# older version left behind, or one missed, holds nobody), replaced when its player starts
# another match, and the table is brought in line with the statuses when a server starts.
LIVE_PLAYERS = ("INSERT INTO live_players (player_id, match_id) VALUES (?, ?) "
                "ON CONFLICT (player_id) DO UPDATE SET match_id = excluded.match_id")
NOT_LIVE = "DELETE FROM live_players WHERE match_id = ?"
LIVE = "('playing', 'claimed')"  # a disputed match waits for an admin and holds nobody
HELD_BY = f"live_players lp JOIN matches m ON m.id = lp.match_id AND m.status IN {LIVE}"
FINISHED = """UPDATE matches SET status = 'finished', winner = ?, score_a = ?, score_b = ?,
    how = ?, seq = ?, finished_at = ?, played_on = ? WHERE id = ?"""
NEW_RESULT = """INSERT INTO matches (id, ladder, event_id, side_a, side_b, length, played_on,
    status, winner, score_a, score_b, how, unrated_reason, seq, created_at, finished_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, 'finished', ?, ?, ?, 'event', ?, ?, ?, ?)"""


async def start_live(tx: WriteTx, ladder: str, a: tuple[str, int], b: tuple[str, int],
                     length: int | None, played_on: str, at: str) -> int:
    """A live match between ``a`` and ``b`` (name, player id), playing from now; its id."""
    mid = await tx.next_match_id()
    await tx.later(NEW_LIVE, (mid, ladder, a[0], b[0], length, played_on, at))
    await tx.executemany(SIDES, [(mid, a[1], "a"), (mid, b[1], "b")])
    await tx.executemany(LIVE_PLAYERS, [(a[1], mid), (b[1], mid)])
    return mid


async def finish(tx: WriteTx, match_id: int, winner: str, scores: tuple[int | None, int | None],
                 how: str, seq: int | None, at: str, played_on: str) -> None:
    await tx.later(FINISHED, (winner, scores[0], scores[1], how, seq, at, played_on, match_id))
    await tx.later(NOT_LIVE, (match_id,))


async def claimed(tx: WriteTx, match_id: int, by: str,
                  scores: tuple[int | None, int | None]) -> None:
    await tx.execute("UPDATE matches SET status = 'claimed', claimed_by = ?, score_a = ?, "
                     "score_b = ? WHERE id = ?", (by, scores[0], scores[1], match_id))


async def disputed(tx: WriteTx, match_id: int, at: str) -> None:
    await tx.execute("UPDATE matches SET status = 'disputed', disputed = 1, disputed_at = ? "
                     "WHERE id = ?", (at, match_id))
    await tx.later(NOT_LIVE, (match_id,))


async def aborted(tx: WriteTx, match_id: int, at: str) -> None:
    await tx.execute("UPDATE matches SET status = 'aborted', how = 'abort', finished_at = ? "
                     "WHERE id = ?", (at, match_id))
    await tx.later(NOT_LIVE, (match_id,))


async def record_result(tx: WriteTx, ladder: str, event_id: int, side_a: Sequence[str],
                        side_b: Sequence[str], scores: tuple[int, int], length: int | None,
                        played_on: str, winner: str, unrated: str | None, seq: int | None,
                        at: str, ids: dict[str, int]) -> int:
    """An event's result, finished as it is recorded; its id."""
    mid = await tx.next_match_id()
    await tx.execute(NEW_RESULT, (mid, ladder, event_id, "+".join(side_a), "+".join(side_b),
                                  length, played_on, winner, scores[0], scores[1], unrated, seq,
                                  at, at))
    await tx.executemany(SIDES, [(mid, ids[p], "a") for p in side_a]
                         + [(mid, ids[p], "b") for p in side_b])
    return mid


async def live(db: Reads) -> list[Any]:
    """The matches still being played or decided (at start)."""
    return await db.fetchall(
        "SELECT * FROM matches WHERE status IN ('playing', 'claimed', 'disputed')")


async def disputed_all(db: Reads) -> list[Any]:
    """The disputed matches waiting for an admin, oldest first, as committed."""
    return await db.fetchall("SELECT * FROM matches WHERE status = 'disputed' ORDER BY id")


def locking(tx: WriteTx, of: str = "") -> str:
    """What makes a read lock the rows it reads until the commit, where writers share the
    database (PostgreSQL's ``FOR UPDATE``); SQLite's one writer holds everything already."""
    return f" FOR UPDATE{of}" if tx.backend == "postgresql" else ""


async def still_in(tx: WriteTx, match_id: int, statuses: Sequence[str],
                   claimed_by: str | None = None) -> bool:
    """Whether the match is in one of ``statuses`` (and claimed by ``claimed_by``) as this
    transaction sees it, the row then held until the commit; counted (the job reads no row of
    it, so on PostgreSQL it goes in the round trip of the job's queued writes)."""
    sql = (f"SELECT 1 FROM matches WHERE id = ? AND status IN ({', '.join('?' * len(statuses))})"
           + (" AND claimed_by = ?" if claimed_by is not None else "") + locking(tx))
    params = (match_id, *statuses, *(() if claimed_by is None else (claimed_by,)))
    return await tx.rows([(sql, params)]) > 0


async def state_in(tx: WriteTx, match_id: int) -> Any | None:
    """A match's ``status`` and ``claimed_by`` as this transaction sees them, the row held
    until the commit: the command that reads it decides, and another waits for it."""
    return await tx.fetchone("SELECT status, claimed_by FROM matches WHERE id = ?"
                             + locking(tx), (match_id,))


async def played_on_ladder(tx: WriteTx, player_ids: Sequence[int], ladder: str) -> set[int]:
    """Which of the players have a match on ``ladder`` (any, live or recorded), as this
    transaction sees it: one query for a whole results file, not one a player."""
    found: set[int] = set()
    for start in range(0, len(player_ids), 500):
        chunk = player_ids[start:start + 500]
        rows = await tx.fetchall(
            "SELECT DISTINCT mp.player_id FROM match_players mp JOIN matches m "
            f"ON m.id = mp.match_id WHERE m.ladder = ? AND mp.player_id IN "
            f"({', '.join('?' * len(chunk))})", (ladder, *chunk))
        found.update(int(r[0]) for r in rows)
    return found


async def live_of(db: Reads, player_id: int) -> Any | None:
    """The live match ``player_id`` plays (played or claimed: a disputed one waits for an
    admin and holds nobody), as committed (none: ``None``)."""
    return await db.fetchone_soon(f"SELECT m.* FROM {HELD_BY} WHERE lp.player_id = ?",
                                  (player_id,))


async def keep_live_players(tx: WriteTx) -> None:
    """``live_players`` made to say what the matches' statuses say (at start: a server of
    the version before the table, sharing the database, changed statuses without it)."""
    await tx.execute("DELETE FROM live_players WHERE NOT EXISTS (SELECT 1 FROM matches m "
                     f"WHERE m.id = live_players.match_id AND m.status IN {LIVE})")
    await tx.execute(
        "INSERT INTO live_players (player_id, match_id) SELECT mp.player_id, max(m.id) "
        f"FROM match_players mp JOIN matches m ON m.id = mp.match_id WHERE m.status IN {LIVE} "
        "GROUP BY mp.player_id ON CONFLICT (player_id) DO NOTHING")


async def get(db: Reads, match_id: int) -> Any | None:
    return await db.fetchone("SELECT * FROM matches WHERE id = ?", (match_id,))


WITH_EVENT = """SELECT m.*, e.status AS event_status, e.seq AS event_seq FROM matches m
    LEFT JOIN events e ON e.id = m.event_id WHERE m.id = ?"""


async def with_event(db: Reads, match_id: int) -> Any | None:
    """A match with its event's status and place in the rating order (``event_status``,
    ``event_seq``), as committed."""
    return await db.fetchone(WITH_EVENT, (match_id,))


async def with_event_in(tx: WriteTx, match_id: int) -> Any | None:
    """The same, as this transaction sees it, its event and then the match held until the
    commit (a close and a correction on two servers go one after the other, in the order a
    close and a result take them): what a correction decides on."""
    if tx.backend == "postgresql":
        await tx.fetchall("SELECT id FROM events WHERE id = (SELECT event_id FROM matches "
                          "WHERE id = ?) FOR UPDATE", (match_id,))
    return await tx.fetchone(WITH_EVENT + locking(tx, " OF m"), (match_id,))


async def corrected(tx: WriteTx, match_id: int, kind: str, old: tuple[str, str | None],
                    new: tuple[str, str | None], reason: str | None, by: int, at: str,
                    swap_scores: bool) -> None:
    """A correction appended to the log, and the match changed as it says."""
    await tx.execute(
        """INSERT INTO corrections (match_id, kind, old_status, old_winner, new_status,
           new_winner, reason, by_player, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (match_id, kind, old[0], old[1], new[0], new[1], reason, by, at))
    if swap_scores:
        await tx.execute("UPDATE matches SET score_a = score_b, score_b = score_a WHERE id = ?",
                         (match_id,))
    await tx.execute("UPDATE matches SET status = ?, winner = ? WHERE id = ?",
                     (new[0], new[1], match_id))
    await tx.later(NOT_LIVE, (match_id,))  # a correction leaves no match live
    # an event's game: the event's results changed (server/store/events.py)
    await tx.execute("UPDATE events SET version = version + 1 WHERE id = "
                     "(SELECT event_id FROM matches WHERE id = ?)", (match_id,))
