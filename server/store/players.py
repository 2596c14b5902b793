"""The players table: accounts and password-less ladder entries."""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx, in_id_order


async def create(tx: WriteTx, name: str, password_hash: str | None, role: str, at: str) -> int:
    """Insert an account (or a password-less ladder entry); its id."""
    await in_id_order(tx, "players")
    row = await tx.fetchone(
        "INSERT INTO players (name, name_key, password_hash, role, created_at) "
        "VALUES (?, ?, ?, ?, ?) RETURNING id",
        (name, name.casefold(), password_hash, role, at))
    assert row is not None
    return int(row[0])


async def find_in(tx: WriteTx, name: str) -> tuple[int, str] | None:
    """A player as this transaction sees them (an earlier job of it may have created them)."""
    row = await tx.fetchone("SELECT id, name FROM players WHERE name_key = ?",
                            (name.casefold(),))
    return None if row is None else (int(row[0]), str(row[1]))


async def logged_in(tx: WriteTx, player_id: int, at: str) -> None:
    await tx.later("UPDATE players SET last_login = ? WHERE id = ?", (at, player_id))


async def dropped(tx: WriteTx, player_id: int) -> None:
    await tx.later("UPDATE players SET dropped = dropped + 1 WHERE id = ?", (player_id,))


async def all_players(db: Reads) -> list[Any]:
    return await db.fetchall("SELECT * FROM players")


async def since(db: Reads, top: int) -> list[Any]:
    """The accounts made after the one numbered ``top``, oldest first."""
    return await db.fetchall("SELECT * FROM players WHERE id > ? ORDER BY id", (top,))


async def by_name(db: Reads, name: str) -> Any | None:
    """The account as stored now (``matchlobby user add`` may have changed it meanwhile)."""
    return await db.fetchone("SELECT * FROM players WHERE name_key = ?", (name.casefold(),))


async def counted(db: Reads, player_id: int) -> Any | None:
    """The account's ``dropped`` and ``last_login`` as committed (another node may have
    changed them)."""
    return await db.fetchone_soon("SELECT dropped, last_login FROM players WHERE id = ?",
                                  (player_id,))


async def record(db: Reads, player_id: int) -> tuple[int, int, dict[str, dict[str, int]]]:
    """Matches a player finished and had disputed, and each ladder's won, lost and drawn of
    them (event games included): one indexed read of their matches, on the event loop's
    thread on SQLite (``whois`` never waits behind another command's read)."""
    rows = await db.fetchall_soon(
        """SELECT m.ladder, count(CASE WHEN m.status = 'finished' THEN 1 END),
                  count(CASE WHEN m.disputed = 1 THEN 1 END),
                  count(CASE WHEN m.status = 'finished' AND m.winner = mp.side THEN 1 END),
                  count(CASE WHEN m.status = 'finished' AND m.winner IN ('a', 'b')
                             AND m.winner <> mp.side THEN 1 END),
                  count(CASE WHEN m.status = 'finished' AND m.winner = 'draw' THEN 1 END)
           FROM match_players mp JOIN matches m ON m.id = mp.match_id WHERE mp.player_id = ?
           GROUP BY m.ladder ORDER BY m.ladder""",
        (player_id,))
    ladders = {str(r[0]): {"won": int(r[3]), "lost": int(r[4]), "drawn": int(r[5])}
               for r in rows if r[1]}
    return sum(int(r[1]) for r in rows), sum(int(r[2]) for r in rows), ladders
