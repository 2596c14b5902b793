"""The players table: accounts and password-less ladder entries."""

from __future__ import annotations

from typing import Any

from server.store.handle import Reads, WriteTx


async def create(tx: WriteTx, name: str, password_hash: str | None, role: str, at: str) -> int:
    """Insert an account (or a password-less ladder entry); its id."""
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


async def by_name(db: Reads, name: str) -> Any | None:
    """The account as stored now (``matchlobby user add`` may have changed it meanwhile)."""
    return await db.fetchone("SELECT * FROM players WHERE name_key = ?", (name.casefold(),))


async def match_counts(db: Reads, player_id: int) -> tuple[int, int]:
    """Matches a player finished and had disputed (a small indexed read)."""
    row = await db.fetchone_soon(
        """SELECT count(CASE WHEN m.status = 'finished' THEN 1 END),
                  count(CASE WHEN m.disputed = 1 THEN 1 END)
           FROM match_players mp JOIN matches m ON m.id = mp.match_id WHERE mp.player_id = ?""",
        (player_id,))
    return (int(row[0]), int(row[1])) if row else (0, 0)


async def records(db: Reads, player_id: int) -> dict[str, dict[str, int]]:
    """Each ladder's finished matches and event games of a player: won, lost, drawn."""
    rows = await db.fetchall(
        """SELECT m.ladder, count(CASE WHEN m.winner = mp.side THEN 1 END),
                  count(CASE WHEN m.winner IN ('a', 'b') AND m.winner <> mp.side THEN 1 END),
                  count(CASE WHEN m.winner = 'draw' THEN 1 END)
           FROM match_players mp JOIN matches m ON m.id = mp.match_id
           WHERE mp.player_id = ? AND m.status = 'finished' GROUP BY m.ladder ORDER BY m.ladder""",
        (player_id,))
    return {str(r[0]): {"won": int(r[1]), "lost": int(r[2]), "drawn": int(r[3])} for r in rows}
