"""What a failed write is called, and how a failed file is told from a failed statement.

A job whose transaction could not be committed gets :class:`CommitFailed`. An
error that says the file itself failed (:data:`STORAGE_FAULTS`: an I/O error,
a damaged page, a full disk) is different: writing on would build on a file
that may have lost what it holds, so the writer stops every write for good
(:class:`StorageFailed`) until the process is restarted.
"""

from __future__ import annotations

import sqlite3
from contextvars import ContextVar


class CommitFailed(Exception):
    """The transaction holding a job could not be committed; nothing of it was kept."""


class FlushFailed(Exception):
    """A queued write failed: the transaction is broken and nothing of it may be kept."""


class DatabaseUnavailable(CommitFailed):
    """The database server could not be reached (PostgreSQL): nothing of the job was kept, and
    writes go on by themselves once it is back."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message or UNAVAILABLE)


class StorageFailed(CommitFailed):
    """The database file failed; nothing was changed, and no write is tried until a restart."""


# SQLite's primary result codes for a file that failed, rather than a statement.
STORAGE_FAULTS = frozenset({sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL,
                            sqlite3.SQLITE_NOTADB})
UNAVAILABLE = ("The database is unavailable right now; nothing was changed. Please try again "
               "in a moment.")
READ_ONLY = ("The database failed (a disk error or damage): the server is read-only until the "
             "operator repairs the database and restarts it. Nothing was changed.")
# What the running task is doing, for the log line of a storage fault (the lobby sets it).
current_command: ContextVar[str] = ContextVar("current_command", default="the server's own work")


def storage_fault(error: BaseException) -> sqlite3.Error | None:
    """The SQLite error behind ``error`` (itself, its cause or context) that means the file failed."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        if isinstance(e, sqlite3.Error) and \
                (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF in STORAGE_FAULTS:
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None
