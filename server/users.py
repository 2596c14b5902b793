"""``matchlobby user add``: accounts created offline by the operator."""

from __future__ import annotations

import sys

from server.accounts import MIN_PASSWORD, hash_password
from server.api import Tx, valid_name
from server.config import Config
from server.plugins import open_database
from server.store import now
from server.store.account_changes import PASSWORD, ROLE, changed
from server.store.backends import is_postgres, shown
from server.store.dbcheck import check_database


async def add_user(config: Config, name: str, password: str, admin: bool) -> int:
    if not valid_name(name):
        print(f"matchlobby user add: {name!r} is not a valid name (1–20 of A-Z a-z 0-9 _ -)",
              file=sys.stderr)
        return 2
    if len(password) < MIN_PASSWORD:
        print(f"matchlobby user add: the password needs at least {MIN_PASSWORD} characters",
              file=sys.stderr)
        return 2
    if not is_postgres(config.database):
        await check_database(config.database, quick_check=config.startup_check == "quick")
    hashed = hash_password(password, config.password)
    role = "admin" if admin else "player"
    store = await open_database(config)

    async def job(tx: Tx) -> tuple[str, str, str]:
        row = await tx.fetchone("SELECT id, name, role FROM players WHERE name_key = ?",
                                (name.casefold(),))
        if row is None:
            await tx.execute(
                "INSERT INTO players (name, name_key, password_hash, role, created_at) "
                "VALUES (?, ?, ?, ?, ?)", (name, name.casefold(), hashed, role, now()))
            return name, "created", ""
        await tx.execute("UPDATE players SET password_hash = ?, role = ? WHERE id = ?",
                         (hashed, role, row["id"]))
        # every server ends the account's open logins (and its tokens end here)
        kinds = [PASSWORD] if row["role"] == role else [PASSWORD, ROLE]
        _, ended = await changed(tx, row["id"], kinds, None, now())
        return row["name"], "updated", f"; {ended} of its sessions ended" if ended else ""

    try:
        name, what, note = await store.transaction(job)
    finally:
        await store.close()
    print(f"{what} {role} account {name} in {shown(config.database)}{note}")
    return 0
