"""Talk's tables: the latest shouts, who blocks whom, who is muted.

They live in the database, not in a node's memory, so that every node of a shared database
reads the same: a block made on one node holds on every other at once.
"""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx


async def shout(tx: WriteTx, at: str, name: str, text: str, keep: int) -> int:
    """Keep a shout and forget all but the latest ``keep``; its id."""
    row = await tx.fetchone("INSERT INTO shouts (at, name, text) VALUES (?, ?, ?) RETURNING id",
                            (at, name, text))
    assert row is not None
    await tx.execute("DELETE FROM shouts WHERE id NOT IN "
                     "(SELECT id FROM shouts ORDER BY id DESC LIMIT ?)", (keep,))
    return int(row[0])


async def latest_shouts(db: Reads, count: int) -> list[dict[str, Any]]:
    """The latest ``count`` shouts, oldest first."""
    rows = await db.fetchall("SELECT id, at, name, text FROM shouts ORDER BY id DESC LIMIT ?",
                             (count,))
    return [{"id": int(r[0]), "at": r[1], "from": r[2], "text": r[3]} for r in reversed(rows)]


async def block(tx: WriteTx, blocker: int, blocked: int) -> None:
    await tx.execute("INSERT INTO blocks (blocker_id, blocked_id) VALUES (?, ?) "
                     "ON CONFLICT (blocker_id, blocked_id) DO NOTHING", (blocker, blocked))


async def unblock(tx: WriteTx, blocker: int, blocked: int) -> bool:
    """Whether there was such a block."""
    row = await tx.fetchone("DELETE FROM blocks WHERE blocker_id = ? AND blocked_id = ? "
                            "RETURNING blocked_id", (blocker, blocked))
    return row is not None


async def blocks(db: Reads, blocker: int, blocked: int) -> bool:
    """Whether ``blocker`` blocks ``blocked``, as committed (by any node)."""
    row = await db.fetchone_soon("SELECT 1 FROM blocks WHERE blocker_id = ? AND blocked_id = ?",
                                 (blocker, blocked))
    return row is not None


async def blocked_by(db: Reads, blocker: int) -> list[str]:
    """The names ``blocker`` blocks, in alphabetical order."""
    rows = await db.fetchall("SELECT p.name FROM blocks b JOIN players p ON p.id = b.blocked_id "
                             "WHERE b.blocker_id = ? ORDER BY p.name_key", (blocker,))
    return [str(r[0]) for r in rows]


async def mute(tx: WriteTx, player: int, until: str | None, by: int, at: str) -> None:
    await tx.execute("INSERT INTO mutes (player_id, until, by_player, at) VALUES (?, ?, ?, ?) "
                     "ON CONFLICT (player_id) DO UPDATE SET until = excluded.until, "
                     "by_player = excluded.by_player, at = excluded.at",
                     (player, until, by, at))


async def unmute(tx: WriteTx, player: int) -> bool:
    """Whether the player had a mute (ended or not)."""
    row = await tx.fetchone("DELETE FROM mutes WHERE player_id = ? RETURNING player_id",
                            (player,))
    return row is not None


async def muted(db: Reads, player: int, now: str) -> tuple[bool, str | None]:
    """Whether ``player`` is muted at ``now``, and until when (``None``: until unmuted)."""
    row = await db.fetchone_soon("SELECT until FROM mutes WHERE player_id = ?", (player,))
    if row is None or (row[0] is not None and row[0] <= now):
        return False, None
    return True, row[0]
