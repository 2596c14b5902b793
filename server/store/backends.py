"""Which database a ``database`` setting names: an SQLite file (the default) or a PostgreSQL
server (``postgresql://…``), and opening either for the lobby or for a sub-command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.api import Schema, Store
from server.store.storage import LobbyDatabase

SCHEMES = ("postgresql://", "postgres://")


def is_postgres(database: str) -> bool:
    return database.startswith(SCHEMES)


def backend_of(database: str) -> str:
    return "postgresql" if is_postgres(database) else "sqlite"


def without_password(database: str) -> tuple[str, str | None]:
    """``database``'s URL without its password, and the password (``None``: none given).

    The password may be in the user part or in the query (``?password=``); it is decoded as
    the server's driver decodes it (the user part's wins), so ``pg_dump`` and ``pg_restore``
    get the same one in ``PGPASSWORD``, and neither their command line nor a message shows it.
    """
    if not is_postgres(database):
        return database, None
    from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

    parts = urlsplit(database)
    userinfo, at, host = parts.netloc.rpartition("@")
    user, colon, secret = userinfo.partition(":")
    netloc = (f"{user}@{host}" if user else host) if colon else parts.netloc
    kept: list[str] = []
    in_query: str | None = None
    for item in parts.query.split("&") if parts.query else ():
        key, _, value = item.partition("=")
        if unquote_plus(key) == "password":
            in_query = unquote_plus(value)
        else:
            kept.append(item)
    password = unquote(secret) if at and secret else in_query
    url = urlunsplit(parts._replace(netloc=netloc, query="&".join(kept)))
    return url, password


def shown(database: str) -> str:
    """``database`` as logs and messages show it: a password in a URL shows as ``***``."""
    url, password = without_password(database)
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if password is None or not parts.username:
        return url
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def lobby_database(database: str, batch_max: int, schemas: Sequence[Schema],
                   node: str = "") -> LobbyDatabase:
    """The lobby's database (not yet opened): ``Database`` or ``PgDatabase`` (whose writer
    names ``node`` as the origin of the pushes it shares)."""
    if is_postgres(database):
        from server.store.pg.database import PgDatabase

        return PgDatabase(database, batch_max=batch_max, schemas=schemas, origin=node)
    from server.store.database import Database

    return Database(database, batch_max=batch_max, schemas=schemas)


async def open_store(database: str, schemas: Sequence[Schema]) -> Store:
    """A sub-command's store on ``database``, the lobby's tables and ``schemas`` migrated."""
    if is_postgres(database):
        from server.store.pg import port, schema

        async def migrate(conn: Any) -> None:
            await schema.migrate(conn)
            for s in schemas:
                await schema.migrate_plugin(conn, s)

        return await port.open_store(database, migrate)
    from server.store.connection import open_connection
    from server.store.port import SqliteStore
    from server.store.schema import migrate as sqlite_migrate
    from server.store.schema import migrate_plugin

    conn = open_connection(database)
    try:
        await sqlite_migrate(conn)
        for s in schemas:
            await migrate_plugin(conn, s)
    except BaseException:
        conn.close()
        raise
    return SqliteStore(conn)
