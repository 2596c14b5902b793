"""The account_changes table: what changed about an account, appended in the change's transaction.

A new password, a new role or a logout everywhere must reach every open login
of the account, on every server sharing the database, whichever process made
the change (``matchlobby user add`` is another process). Each server reads the
rows after the last one it has seen (:func:`since`); a login remembers the
account's latest change it saw (:func:`account_in`), so a change made before it
does not end it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.api import Tx
from server.store.handle import Reads, in_id_order

PASSWORD = "password"
ROLE = "role"
LOGOUT_ALL = "logout_all"
LOGOUT_OTHERS = "logout_others"
BAN = "ban"
UNBAN = "unban"
CREATED = "created"
KINDS = (PASSWORD, ROLE, LOGOUT_ALL, LOGOUT_OTHERS, BAN, UNBAN, CREATED)
ENDS_LOGINS = frozenset({PASSWORD, ROLE, LOGOUT_ALL, LOGOUT_OTHERS, BAN})
"""The kinds of change that end the account's open logins (an unban or a new account has
none to end)."""


async def changed(tx: Tx, player_id: int, kinds: Sequence[str], by: int | None, at: str,
                  keep: str | None = None, by_name: str | None = None,
                  detail: str | None = None) -> tuple[int, int]:
    """Record ``kinds`` of change to an account and end its session tokens (all of them, or all
    but the token hash ``keep``): every one of its logins must authenticate again. Returns the
    last change's id and how many tokens ended."""
    if keep is None:
        ended = await tx.fetchall("DELETE FROM sessions WHERE player_id = ? RETURNING 1",
                                  (player_id,))
    else:
        ended = await tx.fetchall("DELETE FROM sessions WHERE player_id = ? AND token_hash <> ? "
                                  "RETURNING 1", (player_id, keep))
    last = 0
    for kind in kinds:
        last = await record(tx, player_id, kind, by, at, by_name,
                            detail if kind == ROLE else None)
    return last, len(ended)


async def record(tx: Tx, player_id: int, kind: str, by: int | None, at: str,
                 by_name: str | None = None, detail: str | None = None,
                 reason: str | None = None) -> int:
    """Append one change (``by``: the admin's account, ``by_name``: who, in words; ``detail``:
    the new role or the ban's end); its id. Tokens are the caller's business."""
    assert kind in KINDS, kind
    await in_id_order(tx, "account_changes")
    row = await tx.fetchone(
        "INSERT INTO account_changes (player_id, kind, by_player, at, by_name, detail, reason) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (player_id, kind, by, at, by_name, detail, reason))
    assert row is not None
    await notify(tx)
    return int(row[0])


async def notify(tx: Tx) -> None:
    """On PostgreSQL, wake every node's account watch at this transaction's commit (one
    notification a transaction, however often it is asked); SQLite's watch notices the commit."""
    if getattr(tx, "backend", "") == "postgresql":
        from server.store.pg.feed import ACCOUNTS_CHANGED
        from server.store.pg.port import FEED_CHANNEL

        await tx.execute(f"SELECT pg_notify('{FEED_CHANNEL}', '{ACCOUNTS_CHANGED}')")


async def account_in(tx: Tx, player_id: int) -> tuple[str | None, str, int] | None:
    """The account as this transaction sees it: its password hash, its role and its latest
    change (0: none); what a login made in this transaction is made against."""
    row = await tx.fetchone(
        "SELECT p.password_hash, p.role, (SELECT coalesce(max(c.id), 0) FROM account_changes c "
        "WHERE c.player_id = p.id) FROM players p WHERE p.id = ?", (player_id,))
    return None if row is None else (row[0], str(row[1]), int(row[2]))


async def latest(db: Reads) -> int:
    """The latest change to any account (0: none): where a server starts reading."""
    row = await db.fetchone("SELECT coalesce(max(id), 0) FROM account_changes")
    return 0 if row is None else int(row[0])


async def since(db: Reads, last: int) -> list[Any]:
    """The changes after ``last``, oldest first: id, player_id, kind, and the account's
    name, role and password hash as they are now, then the change's detail and reason."""
    return await db.fetchall(
        "SELECT c.id, c.player_id, c.kind, p.name, p.role, p.password_hash, c.detail, c.reason "
        "FROM account_changes c JOIN players p ON p.id = c.player_id "
        "WHERE c.id > ? ORDER BY c.id", (last,))
