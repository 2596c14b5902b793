"""Is this file a matchlobby database this server can use? Checked before anything opens it.

A server started on a damaged file would answer from whatever it managed to
load and acknowledge results on top of a broken log; one started on a file it
cannot read would print a traceback and stay up without listening. Every
command that opens the database (``serve``, ``replay``, ``user add``) calls
:func:`check_database` first and stops with its one-line reason (``replay``
without ``quick_check``: it reads those pages itself, and reports SQLite's
errors the same way).

In order: the path (a folder, unreadable, a missing folder), the SQLite
header, whether SQLite can read the schema at all, the schema version (newer
than this code, or none on a file that has tables), the tables, columns and
indexes that version must have (built by the migrations in memory and
compared), and ``PRAGMA quick_check``: every page of every table and index
read once, without comparing index entries with their rows (that is
``integrity_check``, several times slower). A missing file is fine: the
server creates it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from server.store.connection import open_connection
from server.store.schema import SCHEMA_VERSION, migrate

__all__ = ["DatabaseProblem", "check_database", "problem"]

SQLITE_HEADER = b"SQLite format 3\x00"
# A table, its columns and its indexes, by name: what a schema version must have.
Schema = dict[str, tuple[frozenset[str], frozenset[str]]]


class DatabaseProblem(Exception):
    """The database file cannot be used; the message says why, in one line."""


def _line(text: object) -> str:
    return " ".join(str(text).split())


_WHAT = {
    sqlite3.SQLITE_NOTADB: "not a usable SQLite database",
    sqlite3.SQLITE_CORRUPT: "the database is damaged",
    sqlite3.SQLITE_IOERR: "the file could not be read or written",
    sqlite3.SQLITE_FULL: "the disk is full",
}


def problem(path: str | Path, error: sqlite3.Error, doing: str) -> DatabaseProblem:
    """SQLite's ``error`` while ``doing`` something with ``path``, as one line."""
    what = _WHAT.get((getattr(error, "sqlite_errorcode", None) or 0) & 0xFF,
                     "cannot use the database")
    return DatabaseProblem(f"{path}: {what} ({_line(error)}, while {doing})")


async def expected_schema(version: int) -> Schema:
    """The tables, columns and indexes that the migrations up to ``version`` create."""
    conn = open_connection(":memory:")
    try:
        await migrate(conn, target=version)
        return _schema(conn)
    finally:
        conn.close()


def _schema(conn: sqlite3.Connection) -> Schema:
    out: Schema = {}
    tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                          "AND name NOT LIKE 'sqlite_%'").fetchall()
    for (table,) in tables:
        columns = frozenset(r[1] for r in conn.execute(f'PRAGMA table_info("{table}")'))
        indexes = frozenset(r[1] for r in conn.execute(f'PRAGMA index_list("{table}")'))
        out[table] = (columns, indexes)
    return out


def _missing(expected: Schema, found: Schema) -> str | None:
    """The first thing of ``expected`` that ``found`` lacks (extra tables or columns are fine)."""
    for table, (columns, indexes) in sorted(expected.items()):
        if table not in found:
            return f"table {table!r} is missing"
        have_columns, have_indexes = found[table]
        if lacking := sorted(columns - have_columns):
            return f"table {table!r} lacks column {lacking[0]!r}"
        if lacking := sorted(indexes - have_indexes):
            return f"index {lacking[0]!r} of table {table!r} is missing"
    return None


def _check_path(path: Path, writable: bool) -> bool:
    """Whether there is a file to check (False: a new database will be made there)."""
    if not path.exists():
        folder = path.parent
        if not folder.exists():
            raise DatabaseProblem(f"{path}: cannot create the database: the folder {folder} "
                                  "does not exist")
        if not folder.is_dir():
            raise DatabaseProblem(f"{path}: cannot create the database: {folder} is not a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise DatabaseProblem(f"{path}: cannot create the database: no permission to "
                                  f"write in {folder}")
        return False
    if path.is_dir():
        raise DatabaseProblem(f"{path}: is a folder, not a database file")
    try:
        with open(path, "r+b" if writable else "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError as e:
        raise DatabaseProblem(f"{path}: cannot open it for reading"
                              f"{' and writing' if writable else ''}: {e.strerror or e}") from None
    if head and head != SQLITE_HEADER:
        raise DatabaseProblem(f"{path}: not an SQLite database (it does not start with the "
                              "SQLite header)")
    return True


@contextlib.contextmanager
def _reading(path: Path, doing: str) -> Iterator[None]:
    """SQLite's errors while ``doing`` something as one line about the file."""
    try:
        yield
    except sqlite3.Error as e:
        raise problem(path, e, doing) from None


async def check_database(path: str, quick_check: bool = True, writable: bool = True) -> None:
    """Raise :class:`DatabaseProblem` unless ``path`` is a usable matchlobby database or absent.

    ``quick_check``: also run ``PRAGMA quick_check`` (reads the whole file once);
    ``writable``: the file must open for writing too.
    """
    file = Path(path)
    if not _check_path(file, writable):
        return
    conn: sqlite3.Connection | None = None
    try:
        with _reading(file, "opening it"):
            conn = sqlite3.connect(file, isolation_level=None)
            conn.execute("PRAGMA query_only = ON")
        with _reading(file, "reading its schema"):
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            found = _schema(conn)
        if version > SCHEMA_VERSION:
            raise DatabaseProblem(f"{path}: its schema version {version} is newer than this "
                                  f"matchlobby's ({SCHEMA_VERSION}); run the version that wrote it")
        if version == 0:
            if found:
                raise DatabaseProblem(f"{path}: an SQLite database, but not a matchlobby one "
                                      f"(tables {', '.join(sorted(found)[:5])} and no schema "
                                      "version)")
            return
        lacking = _missing(await expected_schema(version), found)
        if lacking is not None:
            raise DatabaseProblem(f"{path}: not a whole matchlobby database (schema {version}): "
                                  f"{lacking}")
        if quick_check:
            with _reading(file, "running PRAGMA quick_check"):
                problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise DatabaseProblem(f"{path}: the database is damaged (PRAGMA quick_check: "
                                      f"{len(problems)} problem(s), the first: "
                                      f"{_line(problems[0])})")
    finally:
        if conn is not None:
            conn.close()


def pg_problem(url: str, error: BaseException) -> DatabaseProblem | None:
    """A PostgreSQL database that cannot be used (unreachable, refused, newer than this code)
    as one line; ``None`` for an error of another kind."""
    from server.store.backends import shown
    from server.store.schema import SchemaError

    where = shown(url)
    if isinstance(error, SchemaError):
        return DatabaseProblem(f"{where}: {error}; run the version that wrote it")
    try:
        import asyncpg
    except ImportError:
        return DatabaseProblem(f"{where}: PostgreSQL needs the asyncpg package "
                               "(pip install 'matchlobby[postgresql]')")
    if isinstance(error, OSError | asyncio.TimeoutError | asyncpg.PostgresConnectionError
                  | asyncpg.InvalidAuthorizationSpecificationError
                  | asyncpg.InvalidCatalogNameError | asyncpg.InvalidPasswordError):
        return DatabaseProblem(f"{where}: cannot connect to the database server "
                               f"({_line(error) or type(error).__name__})")
    if isinstance(error, asyncpg.PostgresError):
        return DatabaseProblem(f"{where}: cannot use the database ({_line(error)})")
    return None
