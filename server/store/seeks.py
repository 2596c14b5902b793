"""The seeks table: the automatch pool, in the database so that every node pairs from the same
pool and no two nodes pair one player twice. A pass that pairs holds the pool's lock (on
PostgreSQL a transaction-level advisory lock; SQLite's one writer holds everything already)
and the players' rows, as a join does, until its commit."""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from server.store.handle import Reads, WriteTx
from server.store.matches import HELD_BY

POOL_LOCK = 0x6D6C736B  # "mlsk": one pairing pass at a time, whatever the node
POOL = """SELECT s.player_id, p.name, s.ladder, s.length, s.points, s.since, s.node
    FROM seeks s JOIN players p ON p.id = s.player_id"""


def stamp(at: float | None = None) -> str:
    """A seek's ``since``: UTC to the millisecond (the pool widens by the second or less)."""
    at = time.time() if at is None else at
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"


def seconds(since: str) -> float:
    """A ``since`` as seconds since the epoch."""
    return datetime.fromisoformat(since).timestamp()


def _marks(ids: Collection[int]) -> str:
    return ", ".join("?" for _ in ids)


async def hold_player(tx: WriteTx, player_id: int) -> None:
    """The player's row, held until the commit (PostgreSQL): a seek waits for a pass or a join
    holding the player, as they hold players before their seeks."""
    if tx.backend == "postgresql":
        await tx.fetchall("SELECT id FROM players WHERE id = ? FOR UPDATE", (player_id,))


async def hold_pool_lock(tx: WriteTx) -> None:
    """The pool's lock (PostgreSQL), until the commit: a seek made, replaced or withdrawn
    waits for a pass under way, and a pass that starts later reads it."""
    if tx.backend == "postgresql":
        await tx.execute(f"SELECT pg_advisory_xact_lock({POOL_LOCK})")


async def put(tx: WriteTx, player_id: int, ladder: str, length: int | None, points: int,
              since: str, node: str) -> Any | None:
    """The player's seek, replacing theirs if they had one; the one it replaced. The pool's
    lock first, then the player's row: a pass's order."""
    await hold_pool_lock(tx)
    await hold_player(tx, player_id)
    old = await drop(tx, player_id)
    await tx.execute("INSERT INTO seeks (player_id, ladder, length, points, since, node) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (player_id, ladder, length, points, since, node))
    return old


async def withdraw(tx: WriteTx, player_id: int) -> Any | None:
    """The player leaves the pool (``unseek``), under the pool's lock; what they sought."""
    await hold_pool_lock(tx)
    return await drop(tx, player_id)


async def drop(tx: WriteTx, player_id: int, node: str | None = None) -> Any | None:
    """Remove the player's seek (``node``: only one made on that node); what it was."""
    return await tx.fetchone(
        "DELETE FROM seeks WHERE player_id = ?" + ("" if node is None else " AND node = ?")
        + " RETURNING ladder, length, points, since",
        (player_id,) if node is None else (player_id, node))


async def drop_all(tx: WriteTx, ids: Collection[int]) -> None:
    """The seeks of ``ids``: on SQLite one statement a player, since SQLite runs ``player_id
    IN (…)`` through a temporary b-tree it builds at each run, dearer than the statement
    (every join runs this); on PostgreSQL one statement for all, each costing its backend."""
    if not ids:
        return
    if tx.backend == "postgresql":
        await tx.execute(f"DELETE FROM seeks WHERE player_id IN ({_marks(ids)})", tuple(ids))
    else:
        await tx.executemany("DELETE FROM seeks WHERE player_id = ?", [(i,) for i in ids])


async def drop_node(tx: WriteTx, node: str | None) -> None:
    """The seeks a node left (``None``: every seek; one process alone, starting)."""
    if node is None:
        await tx.execute("DELETE FROM seeks")
    else:
        await tx.execute("DELETE FROM seeks WHERE node = ?", (node,))


async def hold_pool(tx: WriteTx) -> list[Any]:
    """The whole pool, held until the commit: no other pass pairs from it meanwhile."""
    await hold_pool_lock(tx)
    return await tx.fetchall(POOL + " ORDER BY s.since, s.player_id")


async def pool(db: Reads) -> list[Any]:
    """The pool as committed."""
    return await db.fetchall(POOL + " ORDER BY s.ladder, s.since, s.player_id")


async def hold_players(tx: WriteTx, ids: Sequence[int]) -> None:
    """The players' rows, in id order as a join takes its two, until the commit."""
    if ids and tx.backend == "postgresql":
        await tx.fetchall(f"SELECT id FROM players WHERE id IN ({_marks(ids)}) ORDER BY id "
                          "FOR UPDATE", tuple(ids))


async def playing(tx: WriteTx, ids: Collection[int]) -> set[int]:
    """Those of ``ids`` who have a live match, as this transaction sees it."""
    if not ids:
        return set()
    rows = await tx.fetchall(
        f"SELECT lp.player_id FROM {HELD_BY} WHERE lp.player_id IN ({_marks(ids)})",
        tuple(ids))
    return {r[0] for r in rows}


async def blocked(tx: WriteTx | Reads, ids: Collection[int]) -> set[frozenset[int]]:
    """The pairs of ``ids`` of whom one blocks the other (in a transaction, or as committed)."""
    if len(ids) < 2:
        return set()
    marks = _marks(ids)
    rows = await tx.fetchall(f"SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id IN "
                             f"({marks}) AND blocked_id IN ({marks})", (*ids, *ids))
    return {frozenset((r[0], r[1])) for r in rows}
