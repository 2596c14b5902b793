"""``matchlobby user``: the operator's account administration on the database.

Each change is one transaction on the database a running lobby shares: the account's row
(or its ban) and its ``account_changes`` row, which every running server follows within a
second (a new password or role ends the account's open login, a ban closes it). Arguments are
checked before anything is opened, so a refusal writes nothing; it is one line on standard
error and exit status 2.
"""

from __future__ import annotations

import getpass
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from server.accounts import MIN_PASSWORD, hash_password
from server.api import Store, Tx, valid_name
from server.api.text import REASON_MAX, clean_text
from server.config import Config
from server.plugins import open_database
from server.refused import Refused
from server.store import bans, now
from server.store.account_changes import CREATED, PASSWORD, ROLE, changed, record
from server.store.backends import is_postgres, shown
from server.store.dbcheck import check_database

ROLES = ("admin", "player")


def operator() -> str:
    """Who makes a change from the command line, as the record names it: ``cli:`` and the
    operating-system user."""
    try:
        return f"cli:{getpass.getuser()}"
    except (OSError, KeyError):
        return "cli"


def _checked_name(name: str) -> str:
    if not valid_name(name):
        raise Refused(f"{name!r} is not a valid name (1–20 of A-Z a-z 0-9 _ -)")
    return name


def _checked_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise Refused(f"the password needs at least {MIN_PASSWORD} characters")
    return password


def _checked_role(role: str) -> str:
    if role not in ROLES:
        raise Refused(f"{role!r} is not a role: admin or player")
    return role


async def _open(config: Config, create: bool = False) -> Store:
    """The configured database; an SQLite file that is not there is refused unless ``create``
    (``user add`` makes the first admin of a new lobby): a mistyped path or a forgotten
    ``--config`` would otherwise read or change a new, empty database."""
    if not is_postgres(config.database):
        if not create and not Path(config.database).exists():
            raise Refused(f"{config.database}: no such database file (give the lobby's "
                          "--config FILE, or --db)")
        await check_database(config.database, quick_check=config.startup_check == "quick")
    return await open_database(config)


async def _in_transaction(config: Config, job: Callable[[Tx], Awaitable[str]],
                          create: bool = False) -> str:
    store = await _open(config, create)
    try:
        return str(await store.transaction(job))
    finally:
        await store.close()


async def _account(tx: Tx, name: str) -> Any:
    """The account called ``name`` (ignoring case); refused if there is none."""
    row = await tx.fetchone("SELECT id, name, role, password_hash FROM players "
                            "WHERE name_key = ?", (name.casefold(),))
    if row is None:
        raise Refused(f"no account named {name!r}")
    if row["password_hash"] is None:
        raise Refused(f"{row['name']} is a name entered with results, not an account "
                      "(give it a password with `matchlobby user add`)")
    return row


def _ended(n: int) -> str:
    return f"; {n} of its sessions ended" if n else ""


async def add_user(config: Config, name: str, password: str, admin: bool) -> int:
    """``matchlobby user add``: its exit status (what it did is printed)."""
    return await _report("add", _add(config, name, password, admin))


async def _add(config: Config, name: str, password: str, admin: bool) -> str:
    _checked_name(name)
    hashed = hash_password(_checked_password(password), config.password)
    role = "admin" if admin else "player"
    who = operator()
    where = f" in {shown(config.database)}"

    async def job(tx: Tx) -> str:
        row = await tx.fetchone("SELECT id, name, role FROM players WHERE name_key = ?",
                                (name.casefold(),))
        at = now()
        if row is None:
            made = await tx.fetchone(
                "INSERT INTO players (name, name_key, password_hash, role, created_at) "
                "VALUES (?, ?, ?, ?, ?) RETURNING id", (name, name.casefold(), hashed, role, at))
            assert made is not None
            await record(tx, int(made[0]), CREATED, None, at, who, role)
            return f"created {role} account {name}{where}"
        await tx.execute("UPDATE players SET password_hash = ?, role = ? WHERE id = ?",
                         (hashed, role, row["id"]))
        # every server ends the account's open logins (and its tokens end here)
        kinds = [PASSWORD] if row["role"] == role else [PASSWORD, ROLE]
        _, ended = await changed(tx, row["id"], kinds, None, at, by_name=who, detail=role)
        if row["role"] != role:
            return (f"updated account {row['name']}{where}: a new password, and the role "
                    f"{row['role']} → {role}{_ended(ended)} (`matchlobby user passwd` changes "
                    "the password alone)")
        return f"updated {role} account {row['name']}{where}{_ended(ended)}"

    return await _in_transaction(config, job, create=True)


