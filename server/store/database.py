"""The database as the lobby uses it: one writer for every write, readers for everything else.

Writes go through :class:`~server.store.writer.pipeline.GroupWriter` on the
writer's own ``sqlite3`` connection; reads of what has been committed go to a
shared ``aiosqlite`` reader (off the event loop) or, for small lookups by
key, to a ``sqlite3`` connection read on the loop (:meth:`Database.fetchone_now`).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import aiosqlite

from server.api import Schema
from server.store.connection import connect, open_connection
from server.store.faults import current_command, storage_fault
from server.store.port import CommittedReader, SqliteTx
from server.store.schema import migrate, migrate_plugin
from server.store.writer.jobs import JobTx
from server.store.writer.pipeline import GroupWriter, Hooks

T = TypeVar("T")


class Database(Hooks):
    """The writer (:class:`~server.store.writer.pipeline.GroupWriter`) and the readers."""

    def __init__(self, path: str, batch_max: int = 64, schemas: Sequence[Schema] = ()) -> None:
        super().__init__()
        self.path = path
        self.schemas = tuple(schemas)
        self.batch_max = batch_max
        self.writer: sqlite3.Connection | None = None
        self.reader: aiosqlite.Connection | None = None
        self.quick: sqlite3.Connection | None = None
        self._group: GroupWriter | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def commits(self) -> int:
        return 0 if self._group is None else self._group.commits

    async def open(self) -> None:
        """Open the connections and start the writer; on failure close what was opened."""
        try:
            self.writer = open_connection(self.path)
            await migrate(self.writer)
            for schema in self.schemas:
                await migrate_plugin(self.writer, schema)
            self.reader = await connect(self.path)
            await self.reader.execute("PRAGMA query_only=ON")
            self.quick = sqlite3.connect(self.path, isolation_level=None)
            self.quick.row_factory = sqlite3.Row
            self.quick.execute("PRAGMA query_only=ON")
            self._group = GroupWriter(self.writer, self, self.batch_max)
            await self._group.start()
        except BaseException:
            await self.close()
            raise
        self._task = asyncio.create_task(self._group.run(), name="db-writer")

    async def close(self) -> None:
        """Finish every queued job, then close the connections."""
        if self._task is not None and self._group is not None:
            await self._group.queue.put(None)
            await self._task
            self._task = None
        elif self._group is not None:  # opened but never run (the thread stops once)
            self._group.committer.stop()
        if self.reader is not None:
            await self.reader.close()
        for conn in (self.writer, self.quick):
            if conn is not None:
                conn.close()
        self.reader = self.writer = self.quick = None

    async def write(self, job: Callable[[JobTx], Awaitable[T]], reserve: bool = False) -> T:
        """Run ``job`` inside the writer's transaction; return once it is committed (one
        process serves a SQLite file: nothing to reserve for other servers)."""
        if self._task is None or self._group is None:
            raise RuntimeError("the database is closed")
        result: T = await self._group.write(job)
        return result

    def writer_tx(self) -> SqliteTx:
        """Reads on the writer's connection while no job runs (the plugins' state at start and
        after a failed commit) or from ``on_job_failure`` (they then see the open transaction)."""
        assert self.writer is not None
        return SqliteTx(self.writer)

    @property
    def committed(self) -> CommittedReader:
        """What has been committed, through the plugin API's ``Reader``."""
        return CommittedReader(self.fetchall)

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        """Rows as committed when the query starts (every commit acknowledged so far).

        The query runs to its end in one call on the reader's thread. A cursor
        left open across an ``await`` would keep the shared reader connection
        in its read transaction, so queries from other tasks would see that old
        snapshot: a retry could miss the stored reply of a request committed
        just before and apply it twice.
        """
        assert self.reader is not None
        try:
            return list(await self.reader.execute_fetchall(sql, tuple(params)))
        except sqlite3.Error as e:
            self._read_failed(e)
            raise

    def fetchone_now(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        """One row by key, read on the event loop's thread: for small indexed lookups only.

        A WAL reader never waits for a lock, and a lookup of a few hundred rows
        costs less than the two thread switches of :meth:`fetchone` (which showed
        in the tail of ``whois`` latency). Each call is its own snapshot of what
        has been committed.
        """
        rows = self._quick(sql, params)
        return rows[0] if rows else None

    def _quick(self, sql: str, params: Iterable[Any]) -> list[sqlite3.Row]:
        assert self.quick is not None
        try:
            rows: list[sqlite3.Row] = self.quick.execute(sql, tuple(params)).fetchall()  # ends the read
        except sqlite3.Error as e:
            self._read_failed(e)
            raise
        return rows

    def data_version(self) -> int | None:
        """SQLite's ``PRAGMA data_version``: it changes when another connection (the writer,
        another process) has committed, so a poll can skip reading when it has not."""
        assert self.quick is not None
        row = self.quick.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    async def fetchone_soon(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Row | None:
        """:meth:`fetchone_now`, as the backends share it."""
        return self.fetchone_now(sql, params)

    async def fetchall_soon(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """Every row of a small indexed read, read on the event loop's thread as
        :meth:`fetchone_now` reads one: a cheap read does not wait behind a costly one queued
        on the reader's thread."""
        return self._quick(sql, params)

    def _read_failed(self, error: sqlite3.Error) -> None:
        """After a read's error: one that says the file failed stops every write (see
        ``server.store.faults``) and is raised as ``StorageFailed``."""
        fault = storage_fault(error)
        if fault is not None and self._group is not None:
            raise self._group.fail_storage(fault, [current_command.get()]) from error

    @property
    def fault(self) -> str | None:
        """The storage fault that made the database read-only, if one did."""
        return None if self._group is None else self._group.fault

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Row | None:
        """The first row of :meth:`fetchall` (the queries look rows up by key)."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None
