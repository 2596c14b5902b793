"""The invitations table: on a database several nodes share, an invitation's row decides
whether an answer (join, decline) or a withdrawal comes first, whatever node each is sent
to. Every node keeps a copy in memory (:mod:`server.lobby.invitations`) for listings and
expiry; one node alone keeps only that."""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx
from server.store.matches import HELD_BY

HOLD_PLAYERS = "SELECT id FROM players WHERE id IN (?, ?) ORDER BY id FOR UPDATE"
LIVE_PLAYER = f"SELECT 1 FROM {HELD_BY} WHERE lp.player_id IN (?, ?)"


async def put(tx: WriteTx, invitee_key: str, inviter_key: str, ladder: str,
              length: int | None, expires_at: str | None) -> None:
    """The invitation from ``inviter_key`` to ``invitee_key``, replacing a standing one."""
    await tx.execute(
        "INSERT INTO invitations (invitee_key, inviter_key, ladder, length, expires_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (invitee_key, inviter_key) DO UPDATE SET "
        "ladder = excluded.ladder, length = excluded.length, expires_at = excluded.expires_at",
        (invitee_key, inviter_key, ladder, length, expires_at))


async def find(db: Reads, invitee_key: str, inviter_key: str) -> Any | None:
    """The invitation as committed (``ladder``, ``length``, ``expires_at``), if it stands."""
    return await db.fetchone_soon(
        "SELECT ladder, length, expires_at FROM invitations WHERE invitee_key = ? AND "
        "inviter_key = ?", (invitee_key, inviter_key))


async def take(tx: WriteTx, invitee_key: str, inviter_key: str) -> Any | None:
    """Remove the invitation; what it was (``None``: answered or withdrawn already)."""
    return await tx.fetchone(
        "DELETE FROM invitations WHERE invitee_key = ? AND inviter_key = ? "
        "RETURNING ladder, length, expires_at", (invitee_key, inviter_key))


async def drop(tx: WriteTx, sent_by: str | None = None, received_by: str | None = None) -> None:
    """Every invitation ``sent_by`` one player and every one ``received_by`` one."""
    if sent_by is not None:
        await tx.execute("DELETE FROM invitations WHERE inviter_key = ?", (sent_by,))
    if received_by is not None:
        await tx.execute("DELETE FROM invitations WHERE invitee_key = ?", (received_by,))


async def playing(tx: WriteTx, a: int, b: int) -> bool:
    """Whether either player (by id) plays a live match (a disputed one, waiting for an
    admin, holds nobody), as this transaction sees it; both
    players are held until the commit (in id order), so two joins naming one player on two
    servers go one after the other."""
    if tx.backend == "postgresql":  # one round trip: the lock, then the count
        return await tx.rows([(HOLD_PLAYERS, (a, b)), (LIVE_PLAYER, (a, b))]) > 0
    return await tx.fetchone(LIVE_PLAYER, (a, b)) is not None
