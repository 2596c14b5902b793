"""``matchlobby backup FILE`` and ``matchlobby restore FILE`` on the configured database.

A backup is taken while the server runs (SQLite: :mod:`server.store.backup`; PostgreSQL:
``pg_dump``, :mod:`server.store.pg.backup`) into a temporary file renamed to ``FILE`` once
whole. A restore checks the backup, refuses a target a server uses or one that holds a lobby
(unless ``--force``), restores, and runs ``matchlobby check`` on the result: status 0 only
when the restored database is whole and its ratings agree with its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

from server.config import Config
from server.refused import Refused
from server.store.backends import is_postgres, shown
from server.store.backup import (
    backup_sqlite,
    check_backup_file,
    check_destination,
    move_into_place,
    players_in,
    private_file,
    removed_unless_done,
    restore_sqlite,
    temporary_beside,
)
from server.store.dbcheck import DatabaseProblem
from server.store.schema import SCHEMA_VERSION
from server.store.serve_lock import serving

IN_USE = "{where}: {who}; stop it first, then restore (nothing was restored)"
NOT_EMPTY = ("{where}: it holds a lobby with {players} player(s); restore into a new, empty "
             "database, or add --force to replace it (nothing was restored)")
NOT_LOBBY = ("{where}: it holds something other than an empty matchlobby database; add --force "
             "to replace it (nothing was restored)")


def elapsed(since: float) -> str:
    return f"{time.monotonic() - since:.1f} s"


def backup(config: Config, file: str, force: bool) -> int:
    started = time.monotonic()
    destination = Path(file)
    database = config.database
    if is_postgres(database):
        from server.store.pg.backup import dump

        check_destination(destination, force)
        partial = temporary_beside(destination)
        with removed_unless_done(partial):
            private_file(partial)
            dump(database, partial)
            move_into_place(partial, destination)
        size = destination.stat().st_size
    else:
        size = asyncio.run(backup_sqlite(database, destination, force))
    print(f"backed up {shown(database)} to {destination} ({size:,} bytes, "
          f"{elapsed(started)})")
    return 0


def _refuse_target(where: str, players: int | None, force: bool) -> None:
    if force or players == 0:
        return
    if players is None:
        raise Refused(NOT_LOBBY.format(where=where))
    raise Refused(NOT_EMPTY.format(where=where, players=players))


async def _restore_sqlite(backup: Path, target: str, force: bool) -> int:
    version = await check_backup_file(backup)
    if not Path(target).parent.is_dir():
        raise Refused(f"{target}: the folder {Path(target).parent} does not exist")
    if Path(target).exists() and Path(target).resolve() == backup.resolve():
        raise Refused(f"{target}: is the backup itself; restore it into another database")
    async with contextlib.AsyncExitStack() as stack:
        try:
            await stack.enter_async_context(serving(target))
        except DatabaseProblem:
            raise Refused(IN_USE.format(where=target, who="matchlobby serve is running on "
                                        "it")) from None
        _refuse_target(target, players_in(Path(target)), force)
        restore_sqlite(backup, Path(target))
    return version


async def _restore_postgres(backup: Path, url: str, force: bool) -> int:
    from server.store.pg import backup as pg
    from server.store.pg.port import connect

    version = await asyncio.to_thread(pg.backup_version, backup)
    if version > SCHEMA_VERSION:
        raise Refused(f"{backup}: its schema version {version} is newer than this "
                      f"matchlobby's ({SCHEMA_VERSION}); restore it with the version that "
                      "made it")
    conn = await connect(url)
    try:  # the "restoring" lock, held until conn closes: no node starts meanwhile
        busy = await pg.claim(conn)
        if busy:
            raise Refused(IN_USE.format(where=shown(url), who=busy[0]))
        _refuse_target(shown(url), await pg.players_in(conn), force)
        await asyncio.to_thread(pg.restore, backup, url)
        await pg.forget_nodes(conn)
    finally:
        await conn.close()
    return version


def restore(config: Config, file: str, force: bool, check: Callable[[], int]) -> int:
    """Restore ``file`` into the configured database, then ``check`` it (its status)."""
    started = time.monotonic()
    backup = Path(file)
    database = config.database
    if is_postgres(database):
        version = asyncio.run(_restore_postgres(backup, database, force))
    else:
        if database in ("", ":memory:"):
            raise Refused("restore needs a database file (--db)")
        version = asyncio.run(_restore_sqlite(backup, database, force))
    print(f"restored {backup} (schema {version}) into {shown(database)} ({elapsed(started)}); "
          "checking it")
    sys.stdout.flush()
    status = check()
    if status != 0:
        print("restore: the restored database did not pass the check (above)")
    return status
