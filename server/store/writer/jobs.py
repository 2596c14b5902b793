"""The handle a write job gets: ``server.api.Tx`` (plus :meth:`JobTx.take`) on the writer's
own ``sqlite3`` connection, run inline on the event loop.

Inside the batch's ``BEGIN IMMEDIATE`` transaction a statement never waits
for a lock (the transaction holds the write lock; WAL readers do not block
it) and does no fsync, so running it on the loop's thread costs less than
handing it to another thread and back. Writes whose outcome the job does not
read wait in the batch's queue (:class:`~server.store.writer.batching.Writes`):
a job that only writes (``execute``, ``later``, ``executemany``) runs ahead of its
transaction, while the batch before it is still being committed. Anything
that reads first opens the batch's transaction (after the commit in flight)
and runs every write queued before it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any

from server.store.log import SqliteLog, with_turns
from server.store.port import BACKEND
from server.store.writer.batching import Writes, deferrable


class JobTx:
    """One job's view of its batch's transaction (``server.api.Tx``).

    ``execute``, ``later`` and ``executemany`` of plain writes queue without
    opening the transaction: nothing is read back from them. A queued write of
    the job's own that fails fails the job at the statement that needed it, or
    its whole batch at the commit.
    """

    backend = BACKEND

    def __init__(self, conn: sqlite3.Connection, writes: Writes,
                 begin: Callable[[], Awaitable[None]]) -> None:
        self._conn = conn
        self._writes = writes
        self._begin = begin

    @property
    def log(self) -> SqliteLog:
        return SqliteLog(self)  # made on demand: held here, it would make a reference cycle

    def take(self, name: str) -> int:
        """The next number of a :class:`~server.store.writer.batching.Counters` sequence
        (``seq``, stored with the commit, or ``match``)."""
        return self._writes.counters.take(name)

    async def hold_ladder(self, ladder: str, rebuild: bool = False) -> None:
        """One process writes a SQLite file: the batch's transaction holds everything."""

    async def next_seq(self, ladder: str) -> int:
        return self.take("seq")

    async def next_match_id(self) -> int:
        return self.take("match")

    async def rows(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> int:
        await self._ready()
        count = 0
        for sql, params in statements:
            cursor = self._conn.execute(sql, tuple(params))
            try:
                if cursor.description:
                    count = len(cursor.fetchall())
                else:  # sqlite3 says -1 for a write it does not parse (a WITH … INSERT)
                    count = (cursor.rowcount if cursor.rowcount >= 0 else
                             self._conn.execute("SELECT changes()").fetchone()[0])
            finally:
                cursor.close()
        return count

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        if deferrable(sql):
            await self.later(sql, params)
            return
        await self._ready()
        self._conn.execute(sql, tuple(params)).close()

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        if deferrable(sql):
            self._writes.queue(sql, rows, True)
            return
        await self._ready()
        self._conn.executemany(sql, rows).close()

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._writes.queue(sql, tuple(params), False)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        await self._ready()
        cursor = self._conn.execute(sql, tuple(params))
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        await self._ready()
        cursor = self._conn.execute(sql, tuple(params))
        try:
            return cursor.fetchone()
        finally:
            cursor.close()

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        await self._ready()
        cursor = self._conn.execute(sql, tuple(params))
        self._writes.opened.append(cursor)  # closed before the commit, should the job leave it
        try:
            async for row in with_turns(cursor):
                yield row
        finally:
            cursor.close()

    async def _ready(self) -> None:
        """The batch's transaction open, and every write queued before now run in it."""
        if not self._writes.begun:
            await self._begin()
        self._writes.flush()
