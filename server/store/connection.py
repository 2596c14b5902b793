"""Opening the database file with the pragmas every connection that writes must have.

Durability rules (DESIGN.md): WAL, ``synchronous=FULL``, writes in ``BEGIN
IMMEDIATE`` transactions. The writer, the migrations and the ``matchlobby``
sub-commands use plain ``sqlite3`` connections (:func:`open_connection`); the
lobby's shared reader is an ``aiosqlite`` one (:func:`connect`), whose thread
keeps its queries off the event loop.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite

PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=FULL",
    "PRAGMA foreign_keys=ON",
    "PRAGMA busy_timeout=10000",
)


def open_connection(path: str | Path) -> sqlite3.Connection:
    """A ``sqlite3`` connection in autocommit mode (transactions are explicit), rows by name.

    ``check_same_thread=False``: a ``BEGIN IMMEDIATE`` that may wait for the
    lock runs on a worker thread and the writer commits on a thread of its own;
    each owner makes sure one thread at a time uses the connection.
    """
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    try:
        for pragma in PRAGMAS:
            conn.execute(pragma)
    except BaseException:
        conn.close()
        raise
    return conn


async def connect(path: str | Path) -> aiosqlite.Connection:
    """An ``aiosqlite`` connection with the same pragmas (the lobby's reader)."""
    conn = await aiosqlite.connect(path, isolation_level=None)
    conn.row_factory = aiosqlite.Row
    try:
        for pragma in PRAGMAS:
            await conn.execute(pragma)
    except BaseException:
        await conn.close()  # its thread would keep the process alive
        raise
    return conn