async def set_password(config: Config, name: str, password: str) -> str:
    _checked_name(name)
    hashed = hash_password(_checked_password(password), config.password)
    who = operator()

    async def job(tx: Tx) -> str:
        row = await _account(tx, name)
        await tx.execute("UPDATE players SET password_hash = ? WHERE id = ?", (hashed, row["id"]))
        _, ended = await changed(tx, row["id"], [PASSWORD], None, now(), by_name=who)
        return f"changed the password of {row['name']}{_ended(ended)}"

    return await _in_transaction(config, job)


async def set_role(config: Config, name: str, role: str) -> str:
    _checked_name(name)
    _checked_role(role)
    who = operator()

    async def job(tx: Tx) -> str:
        row = await _account(tx, name)
        if row["role"] == role:
            return f"{row['name']} is already {'an admin' if role == 'admin' else 'a player'}; " \
                   "nothing changed"
        await tx.execute("UPDATE players SET role = ? WHERE id = ?", (role, row["id"]))
        _, ended = await changed(tx, row["id"], [ROLE], None, now(), by_name=who, detail=role)
        return f"{row['name']} is now {'an admin' if role == 'admin' else 'a player'}" \
               f"{_ended(ended)}"

    return await _in_transaction(config, job)


def checked_ban(until: str | None, reason: str | None, at: str) -> tuple[str | None, str | None]:
    """A ban's end (stored form) and reason as given, checked; refused with a sentence."""
    end = None
    if until is not None:
        try:
            end = bans.future_end(until, at)
        except ValueError as e:
            raise Refused(str(e)) from None
    if reason is not None:
        try:
            reason = clean_text(reason, "the reason", REASON_MAX)
        except ValueError as e:
            raise Refused(str(e)) from None
    return end, reason


async def ban(config: Config, name: str, until: str | None, reason: str | None) -> str:
    _checked_name(name)
    end, why = checked_ban(until, reason, now())
    who = operator()

    async def job(tx: Tx) -> str:
        row = await _account(tx, name)
        await bans.ban(tx, row["id"], end, why, None, who, now())
        return f"banned {row['name']} {bans.lasting(end)}" + (f": {why}" if why else "")

    return await _in_transaction(config, job)


async def unban(config: Config, name: str) -> str:
    _checked_name(name)
    who = operator()

    async def job(tx: Tx) -> str:
        row = await _account(tx, name)
        if await bans.unban(tx, row["id"], None, who, now()):
            return f"unbanned {row['name']}"
        return f"{row['name']} is not banned; nothing changed"

    return await _in_transaction(config, job)


async def run(config: Config, action: str, args: Any, password: Callable[[], str]) -> int:
    """``matchlobby user ACTION``: its exit status (what it did is printed)."""
    if action == "add":
        return await add_user(config, args.name, password(), args.admin)
    if action == "passwd":
        return await _report(action, set_password(config, args.name, password()))
    if action == "role":
        return await _report(action, set_role(config, args.name, args.role))
    if action == "ban":
        return await _report(action, ban(config, args.name, args.until, args.reason))
    if action == "unban":
        return await _report(action, unban(config, args.name))
    if action == "list":
        return await _report(action, _list(config, args.role, args.banned))
    return await _report(action, _log(config, args.name, args.limit))


async def _list(config: Config, role: str | None, banned: bool) -> str:
    from server.user_list import accounts

    if role is not None:
        _checked_role(role)
    return await _read(config, lambda store: accounts(store, role, banned))


async def _log(config: Config, name: str | None, limit: int) -> str:
    from server.user_list import account_log

    if name is not None:
        _checked_name(name)
    if limit < 1:
        raise Refused("--limit must be at least 1")
    return await _read(config, lambda store: account_log(store, name, limit))


async def _read(config: Config, read: Callable[[Store], Awaitable[str]]) -> str:
    store = await _open(config)
    try:
        return await read(store)
    finally:
        await store.close()


async def _report(action: str, done: Awaitable[str]) -> int:
    """Print what ``done`` did, or why it was refused (status 2)."""
    try:
        said = await done
    except Refused as e:
        print(f"matchlobby user {action}: {e}", file=sys.stderr)
        return 2
    print(said)
    return 0
