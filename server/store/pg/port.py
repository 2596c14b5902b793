"""The storage port of the plugin API on PostgreSQL: a transaction's statements, committed
reads from a pool, and a whole database for a ``matchlobby`` sub-command.

Rows are ``asyncpg.Record`` objects: indexable by position and by column
name, like SQLite's rows. Every statement is written with ``?`` placeholders
(:func:`~server.store.pg.sql.pg_sql`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

from server.api import Tx
from server.store.faults import DatabaseUnavailable
from server.store.log import SqliteLog, with_turns
from server.store.pg.faults import lost_connection
from server.store.pg.sql import copy_target, pg_sql

BACKEND = "postgresql"
Job = Callable[[Tx], Awaitable[Any]]
STREAM_PREFETCH = 4096  # rows fetched at a time by a cursor
WRITE_LOCK = 0x6D6C7772  # the advisory lock of the whole database ("mlwr")
BEGIN_WRITE = f"BEGIN; SELECT pg_advisory_xact_lock_shared({WRITE_LOCK})"
"""A lobby's batch shares the database with the other writers' batches; what it changes it
holds by row (a match, an invitation, an event, a ladder's ``ladder_versions`` row)."""
LADDERS_MOVED = "UPDATE ladder_versions SET version = version + 1, rebuilt = version + 1"
RATINGS_MOVED = '{"ratings":true}'
"""A note to the lobby's servers (a push for no connection): reload the plugins' data."""
COMMAND_LINE = "command line"  # the origin of the pushes a sub-command writes
FEED_CHANNEL = "matchlobby_pushes"  # NOTIFY's channel: "first-last", the positions committed
PENDING = "?"  # a place reserved in ``pushes``, not filled yet (an audience no push has)
FILLED = "*"  # a reserved place filled: its body is the JSON list of [audience, body] pairs
COPY_MIN_ROWS = 256  # rows of one INSERT from which COPY beats executemany (bench/pg_bulk.py)


class PgTx:
    """Statements on one ``asyncpg`` connection, in whatever transaction it is in (its owner
    opens and ends them)."""

    backend = BACKEND

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @property
    def log(self) -> SqliteLog:
        return SqliteLog(self)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self.conn.execute(pg_sql(sql), *params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        """Many rows of a plain ``INSERT`` go through ``COPY`` (a whole ladder rewritten);
        anything else, and a few rows, through ``executemany``."""
        rows = list(rows)
        if not rows:
            return
        target = copy_target(sql) if len(rows) >= COPY_MIN_ROWS else None
        if target is not None:
            table, columns = target
            await self.conn.copy_records_to_table(table, records=rows, columns=columns)
            return
        await self.conn.executemany(pg_sql(sql), rows)

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self.conn.execute(pg_sql(sql), *params)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = await self.conn.fetch(pg_sql(sql), *params)
        return rows

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        return await self.conn.fetchrow(pg_sql(sql), *params)

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        """Through a cursor inside a transaction (rows fetched a batch at a time); outside one,
        the rows read at once and handed out with turns of the event loop."""
        if self.conn.is_in_transaction():
            async for row in self.conn.cursor(pg_sql(sql), *params, prefetch=STREAM_PREFETCH):
                yield row
            return
        async for row in with_turns(await self.fetchall(sql, params)):
            yield row


class PoolReader:
    """Reads of what has been committed, each on a connection of the pool (its own snapshot)."""

    backend = BACKEND

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    @property
    def log(self) -> SqliteLog:
        return SqliteLog(self)

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        try:
            rows: list[Any] = await self.pool.fetch(pg_sql(sql), *params)
        except Exception as e:
            if lost_connection(e, None):
                raise DatabaseUnavailable() from e
            raise
        return rows

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Any | None:
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        async for row in with_turns(await self.fetchall(sql, params)):
            yield row


class PgStore(PgTx):
    """A database opened by a ``matchlobby`` sub-command, on one connection of its own
    (``server.api.Store``)."""

    async def transaction(self, job: Job) -> Any:
        """``job`` in a transaction that has the database to itself (the write lock taken
        alone): it waits for the lobby's batches in hand, and they wait for it. Every ladder
        counts as moved, so each lobby writer reloads what it holds of them."""
        async with self.conn.transaction():
            await self.conn.execute(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")
            result = await job(PgTx(self.conn))
            await self.conn.execute(LADDERS_MOVED)
            if await self.conn.fetchval("SELECT EXISTS (SELECT 1 FROM nodes)"):
                await self._tell_servers()
            return result

    async def _tell_servers(self) -> None:
        """The running servers hear of it through their feeds at the commit, not only at
        their next write."""
        pos = await self.conn.fetchval("UPDATE counters SET value = value + 1 "
                                       "WHERE name = 'push' RETURNING value")
        await self.conn.execute("INSERT INTO pushes (pos, origin, audience, body) "
                                "VALUES ($1, $2, '', $3)", pos, COMMAND_LINE, RATINGS_MOVED)
        await self.conn.execute(f"SELECT pg_notify('{FEED_CHANNEL}', '{pos}-{pos}')")

    async def snapshot(self, job: Job) -> Any:
        tr = self.conn.transaction(isolation="repeatable_read")
        await tr.start()
        try:
            return await job(PgTx(self.conn))
        finally:
            await tr.rollback()

    def native(self) -> Any:
        """The store's own ``asyncpg`` connection."""
        return self.conn

    async def close(self) -> None:
        await self.conn.close()


async def connect(url: str) -> Any:
    """An ``asyncpg`` connection to ``url`` (``postgresql://…``)."""
    import asyncpg

    return await asyncpg.connect(url)


async def open_store(url: str, migrate: Callable[[Any], Awaitable[None]]) -> PgStore:
    """A sub-command's store on ``url``, migrated by ``migrate(conn)`` first."""
    conn = await connect(url)
    try:
        await migrate(conn)
    except BaseException:
        await conn.close()
        raise
    return PgStore(conn)
