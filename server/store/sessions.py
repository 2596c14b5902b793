"""The sessions table: resumable logins, each kept as its token's SHA-256 hash only."""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx

FIND = """SELECT s.player_id, s.expires_at, p.name FROM sessions s
    JOIN players p ON p.id = s.player_id WHERE s.token_hash = ?"""
REVOKE_ALL = "DELETE FROM sessions WHERE player_id = ?"
"""Every session of one account (a new password ends them)."""


async def create(tx: WriteTx, token_hash: str, player_id: int, created_at: str,
                 expires_at: str) -> None:
    """A new session; the account's sessions that have ended go with it."""
    await tx.later("DELETE FROM sessions WHERE player_id = ? AND expires_at <= ?",
                   (player_id, created_at))
    await tx.later("INSERT INTO sessions (token_hash, player_id, created_at, expires_at) "
                   "VALUES (?, ?, ?, ?)", (token_hash, player_id, created_at, expires_at))


async def find(db: Reads, token_hash: str) -> Any | None:
    """The session's player id, expiry and player name, as committed (an indexed lookup)."""
    return await db.fetchone_soon(FIND, (token_hash,))


async def find_in(tx: WriteTx, token_hash: str) -> Any | None:
    """The same, as this transaction sees it (a revocation may have committed meanwhile)."""
    return await tx.fetchone(FIND, (token_hash,))


async def revoke(tx: WriteTx, token_hash: str) -> bool:
    """End one session; whether there was one."""
    return await tx.fetchone("DELETE FROM sessions WHERE token_hash = ? RETURNING player_id",
                             (token_hash,)) is not None


async def prune(tx: WriteTx, now: str) -> None:
    """Forget the sessions that have ended."""
    await tx.execute("DELETE FROM sessions WHERE expires_at <= ?", (now,))
