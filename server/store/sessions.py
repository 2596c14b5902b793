"""The sessions table: resumable logins, each kept as its token's SHA-256 hash only."""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx

FIND = """SELECT s.player_id, s.expires_at, p.name FROM sessions s
    JOIN players p ON p.id = s.player_id WHERE s.token_hash = ?"""


async def create(tx: WriteTx, token_hash: str, player_id: int, created_at: str,
                 expires_at: str, cap: int = 0) -> int:
    """A new session; the account's sessions that have ended go with it, and beyond ``cap``
    sessions (0: no cap) its oldest others. Returns how many others the account keeps."""
    await tx.later("DELETE FROM sessions WHERE player_id = ? AND expires_at <= ?",
                   (player_id, created_at))
    await tx.later("INSERT INTO sessions (token_hash, player_id, created_at, expires_at) "
                   "VALUES (?, ?, ?, ?)", (token_hash, player_id, created_at, expires_at))
    row = await tx.fetchone("SELECT count(*) FROM sessions WHERE player_id = ?", (player_id,))
    others = (int(row[0]) if row else 1) - 1
    if cap > 0 and others >= cap:
        # created_at has whole seconds: ties go by hash, an order as good as any
        await tx.execute(
            "DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions "
            "WHERE player_id = ? AND token_hash <> ? ORDER BY created_at, token_hash LIMIT ?)",
            (player_id, token_hash, others - cap + 1))
        others = cap - 1
    return others


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
