"""A real PostgreSQL for the tests: the cluster, a database a test, and plain reads of it.

A run starts one cluster (:mod:`testkit.session`: in the controller of a run with workers,
which names it to them in ``MATCHLOBBY_TEST_POSTGRES``, a URL of its maintenance database;
in a run without workers when a test first needs it) when PostgreSQL's programs are
installed: ``initdb`` and ``pg_ctl`` (run as the ``postgres`` user when the tests run as
root: they refuse root) in a temporary folder, listening on a Unix socket only, stopped and
removed when the run ends, however it ends (:mod:`testkit.reaper`). Without PostgreSQL the
tests that need it are skipped with :data:`MISSING`.

Each test gets a database of its own (:func:`new_database`), copied from a
template that holds only the admin (made by the real ``matchlobby user add``).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from testkit import reaper

ENV = "MATCHLOBBY_TEST_POSTGRES"
MISSING = ("PostgreSQL is not installed (apt-get install postgresql, or set "
           f"{ENV} to a server's URL); `make test` provides it")
T = TypeVar("T")


class PgDb(str):
    """A test's PostgreSQL database: its URL (what ``--db`` and ``database`` take), with the
    test's folder as ``parent`` (where the command line runs, as beside an SQLite file)."""

    parent: Path

    def __new__(cls, url: str, folder: Path) -> PgDb:
        db = super().__new__(cls, url)
        db.parent = folder
        return db

    def with_name(self, name: str) -> Path:
        """A file of the test's folder (as beside an SQLite file)."""
        return self.parent / name

    @property
    def name(self) -> str:
        return _database_of(self)


def binaries() -> Path | None:
    """The folder of PostgreSQL's programs, found as ``matchlobby backup`` finds ``pg_dump``
    (``None``: not installed)."""
    from server.refused import Refused
    from server.store.pg import backup

    try:
        return Path(backup.program("pg_ctl")).parent
    except Refused:
        return None


class Cluster:
    """A cluster started for this test run, on a Unix socket in a temporary folder."""

    def __init__(self, bindir: Path, durable: bool = False) -> None:
        """``durable``: PostgreSQL's default settings (fsync on), for benchmarks; the tests run
        without fsync (they kill processes, never the machine)."""
        self.bindir = bindir
        self.options = ("-c listen_addresses='' -c unix_socket_directories='{folder}' "
                        "-c max_connections=300"
                        + ("" if durable else " -c fsync=off -c full_page_writes=off"))
        self.folder = Path(tempfile.mkdtemp(prefix="matchlobby-pg-"))
        self.data = self.folder / "data"
        self.as_postgres = os.geteuid() == 0
        # Should this process die without its atexit (SIGTERM, SIGKILL), the reaper stops the
        # server and removes the folder: orders carried out newest first.
        self._orders = [reaper.remove_folder(self.folder)]
        if self.as_postgres:
            shutil.chown(self.folder, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                  "--no-sync", "-E", "UTF8", "--locale=C")
        self._orders.append(reaper.run_command(self._command("pg_ctl", *self._stop_args)))
        self.start()
        self.url = f"postgresql://postgres@/postgres?host={quote(str(self.folder))}"
        atexit.register(self.stop)

    @property
    def _stop_args(self) -> tuple[str, ...]:
        return ("-D", str(self.data), "-m", "immediate", "-w", "stop")

    def _command(self, program: str, *args: str) -> list[str]:
        cmd = [str(self.bindir / program), *args]
        return ["runuser", "-u", "postgres", "--", *cmd] if self.as_postgres else cmd

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(self._command(program, *args), check=True, capture_output=True, cwd="/")

    def stop(self) -> None:
        if self.data.exists():
            with _quietly():
                self._run("pg_ctl", *self._stop_args)
        shutil.rmtree(self.folder, ignore_errors=True)
        for order in self._orders:
            reaper.withdraw(order)
        self._orders = []

    def kill(self) -> None:
        """Stop the server at once, as a crash would (``pg_ctl stop -m immediate``)."""
        self._run("pg_ctl", *self._stop_args)

    def start(self) -> None:
        """Start the server (again after :meth:`kill`: it recovers from its WAL)."""
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-w",
                  "-o", self.options.format(folder=self.folder), "start")


class _quietly:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


_cluster: Cluster | str | None = None
_tried = False


def server_url() -> str | None:
    """The maintenance database's URL of the test run's PostgreSQL (``None``: there is none)."""
    global _cluster, _tried
    if os.environ.get(ENV):
        return os.environ[ENV]
    if not _tried:
        _tried = True
        bindir = binaries()
        if bindir is not None:
            _cluster = Cluster(bindir)
    return _cluster.url if isinstance(_cluster, Cluster) else None


def own_cluster() -> Cluster | None:
    """The cluster this process started (the tests that stop PostgreSQL need their own)."""
    server_url()
    return _cluster if isinstance(_cluster, Cluster) else None


def url_of(server: str, database: str) -> str:
    """``server``'s URL with another database name."""
    base, _, query = server.partition("?")
    base = base.rsplit("/", 1)[0]
    return f"{base}/{database}" + (f"?{query}" if query else "")


def run(coro: Awaitable[T]) -> T:
    """Run ``coro`` to its end on an event loop of its own (the caller's may be running)."""
    async def main() -> T:
        return await coro

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, main()).result()


