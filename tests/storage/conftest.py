"""A real writer on a real file for the storage tests, with a small table ``t`` to write; an
empty PostgreSQL database of the test's own for the PostgreSQL ones."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from testkit import postgres

from server.store import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """An open :class:`Database` at ``tmp_path / "w.db"``; closed (every job finished) after."""
    database = Database(str(tmp_path / "w.db"))
    await database.open()
    assert database.writer is not None
    database.writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def committed(tmp_path: Path) -> Callable[[], list[str]]:
    """What another connection sees of ``t``: only what has been committed."""
    def look() -> list[str]:
        with sqlite3.connect(tmp_path / "w.db") as other:
            return [r[0] for r in other.execute("SELECT v FROM t ORDER BY id")]
    return look


@pytest.fixture
def pg_url() -> Iterator[str]:
    """The URL of a new empty database on the test run's PostgreSQL, dropped after the test
    (skipped where PostgreSQL is not installed)."""
    server = postgres.server_url()
    if server is None:
        pytest.skip(postgres.MISSING)
    url = postgres.new_database(server)
    yield url
    postgres.drop_database(server, url.partition("?")[0].rsplit("/", 1)[1])
