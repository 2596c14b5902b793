"""``matchlobby backup`` and ``restore`` of an SQLite database.

The backup is SQLite's online backup (``sqlite3.Connection.backup``) taken
inside one read transaction on the source: in WAL mode a reader never blocks
the server's writer, and the snapshot it holds keeps the copy consistent (the
backup never starts over because the server committed meanwhile: the pages
it copies are those of the snapshot). It is copied a few pages a step into a
temporary file beside the destination, made a standalone file (rollback
journal, not WAL), checked with ``PRAGMA quick_check``, synced and renamed
into place: a crash never leaves half a backup under the name asked for.

A restore holds the serve lock (:mod:`server.store.serve_lock`) of the
target for its whole length, so it refuses while a ``serve`` runs there and
no ``serve`` can start during it. The backup is checked first (header, schema
version, tables, ``PRAGMA integrity_check`` and ``foreign_key_check``), then
copied into the target with the backup API in one step: one write
transaction of SQLite's, so an interrupted restore leaves the target as it
was, and the target's own WAL, if any, is used rather than left behind to
be replayed over a file swapped in under it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from server.refused import Refused
from server.store.dbcheck import SQLITE_HEADER, DatabaseProblem, check_database, problem

PAGES_A_STEP = 1024  # 4 MiB of the usual 4 KiB pages a step
PAUSE = 0.001  # seconds before a step is tried again when the source is busy
PROBLEMS_SHOWN = 10  # integrity_check's lines shown at most
PG_DUMP_HEADER = b"PGDMP"  # how pg_dump's custom format begins
MOVE = "`matchlobby copy` it to move the lobby"


def kind_of(backup: Path) -> str | None:
    """``sqlite`` or ``postgresql``, as the file begins; ``None`` for anything else."""
    with open(backup, "rb") as f:
        head = f.read(len(SQLITE_HEADER))
    if head == SQLITE_HEADER:
        return "sqlite"
    return "postgresql" if head.startswith(PG_DUMP_HEADER) else None


def temporary_beside(path: Path) -> Path:
    """A name in ``path``'s folder (the rename into place stays on one file system)."""
    return path.with_name(f".{path.name}.partial-{os.getpid()}")


def check_destination(path: Path, force: bool) -> None:
    """A backup goes to a new file unless ``force``; never into a folder."""
    if path.is_dir():
        raise Refused(f"{path}: is a folder; give the backup file's name")
    if not path.parent.is_dir():
        raise Refused(f"{path}: the folder {path.parent} does not exist")
    if path.exists() and not force:
        raise Refused(f"{path}: the file exists; give another name, or --force to replace it")


def private_file(partial: Path) -> None:
    """A new, empty ``partial`` only its owner can read: a backup holds the accounts' password
    hashes and session tokens."""
    try:
        partial.unlink(missing_ok=True)
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError as e:
        raise Refused(f"{partial.parent}: cannot write the backup there: "
                      f"{e.strerror or e}") from None


def sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def move_into_place(partial: Path, path: Path) -> None:
    with open(partial, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(partial, path)
    sync_folder(path.parent)


@contextlib.contextmanager
def removed_unless_done(partial: Path) -> Iterator[None]:
    """Remove ``partial`` (and SQLite's files beside it) if the block fails."""
    try:
        yield
    except BaseException:
        for leftover in (partial, Path(f"{partial}-journal"), Path(f"{partial}-wal"),
                         Path(f"{partial}-shm")):
            with contextlib.suppress(OSError):
                leftover.unlink()
        raise


async def backup_sqlite(source: str, destination: Path, force: bool,
                        pages: int = PAGES_A_STEP,
                        progress: Callable[[int, int], object] | None = None) -> int:
    """Copy the database ``source`` (a server may be running on it) to ``destination``,
    ``pages`` a step, ``progress(remaining, total)`` called after each; its size in bytes."""
    if source in ("", ":memory:") or not Path(source).is_file():
        raise Refused(f"{source}: no such database file")
    if Path(source).resolve() == destination.resolve():
        raise Refused(f"{destination}: is the database itself; give another file")
    check_destination(destination, force)
    await check_database(source, quick_check=False, writable=False)
    partial = temporary_beside(destination)
    with removed_unless_done(partial):
        private_file(partial)
        src = sqlite3.connect(source, isolation_level=None)
        try:
            src.execute("PRAGMA busy_timeout = 10000")
            dst = sqlite3.connect(partial, isolation_level=None)
            try:
                try:
                    src.execute("BEGIN")
                    src.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the snapshot
                    src.backup(dst, pages=pages, sleep=PAUSE, progress=(
                        None if progress is None else lambda _, left, total: progress(left, total)))
                    src.execute("COMMIT")
                except sqlite3.Error as e:
                    raise problem(source, e, "copying it") from None
                dst.execute("PRAGMA journal_mode = DELETE")  # one file, no WAL beside it
                verdict = [str(r[0]) for r in dst.execute("PRAGMA quick_check")]
                if verdict != ["ok"]:
                    raise DatabaseProblem(f"{destination}: the copy does not read back whole "
                                          f"(PRAGMA quick_check: {verdict[0]})")
            finally:
                dst.close()
        finally:
            src.close()
        move_into_place(partial, destination)
    return destination.stat().st_size


def reader(path: str | Path) -> sqlite3.Connection:
    """A connection that only reads (a file marked for WAL opens without its ``-shm``)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    return conn


def _verdict(conn: sqlite3.Connection, pragma: str) -> list[str]:
    return [" ".join(str(r[0]).split()) for r in conn.execute(f"PRAGMA {pragma}")]


def _foreign_keys(conn: sqlite3.Connection) -> list[str]:
    """``PRAGMA foreign_key_check``'s rows as sentences."""
    return [f"table {table!r} row {rowid} refers to a missing row of {parent!r}"
            for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")]


@dataclass
class Integrity:
    """What ``PRAGMA integrity_check`` (``damage``: pages, indexes) and ``foreign_key_check``
    (``references``) found, each a line."""

    damage: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return self.damage + self.references


def integrity(path: str | Path) -> Integrity:
    """Check the (existing, matchlobby) database ``path``; the references only when its pages
    are whole."""
    conn = reader(path)
    try:
        try:
            found = _verdict(conn, "integrity_check")
        except sqlite3.Error as e:
            return Integrity([str(problem(path, e, "running PRAGMA integrity_check"))])
        if found != ["ok"]:
            damage = [f"{path}: the database is damaged (PRAGMA integrity_check: {line})"
                      for line in found[:PROBLEMS_SHOWN]]
            if len(found) > PROBLEMS_SHOWN:
                damage.append(f"{path}: and {len(found) - PROBLEMS_SHOWN} more problems of "
                              "PRAGMA integrity_check")
            return Integrity(damage)
        try:
            return Integrity(references=[f"{path}: {line}"
                                         for line in _foreign_keys(conn)[:PROBLEMS_SHOWN]])
        except sqlite3.Error as e:
            return Integrity([str(problem(path, e, "running PRAGMA foreign_key_check"))])
    finally:
        conn.close()


def players_in(path: Path) -> int | None:
    """The target's players: 0 for a missing or empty file or a lobby without any; ``None``
    when it cannot tell (not a matchlobby database, or unreadable)."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    try:
        conn = reader(path)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if not tables:
                return 0
            if "players" not in tables:
                return None
            return int(conn.execute("SELECT count(*) FROM players").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return None


async def check_backup_file(backup: Path) -> int:
    """Refuse a backup that is not a whole matchlobby database this version can use; its
    schema version."""
    if not backup.is_file():
        raise Refused(f"{backup}: no such backup file")
    if kind_of(backup) == "postgresql":
        raise Refused(f"{backup}: a PostgreSQL backup (pg_dump's); restore it into a "
                      f"PostgreSQL database (--db postgresql://…), then {MOVE}")
    try:
        await check_database(str(backup), quick_check=False, writable=False)
    except DatabaseProblem as e:
        raise Refused(f"{e} (nothing was restored)") from None
    conn = reader(backup)
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()
    if version == 0:
        raise Refused(f"{backup}: an empty database, not a matchlobby backup")
    problems = integrity(backup).problems
    if problems:
        raise Refused(f"{problems[0]} (the backup is not sound: nothing was restored)")
    return version


def restore_sqlite(backup: Path, target: Path) -> None:
    """Replace the contents of ``target`` (whose serve lock the caller holds) with ``backup``'s,
    in one write transaction."""
    src = reader(backup)
    try:
        dst = sqlite3.connect(target, isolation_level=None)
        try:
            dst.execute("PRAGMA busy_timeout = 10000")
            try:
                src.backup(dst)  # one step: one transaction on the target
            except sqlite3.Error as e:
                raise problem(target, e, f"restoring {backup} into it") from None
        finally:
            dst.close()
    finally:
        src.close()
