"""The players table: accounts and password-less ladder entries."""

from __future__ import annotations

from typing import Any

from server.store import account_changes
from server.store.handle import Reads, WriteTx, in_id_order


async def create(tx: WriteTx, name: str, password_hash: str | None, role: str, at: str) -> int:
    """Insert an account (or a password-less ladder entry); its id."""
    await in_id_order(tx, "players")
    row = await tx.fetchone(
        "INSERT INTO players (name, name_key, password_hash, role, created_at) "
        "VALUES (?, ?, ?, ?, ?) RETURNING id",
        (name, name.casefold(), password_hash, role, at))
    assert row is not None
    if password_hash is not None:  # an account other nodes must know to invite it
        await account_changes.notify(tx)
    return int(row[0])


async def find_in(tx: WriteTx, name: str, hold: bool = False) -> tuple[int, str] | None:
    """A player as this transaction sees them (an earlier job of it may have created them).
    ``hold``: on PostgreSQL the row stays until the commit (FOR KEY SHARE: a ``player remove``
    on another server waits, or is waited for and then the name is not found)."""
    lock = " FOR KEY SHARE" if hold and tx.backend == "postgresql" else ""
    row = await tx.fetchone(f"SELECT id, name FROM players WHERE name_key = ?{lock}",
                            (name.casefold(),))
    return None if row is None else (int(row[0]), str(row[1]))


async def remove_entry(tx: WriteTx, name: str) -> tuple[int, str] | str:
    """Delete a password-less ladder entry that no result but voided ones names, with its
    links to those voided matches and the blocks and mute naming it; its id and name, or why
    not (a sentence). The row is held first (FOR UPDATE on PostgreSQL): a result naming it
    on another server waits, or is waited for and then seen."""
    row = await tx.fetchone("SELECT id, name, password_hash, role FROM players WHERE name_key = ?"
                            + (" FOR UPDATE" if tx.backend == "postgresql" else ""),
                            (name.casefold(),))
    if row is None:
        return ""
    pid, shown = int(row[0]), str(row[1])
    if row[2] is not None or row[3] != "player":
        return f"{shown} has an account; only a name entered with results can be removed."
    live = await tx.fetchone(
        "SELECT count(*) FROM match_players mp JOIN matches m ON m.id = mp.match_id "
        "WHERE mp.player_id = ? AND m.status <> 'voided'", (pid,))
    if live is not None and int(live[0]):
        return (f"{shown} still has {int(live[0])} result{'s' if int(live[0]) != 1 else ''}; "
                "remove (void) them first.")
    rated = await tx.fetchone("SELECT (SELECT count(*) FROM ratings WHERE player_id = ?) + "
                              "(SELECT count(*) FROM history WHERE player_id = ?)", (pid, pid))
    if rated is not None and int(rated[0]):
        return f"{shown} has a rating history; only a name that was never rated can be removed."
    await tx.execute("DELETE FROM match_players WHERE player_id = ?", (pid,))
    await tx.execute("DELETE FROM blocks WHERE blocker_id = ? OR blocked_id = ?", (pid, pid))
    await tx.execute("DELETE FROM mutes WHERE player_id = ?", (pid,))
    await tx.execute("DELETE FROM players WHERE id = ?", (pid,))
    return pid, shown


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
