"""Shims for write jobs written against aiosqlite's API, until every job takes a ``Tx``.

The lobby's handlers annotate their jobs' argument as ``aiosqlite.Connection``
and call ``async with conn.execute(...) as cur`` (reading ``cur.lastrowid``,
``await cur.fetchone()``), ``write_later(conn, ...)``, ``next_seq(conn)``,
``new_match_id(conn)`` and ``event_unit(conn, ...)``; the lobby wraps the
same object with ``SqliteTx(conn)`` for plugins. The object is a
:class:`CompatTx`: the writer's native handle, whose ``execute`` also
returns an aiosqlite-shaped cursor. Nothing here reaches into aiosqlite;
the annotations merely keep the callers' types as they are.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from types import TracebackType
from typing import Any, TypeVar

import aiosqlite

from server.api import RatedUnit, Tx
from server.store import log
from server.store.port import CommittedReader, SqliteTx
from server.store.writer.batching import Later
from server.store.writer.jobs import JobTx

T = TypeVar("T")
LegacyJob = Callable[[aiosqlite.Connection], Awaitable[T]]


class Cursor:
    """The part of ``aiosqlite.Cursor`` the lobby's jobs use, over a statement's cursor."""

    __slots__ = ("_raw",)

    def __init__(self, raw: sqlite3.Cursor | Later) -> None:
        self._raw = raw

    @property
    def lastrowid(self) -> int | None:
        value: int | None = self._raw.lastrowid
        return value

    @property
    def rowcount(self) -> int:
        value: int = self._raw.rowcount
        return value

    async def fetchone(self) -> Any | None:
        return self._raw.fetchone()

    async def fetchall(self) -> list[Any]:
        rows: list[Any] = self._raw.fetchall()
        return rows

    async def __aiter__(self) -> AsyncIterator[Any]:
        while (row := self._raw.fetchone()) is not None:
            yield row

    async def close(self) -> None:
        self._raw.close()


class Statement:
    """What ``CompatTx.execute`` returns: awaited, a :class:`Cursor`; or ``async with``."""

    __slots__ = ("_cursor", "_handle", "_params", "_sql")

    def __init__(self, tx: CompatTx, sql: str, params: Sequence[Any]) -> None:
        self._handle, self._sql, self._params = tx, sql, params
        self._cursor: Cursor | None = None

    async def _open(self) -> Cursor:
        return Cursor(await self._handle._statement(self._sql, tuple(self._params)))

    def __await__(self) -> Generator[Any, None, Cursor]:
        return self._open().__await__()

    async def __aenter__(self) -> Cursor:
        self._cursor = await self._open()
        return self._cursor

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        if self._cursor is not None:
            await self._cursor.close()


class CompatTx(JobTx):
    """The writer's handle, whose ``execute`` also answers as aiosqlite's does."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Statement:  # type: ignore[override]
        return Statement(self, sql, params)


def _job_tx(conn: object) -> JobTx:
    if not isinstance(conn, JobTx):
        raise TypeError("only a write job's handle can do this")
    return conn


async def write_later(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> None:
    """A write whose result the job does not read (``Tx.later``)."""
    await _job_tx(conn).later(sql, params)


def next_seq(conn: aiosqlite.Connection) -> int:
    """The next number in the order ratings were applied (matches and event closes share it)."""
    return _job_tx(conn).take("seq")


def new_match_id(conn: aiosqlite.Connection) -> int:
    """The id of the next row of ``matches`` (inserted with it, so no ``lastrowid`` is needed)."""
    return _job_tx(conn).take("match")


async def event_unit(conn: aiosqlite.Connection, ladder: str, event_id: int, seq: int,
                     at: str) -> RatedUnit:
    return await log.event_unit(_job_tx(conn), ladder, event_id, seq, at)


def tx_of(conn: aiosqlite.Connection | sqlite3.Connection) -> Tx:
    """``SqliteTx(conn)`` as the lobby calls it: a job's handle as it is, or the writer's
    connection (``Database.writer``) between jobs."""
    if isinstance(conn, sqlite3.Connection):
        return SqliteTx(conn)
    return _job_tx(conn)


class LobbyReader(CommittedReader):
    """``CommittedReader(fetchall, reader)`` as the lobby calls it (the reader is not needed)."""

    def __init__(self, fetchall: Callable[[str, Sequence[Any]], Awaitable[list[Any]]],
                 conn: object = None) -> None:
        super().__init__(fetchall)
