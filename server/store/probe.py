"""Is the database answering? The readiness check's question (``GET /readyz``), cheap to ask.

On PostgreSQL a ``SELECT 1`` on a connection of the read pool: never the writer's, so the
probe does not wait behind a commit batch. On SQLite the lobby's open connections keep
working on a file moved away or made unreadable (their descriptors stay open), so the probe
looks at the path instead, on a thread of its own: still the file the server opened, still
readable and writable, and a fresh read-only connection reads its schema. Either way the
answer is ``None`` (fine) or a short sentence saying what is wrong.

On a hung file system that thread may never come back (the probe stops waiting after a
while; the thread cannot be stopped). So there is at most one: while it runs, the probe
answers at once that the file has not answered, starting no other. It is a daemon thread,
not one of the default executor's: those hash passwords and begin transactions, and a stuck
one would neither fill their pool nor keep the process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from server.store.backends import is_postgres
from server.store.storage import LobbyDatabase

Probe = Callable[[], Awaitable[str | None]]


def database_probe(database: str, db: LobbyDatabase) -> Probe:
    """The probe for the lobby's ``db`` (opened from the ``database`` setting)."""
    if is_postgres(database):
        return lambda: _select_one(db)
    return SqliteProbe(database, db)


async def _select_one(db: LobbyDatabase) -> str | None:
    try:
        await db.fetchone_soon("SELECT 1")
    except Exception as e:  # a lost connection, refused, shutting down: not answering
        return f"the database does not answer ({type(e).__name__})"
    return None


class SqliteProbe:
    """The file at the configured path, as a new ``serve`` would find it."""

    def __init__(self, path: str, db: LobbyDatabase) -> None:
        self.path = path
        self.db = db
        try:
            st = os.stat(path)  # the file the server has just opened
            self.identity: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            self.identity = None
        self._thread: threading.Thread | None = None

    async def __call__(self) -> str | None:
        if self.db.fault is not None:
            return f"the database failed and takes no more changes ({self.db.fault})"
        if self._thread is not None and self._thread.is_alive():
            return "the database file has not answered the last check yet"
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | None] = loop.create_future()
        self._thread = threading.Thread(target=self._answer, args=(loop, answer),
                                        name="readiness check", daemon=True)
        self._thread.start()
        return await answer

    def _answer(self, loop: asyncio.AbstractEventLoop, answer: asyncio.Future[str | None]
                ) -> None:
        """Run the check on this thread and hand its answer to the loop, if anyone still waits."""
        try:
            problem = self._check()
        except Exception as e:
            problem = f"the database file check failed ({type(e).__name__})"
        with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile: nobody waits
            loop.call_soon_threadsafe(_settle, answer, problem)

    def _check(self) -> str | None:
        try:
            st = os.stat(self.path)
        except OSError as e:
            return f"the database file cannot be found ({e.strerror})"
        if self.identity is not None and (st.st_dev, st.st_ino) != self.identity:
            return "the database file was moved or replaced while serving"
        if not _readable_and_writable(self.path, st):
            return "the database file cannot be read and written (its permissions)"
        try:
            # as a URI (read-only): the path quoted, so ``#``, ``?`` or ``%`` in it name this file
            uri = Path(self.path).absolute().as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, timeout=1.0)
            try:
                conn.execute("PRAGMA schema_version").fetchone()
            finally:
                conn.close()
        except sqlite3.Error as e:
            return f"the database file cannot be read ({e})"
        return None


def _settle(answer: asyncio.Future[str | None], problem: str | None) -> None:
    if not answer.done():  # not given up on (the probe's time limit cancels it)
        answer.set_result(problem)


def _readable_and_writable(path: str, st: os.stat_result) -> bool:
    """``access(2)``; for root, which it always lets through, the file's owner bits: a file
    whose owner may not read and write it is one a restart (as another user) could not open."""
    if not os.access(path, os.R_OK | os.W_OK):
        return False
    if os.geteuid() == 0:
        return st.st_mode & (stat.S_IRUSR | stat.S_IWUSR) == stat.S_IRUSR | stat.S_IWUSR
    return True
