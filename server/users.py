"""``matchlobby user add``: accounts created offline by the operator."""

from __future__ import annotations

import sys

from server.accounts import MIN_PASSWORD, hash_password
from server.api import valid_name
from server.config import Config
from server.dbcheck import check_database
from server.plugins import migrate_all
from server.storage import connect, now


async def add_user(config: Config, name: str, password: str, admin: bool) -> int:
    if not valid_name(name):
        print(f"matchlobby user add: {name!r} is not a valid name (1–20 of A-Z a-z 0-9 _ -)",
              file=sys.stderr)
        return 2
    if len(password) < MIN_PASSWORD:
        print(f"matchlobby user add: the password needs at least {MIN_PASSWORD} characters",
              file=sys.stderr)
        return 2
    await check_database(config.database, quick_check=config.startup_check == "quick")
    hashed = hash_password(password, config.password)
    role = "admin" if admin else "player"
    conn = await connect(config.database)
    try:
        await migrate_all(conn, config)
        await conn.execute("BEGIN IMMEDIATE")
        async with conn.execute("SELECT id, name FROM players WHERE name_key = ?",
                                (name.casefold(),)) as cur:
            row = await cur.fetchone()
        if row is None:
            await conn.execute(
                "INSERT INTO players (name, name_key, password_hash, role, created_at) "
                "VALUES (?, ?, ?, ?, ?)", (name, name.casefold(), hashed, role, now()))
            what = "created"
        else:
            await conn.execute("UPDATE players SET password_hash = ?, role = ? WHERE id = ?",
                               (hashed, role, row["id"]))
            name, what = row["name"], "updated"
        await conn.execute("COMMIT")
    finally:
        await conn.close()
    print(f"{what} {role} account {name} in {config.database}")
    return 0
