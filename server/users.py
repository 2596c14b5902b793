"""``matchlobby user add``: accounts created offline by the operator."""

from __future__ import annotations

import sys

from server.accounts import MIN_PASSWORD, hash_password
from server.api import valid_name
from server.config import Config
from server.plugins import migrate_all
from server.store import now
from server.store.connection import open_connection
from server.store.dbcheck import check_database
from server.store.port import begin_immediate
from server.store.sessions import REVOKE_ALL


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
    conn = open_connection(config.database)
    try:
        await migrate_all(conn, config)
        await begin_immediate(conn)  # closing the connection rolls back on an error
        row = conn.execute("SELECT id, name FROM players WHERE name_key = ?",
                           (name.casefold(),)).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO players (name, name_key, password_hash, role, created_at) "
                "VALUES (?, ?, ?, ?, ?)", (name, name.casefold(), hashed, role, now()))
            what, note = "created", ""
        else:
            conn.execute("UPDATE players SET password_hash = ?, role = ? WHERE id = ?",
                         (hashed, role, row["id"]))
            ended = conn.execute(REVOKE_ALL, (row["id"],)).rowcount  # a new password ends them
            name, what = row["name"], "updated"
            note = f"; {ended} of its sessions ended" if ended else ""
        conn.execute("COMMIT")
    finally:
        conn.close()
    print(f"{what} {role} account {name} in {config.database}{note}")
    return 0
