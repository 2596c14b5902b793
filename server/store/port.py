"""The storage port of the plugin API on SQLite: plain transactions, the lobby's reader, a store.

Plugins see only the protocols of ``server.api.storage``. Inside the lobby's
write jobs they get the writer's handle (``server.store.writer.jobs``); this
module gives the rest: :class:`SqliteTx`, statements run at once on one
``sqlite3`` connection (migrations, plugin loads between jobs, the
``matchlobby`` sub-commands), :class:`CommittedReader` for commands, and
:class:`SqliteStore`, a whole database for a sub-command.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

from server.api import Tx
from server.store.log import SqliteLog, with_turns

BACKEND = "sqlite"
Job = Callable[[Tx], Awaitable[Any]]


class SqliteTx:
    """Every statement run at once on the caller's thread, in whatever transaction the
    connection is in (its owner opens and ends them).

    Reads on a local file do not wait for a lock in WAL mode, and a thread hop
    per statement costs more than most of them take; :meth:`stream` gives the
    event loop a turn now and then on a long read.
    """

    backend = BACKEND

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @property
    def log(self) -> SqliteLog:
        return SqliteLog(self)

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, tuple(params)).close()

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows).close()

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.conn.execute(sql, tuple(params)).close()

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cursor = self.conn.execute(sql, tuple(params))
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        cursor = self.conn.execute(sql, tuple(params))
        try:
            return cursor.fetchone()
        finally:
            cursor.close()

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        cursor = self.conn.execute(sql, tuple(params))
        try:
            async for row in with_turns(cursor):
                yield row
        finally:
            cursor.close()


async def begin_immediate(conn: sqlite3.Connection) -> None:
    """``BEGIN IMMEDIATE`` on a worker thread: it may wait for another process's write lock
    (up to the connection's busy timeout), and the event loop must not wait with it."""
    await asyncio.to_thread(conn.execute, "BEGIN IMMEDIATE")


class CommittedReader:
    """Reads of what has been committed, for commands (the lobby's reader connection).

    Every query runs to its end in one call (``fetchall``): a cursor left open
    across an ``await`` would hold the shared reader in an old snapshot.
    """

    backend = BACKEND

    def __init__(self, fetchall: Callable[[str, Sequence[Any]], Awaitable[list[Any]]]) -> None:
        self._fetchall = fetchall

    @property
    def log(self) -> SqliteLog:
        return SqliteLog(self)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return await self._fetchall(sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        for row in await self._fetchall(sql, params):
            yield row


class SqliteStore(SqliteTx):
    """A database opened by a ``matchlobby`` sub-command, on one ``sqlite3`` connection of its
    own (``server.api.Store``)."""

    async def transaction(self, job: Job) -> Any:
        await begin_immediate(self.conn)
        try:
            result = await job(SqliteTx(self.conn))
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        return result

    async def snapshot(self, job: Job) -> Any:
        self.conn.execute("BEGIN")
        try:
            return await job(SqliteTx(self.conn))
        finally:
            self.conn.execute("ROLLBACK")

    def native(self) -> sqlite3.Connection:
        """The store's own ``sqlite3`` connection (the statements of :class:`SqliteTx` run on
        it, on this thread, so a fast path sees the same transaction)."""
        return self.conn

    async def close(self) -> None:
        self.conn.close()
