"""The storage port of the plugin API on SQLite: transactions, readers, the log, plugin schemas.

Plugins see only the protocols of ``server.api.storage``; this module gives
them over aiosqlite connections: the writer's job connection inside the
lobby's transactions (:class:`SqliteTx`), the reader for commands, and a
whole database for ``matchlobby`` sub-commands (:class:`SqliteStore`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

import aiosqlite

from server.api import Index, RatedUnit, Schema, Table, TableColumn
from server.log import event_games, ladder_units, with_turns
from server.writer import write_later

Job = Callable[[Any], Awaitable[Any]]
BACKEND = "sqlite"


class SchemaError(Exception):
    """A plugin's tables are newer than its code, or cannot be brought up to date."""


class SqliteLog:
    """The log read on one connection (in its transaction, when it is in one)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn

    async def units(self, ladder: str, since: int = 0) -> list[RatedUnit]:
        return await ladder_units(self.conn, ladder, since)

    async def event_games(self, ladder: str) -> list[tuple[str, str, int, int]]:
        return await event_games(self.conn, ladder)


class SqliteTx:
    """Reads and writes on one aiosqlite connection: inside the writer's job, its transaction."""

    backend = BACKEND

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.conn = conn
        self.log = SqliteLog(conn)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self.conn.execute(sql, tuple(params))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self.conn.executemany(sql, rows)

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        await write_later(self.conn, sql, tuple(params))

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self.conn.execute(sql, tuple(params)) as cur:
            return list(await cur.fetchall())

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        async with self.conn.execute(sql, tuple(params)) as cur:
            return await cur.fetchone()

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        async with self.conn.execute(sql, tuple(params)) as cur:
            async for row in with_turns(cur):
                yield row


class CommittedReader:
    """Reads of what has been committed, for commands (the lobby's reader connection)."""

    backend = BACKEND

    def __init__(self, fetchall: Callable[[str, Sequence[Any]], Awaitable[list[Any]]],
                 conn: aiosqlite.Connection) -> None:
        self._fetchall = fetchall
        self.log = SqliteLog(conn)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return await self._fetchall(sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        for row in await self._fetchall(sql, params):
            yield row


# ---- plugin schemas -------------------------------------------------------------------------

SQL_TYPES = {"integer": "INTEGER", "real": "REAL", "text": "TEXT", "blob": "BLOB"}
PLUGIN_SCHEMAS = """CREATE TABLE IF NOT EXISTS plugin_schemas (
    name TEXT PRIMARY KEY,
    version INTEGER NOT NULL
)"""


def _column(c: TableColumn, table: Table) -> str:
    sql = f"{c.name} {SQL_TYPES[c.type]}"
    if table.autoincrement == c.name:
        return sql + " PRIMARY KEY"
    return sql if c.nullable else sql + " NOT NULL"


def table_sql(table: Table) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``table`` (an autoincrement key is SQLite's rowid)."""
    parts = [_column(c, table) for c in table.columns]
    if table.primary_key and table.primary_key != (table.autoincrement,):
        parts.append(f"PRIMARY KEY ({', '.join(table.primary_key)})")
    suffix = " WITHOUT ROWID" if table.clustered and table.autoincrement is None else ""
    return f"CREATE TABLE IF NOT EXISTS {table.name} (\n    " + ",\n    ".join(parts) + f"\n){suffix}"


def index_sql(index: Index) -> str:
    unique = "UNIQUE " if index.unique else ""
    return (f"CREATE {unique}INDEX IF NOT EXISTS {index.name} ON {index.table} "
            f"({', '.join(index.columns)})")


async def schema_version(conn: aiosqlite.Connection, name: str) -> int:
    async with conn.execute("SELECT version FROM plugin_schemas WHERE name = ?", (name,)) as cur:
        row = await cur.fetchone()
    return 0 if row is None else int(row[0])


async def migrate_plugin(conn: aiosqlite.Connection, schema: Schema) -> int:
    """Bring a plugin's tables to its schema's version, one transaction a version."""
    version = await schema_version(conn, schema.name)
    if version > schema.version:
        raise SchemaError(f"plugin {schema.name!r}: the database's tables are version {version}, "
                          f"newer than this code's {schema.version}")
    while version < schema.version:
        version += 1
        await conn.execute("BEGIN IMMEDIATE")
        try:
            tx = SqliteTx(conn)
            for step in schema.versions.get(version, ()):
                if isinstance(step, Table):
                    await conn.execute(table_sql(step))
                elif isinstance(step, Index):
                    await conn.execute(index_sql(step))
                else:
                    await step(tx)
            await conn.execute(
                "INSERT INTO plugin_schemas (name, version) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET version = excluded.version",
                (schema.name, version))
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
    return version


# ---- a whole database, for matchlobby sub-commands -------------------------------------------


class SqliteStore(SqliteTx):
    """A database opened by a ``matchlobby`` sub-command, on one connection of its own."""

    async def transaction(self, job: Job) -> Any:
        await self.conn.execute("BEGIN IMMEDIATE")
        try:
            result = await job(SqliteTx(self.conn))
        except BaseException:
            await self.conn.execute("ROLLBACK")
            raise
        await self.conn.execute("COMMIT")
        return result

    async def snapshot(self, job: Job) -> Any:
        await self.conn.execute("BEGIN")
        try:
            return await job(SqliteTx(self.conn))
        finally:
            await self.conn.execute("ROLLBACK")

    def native(self) -> sqlite3.Connection:
        """The ``sqlite3`` connection under aiosqlite's (which has no public accessor for it);
        opened with ``check_same_thread=False``, used on this thread between awaits only."""
        raw: sqlite3.Connection = self.conn._conn
        return raw

    async def close(self) -> None:
        await self.conn.close()
