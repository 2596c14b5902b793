"""SQLite storage through aiosqlite: schema and migrations, the writer and the readers.

Durability rules (DESIGN.md): WAL, ``synchronous=FULL``, writes in ``BEGIN
IMMEDIATE`` transactions through one writer (server/writer.py groups and
pipelines them); nobody learns a job's outcome before the commit that holds it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import date
from typing import Any, TypeVar

import aiosqlite

from server.api import Schema
from server.port import migrate_plugin
from server.writer import (
    CommitFailed,
    GroupWriter,
    Hooks,
    StorageFailed,
    current_command,
    storage_fault,
)

__all__ = ["CommitFailed", "Database", "StorageFailed", "connect", "migrate", "now", "rows",
           "today"]

log = logging.getLogger(__name__)
T = TypeVar("T")

SCHEMA_VERSION = 4


MIGRATIONS: dict[int, str | Callable[[aiosqlite.Connection], Awaitable[None]]] = {
    1: """
    CREATE TABLE players (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        name_key TEXT NOT NULL UNIQUE,
        password_hash TEXT,
        role TEXT NOT NULL DEFAULT 'player' CHECK (role IN ('player', 'admin')),
        created_at TEXT NOT NULL,
        last_login TEXT,
        dropped INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        ladder TEXT NOT NULL,
        date TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('open', 'closed')),
        created_at TEXT NOT NULL,
        closed_at TEXT,
        seq INTEGER UNIQUE
    );
    CREATE TABLE matches (
        id INTEGER PRIMARY KEY,
        ladder TEXT NOT NULL,
        event_id INTEGER REFERENCES events (id),
        side_a TEXT NOT NULL,
        side_b TEXT NOT NULL,
        length INTEGER,
        played_on TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN
            ('playing', 'claimed', 'disputed', 'finished', 'aborted', 'voided')),
        winner TEXT CHECK (winner IN ('a', 'b', 'draw')),
        score_a INTEGER,
        score_b INTEGER,
        how TEXT,
        unrated_reason TEXT,
        claimed_by TEXT,
        disputed INTEGER NOT NULL DEFAULT 0,
        seq INTEGER UNIQUE,
        created_at TEXT NOT NULL,
        finished_at TEXT
    );
    CREATE INDEX matches_event ON matches (event_id);
    CREATE INDEX matches_ladder_seq ON matches (ladder, seq);
    CREATE TABLE match_players (
        match_id INTEGER NOT NULL REFERENCES matches (id),
        player_id INTEGER NOT NULL REFERENCES players (id),
        side TEXT NOT NULL CHECK (side IN ('a', 'b')),
        PRIMARY KEY (match_id, player_id)
    );
    CREATE INDEX match_players_player ON match_players (player_id);
    CREATE TABLE corrections (
        id INTEGER PRIMARY KEY,
        match_id INTEGER NOT NULL REFERENCES matches (id),
        kind TEXT NOT NULL,
        old_status TEXT NOT NULL,
        old_winner TEXT,
        new_status TEXT NOT NULL,
        new_winner TEXT,
        reason TEXT,
        by_player INTEGER REFERENCES players (id),
        at TEXT NOT NULL
    );
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    INSERT INTO counters VALUES ('seq', 0);
    """,
    2: """
    CREATE TABLE requests (
        player_id INTEGER NOT NULL REFERENCES players (id),
        request_id TEXT NOT NULL,
        cmd TEXT NOT NULL,
        args_hash TEXT NOT NULL,
        reply TEXT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (player_id, request_id)
    ) WITHOUT ROWID;
    CREATE INDEX requests_at ON requests (at);
    """,
    # The ratings plugin's tables (ratings, history, Peklo values) are its own: a database made
    # before it owned them keeps them, and the plugin adopts them.
    3: "",
    4: """
    CREATE TABLE plugin_schemas (
        name TEXT PRIMARY KEY,
        version INTEGER NOT NULL
    );
    """,
}

PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=10000",
)


_stamp: tuple[int, str, date] = (-1, "", date.min)


def _clock() -> tuple[int, str, date]:
    """The second now, as a timestamp and as a date: worked out once a second."""
    global _stamp
    second = int(time.time())
    if second != _stamp[0]:
        at = time.gmtime(second)
        _stamp = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", at),
                  date(at.tm_year, at.tm_mon, at.tm_mday))
    return _stamp


def now() -> str:
    """UTC timestamps as DESIGN.md shows them: ``2026-11-30T10:15:02Z``."""
    return _clock()[1]


def today() -> date:
    """Today's UTC date."""
    return _clock()[2]


async def connect(path: str, check_same_thread: bool = True) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None, check_same_thread=check_same_thread)
    conn.row_factory = aiosqlite.Row
    try:
        for pragma in PRAGMAS:
            await conn.execute(pragma)
    except BaseException:
        await conn.close()  # its thread would keep the process alive
        raise
    return conn


async def schema_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def migrate(conn: aiosqlite.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the schema to ``target``, one migration per transaction."""
    version = await schema_version(conn)
    if version > SCHEMA_VERSION:
        raise RuntimeError(f"database schema {version} is newer than this server ({SCHEMA_VERSION})")
    while version < target:
        version += 1
        await conn.execute("BEGIN IMMEDIATE")
        try:
            step = MIGRATIONS[version]
            if isinstance(step, str):
                for statement in step.split(";"):
                    if statement.strip():
                        await conn.execute(statement)
            else:
                await step(conn)
            await conn.execute(f"PRAGMA user_version = {version}")
            await conn.execute("COMMIT")
        except BaseException:
            await conn.execute("ROLLBACK")
            raise
    return version


class Database(Hooks):
    """One writer connection (:class:`~server.writer.GroupWriter`) and the readers."""

    def __init__(self, path: str, batch_max: int = 64, schemas: Sequence[Schema] = ()) -> None:
        super().__init__()
        self.path = path
        self.schemas = tuple(schemas)
        self.batch_max = batch_max
        self.writer: aiosqlite.Connection | None = None
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
            # check_same_thread=False: jobs run on the loop's thread (see server.writer)
            self.writer = await connect(self.path, check_same_thread=False)
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
        for conn in (self.reader, self.writer):
            if conn is not None:
                await conn.close()
        if self.quick is not None:
            self.quick.close()
        self.reader = self.writer = self.quick = None

    async def write(self, job: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``job`` inside the writer's transaction; return once it is committed."""
        if self._task is None or self._group is None:
            raise RuntimeError("the database is closed")
        result: T = await self._group.write(job)
        return result

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
        assert self.quick is not None
        try:
            rows: list[sqlite3.Row] = self.quick.execute(sql, tuple(params)).fetchall()  # ends the read
        except sqlite3.Error as e:
            self._read_failed(e)
            raise
        return rows[0] if rows else None

    def _read_failed(self, error: sqlite3.Error) -> None:
        """After a read's error: one that says the file failed stops every write (see
        server.writer) and is raised as :class:`StorageFailed`."""
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


async def rows(conn: aiosqlite.Connection, sql: str, params: Iterable[Any] = ()) -> list[Any]:
    async with conn.execute(sql, tuple(params)) as cur:
        return list(await cur.fetchall())