async def _admin(sql: str, server: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(server)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


_numbers = itertools.count(1)


def new_database(server: str, template: str | None = None) -> str:
    """A new empty database (or a copy of ``template``: copied through the WAL, PostgreSQL's
    default, which needs no checkpoint and so takes half the time of a file copy for a
    template as small as a test's); its URL."""
    name = f"t{os.getpid()}_{next(_numbers)}"
    copy = f" TEMPLATE {template}" if template else ""
    run(_admin(f"CREATE DATABASE {name}{copy}", server))
    return url_of(server, name)


class _Kept:
    """The tests' plain reads and writes, on a few connections kept open by one event loop in
    a thread of its own. A connection made for each call (a thread, a loop, a backend's
    start: 20–40 ms on a busy run) made a check of a few hundred rows, one query each, take
    seconds. Calls for one database take turns on its connection. A kept connection whose
    backend has gone (the database dropped, the cluster restarted) is seen closed and
    replaced before use; a read that finds it gone only while it runs runs again once on a new
    one (a write does not: it may have been applied)."""

    KEEP = 4  # databases whose connection stays open: the latest used

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.started = threading.Lock()
        self.conns: OrderedDict[str, Any] = OrderedDict()
        self.turns: dict[str, asyncio.Lock] = {}

    def call(self, url: str, work: Callable[[Any], Awaitable[T]], again: bool = True) -> T:
        with self.started:
            if self.loop is None:
                self.loop = asyncio.new_event_loop()
                threading.Thread(target=self.loop.run_forever, name="testkit-postgres",
                                 daemon=True).start()
        return asyncio.run_coroutine_threadsafe(self._call(url, work, again), self.loop).result()

    async def _call(self, url: str, work: Callable[[Any], Awaitable[T]], again: bool) -> T:
        import asyncpg

        async with self.turns.setdefault(url, asyncio.Lock()):
            kept = self.conns.get(url)
            if kept is not None and not kept.is_closed():
                self.conns.move_to_end(url)
                try:
                    return await work(kept)
                except (asyncpg.ConnectionDoesNotExistError, asyncpg.InterfaceError):
                    if not (again and kept.is_closed()):
                        raise  # a write, or it failed another way: the caller's error
            self.conns.pop(url, None)
            conn = self.conns[url] = await asyncpg.connect(url)
            while len(self.conns) > self.KEEP:
                _, old = self.conns.popitem(last=False)
                with contextlib.suppress(Exception):
                    await old.close(timeout=5)
            return await work(conn)

    def forget(self, database: str | None = None) -> None:
        """Close the kept connections to ``database`` (about to be dropped), or all of them."""
        if self.loop is None or not self.conns:
            return

        async def close() -> None:
            for url in [u for u in self.conns if database in (None, _database_of(u))]:
                with contextlib.suppress(Exception):
                    await self.conns.pop(url).close(timeout=5)

        asyncio.run_coroutine_threadsafe(close(), self.loop).result()


_kept = _Kept()


def let_go() -> None:
    """Close every connection the tests' reads keep: a ``matchlobby`` command then finds the
    database as the test left it, with no client of the test's (a restore refuses to run
    while another client is connected)."""
    _kept.forget()


def _database_of(url: str) -> str:
    return url.partition("?")[0].rsplit("/", 1)[1]


def _fetch(url: str, sql: str, params: Sequence[Any]) -> list[Any]:
    from server.store.pg.sql import pg_sql

    async def go(conn: Any) -> list[Any]:
        return list(await conn.fetch(pg_sql(sql), *params))

    return _kept.call(url, go)


def drop_database(server: str, name: str) -> None:
    """Drop a test's database (its connections, should any be left, are ended)."""
    _kept.forget(name)
    run(_admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)", server))


def query(url: str, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row of ``sql`` (``?`` placeholders), as tuples (each statement on its own: no
    transaction is left open between calls)."""
    return [tuple(r) for r in _fetch(url, sql, params)]


def query_dicts(url: str, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The same, each row as a dict by column name."""
    return [dict(r) for r in _fetch(url, sql, params)]


def execute(url: str, sql: str, params: Sequence[Any] = ()) -> int:
    """Run one writing statement (committed at once); the rows it changed."""
    from server.store.pg.sql import pg_sql

    async def go(conn: Any) -> int:
        status: str = await conn.execute(pg_sql(sql), *params)
        last = status.rsplit(" ", 1)[-1]
        return int(last) if last.isdigit() else 0

    return _kept.call(url, go, again=False)


def executemany(url: str, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    """Run one writing statement for each of ``rows``, in one transaction."""
    from server.store.pg.sql import pg_sql

    async def go(conn: Any) -> None:
        async with conn.transaction():
            await conn.executemany(pg_sql(sql), rows)

    _kept.call(url, go, again=False)


def integrity(url: str) -> str:
    """``ok`` when ``amcheck`` finds every B-tree index of the lobby's tables whole, each
    holding exactly its table's rows (``bt_index_check(index, true)``); else what it found."""
    import asyncpg

    async def go() -> str:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
            checked = await conn.fetch(
                "SELECT bt_index_check(c.oid::regclass, true) FROM pg_index i "
                "JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE a.amname = 'btree' AND n.nspname = current_schema()")
            return "ok" if checked else "no indexes"
        except asyncpg.PostgresError as e:
            return str(e)
        finally:
            await conn.close()

    return run(go())


def private_cluster(durable: bool = False) -> Cluster | None:
    """A cluster of the caller's own (a test that stops PostgreSQL must not stop the others';
    a benchmark's, ``durable``), stopped when the run ends; ``None`` when PostgreSQL is not
    installed."""
    bindir = binaries()
    return None if bindir is None else Cluster(bindir, durable)
