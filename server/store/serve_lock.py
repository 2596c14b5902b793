"""One ``matchlobby serve`` a SQLite file, one a node name on PostgreSQL, said plainly to
the second one.

On SQLite the lobby's state (who is online, the live matches, the invitations, the
ladders' caches, the ids it hands out) lives in the serving process; a second ``serve`` on
the same file would disagree with the first about all of it. So ``serve`` holds ``flock`` on
the database file itself for as long as it runs (SQLite's own locks are POSIX record locks,
which ``flock`` does not touch; the kernel drops it when the process ends, however it ends),
and a second one refuses to start, naming the file.

On PostgreSQL several ``serve`` processes share the database as the lobby's nodes
(:mod:`server.lobby.sharing`), each under its own name (``[server] node``, or the host and
the pid): the lock is a session advisory lock on that name, on a connection of its own,
dropped by the server when that connection ends (a killed process's too). A second node
under a name in use refuses to start. Every node also holds a shared advisory lock that
``matchlobby restore`` takes alone for its whole length: a node refuses to start while a
restore runs (it would serve the old lobby over the restored one), and a restore refuses
while a node runs.

Command-line tools (``replay``, ``user add``, ``rate``) do not take it: they share the
database with a running server as before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import AsyncIterator, Iterator

from server.store.backends import is_postgres, shown
from server.store.dbcheck import DatabaseProblem

SERVE_LOCK = 0x6D6C7376  # pg_try_advisory_lock's key held while serving ("mlsv")
RESTORE_LOCK = 0x6D6C7273  # with 0: every node shares it, a restore holds it alone ("mlrs")

ALREADY = ("another matchlobby serve is running on this database; on SQLite the lobby is one "
           "process a database: stop that one first, or give this one another --db")
NAME_TAKEN = ("another matchlobby serve named {node!r} is running on this database; give "
              "this one another [server] node name (or none: the host and the pid), or stop "
              "that one first")
RESTORING = ("a matchlobby restore is running on this database; start this server once it "
             "has finished")


@contextlib.asynccontextmanager
async def serving(database: str, node: str = "") -> AsyncIterator[None]:
    """Hold the serve lock (the file's; on PostgreSQL, the node name's) for the ``with``
    block; ``DatabaseProblem`` if another process holds it."""
    if is_postgres(database):
        async with _pg_lock(database, node):
            yield
        return
    with _file_lock(database):
        yield


@contextlib.contextmanager
def _file_lock(path: str) -> Iterator[None]:
    try:
        # O_CREAT: a new lobby's file, which SQLite takes as an empty database
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        yield  # the database check that follows says what is wrong with the path
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DatabaseProblem(f"{path}: {ALREADY}") from None
            # a file system without flock: nothing to hold, serve as before
        yield
    finally:
        os.close(fd)


@contextlib.asynccontextmanager
async def _pg_lock(url: str, node: str) -> AsyncIterator[None]:
    from server.store.pg.port import connect

    try:
        conn = await connect(url)
    except Exception:
        yield  # opening the database next says what is wrong, as without the lock
        return
    try:
        if not await conn.fetchval(f"SELECT pg_try_advisory_lock_shared({RESTORE_LOCK}, 0)"):
            raise DatabaseProblem(f"{shown(url)}: {RESTORING}")
        if not await conn.fetchval(f"SELECT pg_try_advisory_lock({SERVE_LOCK}, hashtext($1))",
                                   node):
            raise DatabaseProblem(f"{shown(url)}: {NAME_TAKEN.format(node=node)}")
        yield
    finally:
        with contextlib.suppress(Exception):
            await conn.close()
