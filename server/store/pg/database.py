"""The lobby's database on PostgreSQL: one writer connection committing jobs in groups, and a
pool of connections for committed reads.

Jobs run one after another on the writer's connection, each in a savepoint of
the batch's transaction (taken before its first statement), exactly as on
SQLite: a job that raises is rolled back alone, and nobody hears of a job's
outcome before the commit holding it is done. The ``seq`` and match-id
counters are read from the database once the batch holds the write lock, handed
out in memory and the ``counters`` row written with the commit: numbers come
from the database, never from a process's memory, so another process writing
between two batches (a second writer, the command line) cannot be handed the
same ones. Jobs queued while a batch runs or commits join the next one, so one
commit (one WAL flush) serves every job that came meanwhile. Measured on the
bench machine this beats a pool of connections each committing its own job:
every job then pays its own flush, and ordering the rating of one player's
matches needs row locks the single writer does not.

Every write transaction holds the database's write lock (an advisory lock,
:data:`~server.store.pg.port.WRITE_LOCK`), as SQLite's ``BEGIN IMMEDIATE``
does: a ``matchlobby replay`` or ``user add`` in another process waits for the
batch in hand and the lobby waits for it, so an event close, a correction or
a replay has the ladders to itself, and the ``seq`` numbers (drawn after the
lock) follow the order the results are applied in.

If PostgreSQL goes away (a restart, a crash), the jobs of the batch in hand
fail with :class:`~server.store.faults.DatabaseUnavailable` and nothing of
them is answered as done; every later job tries to connect again first and
fails the same way at once while the server is down. Once it is back the
writer reloads its counters and the plugins' state from what was committed
and goes on by itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from server.api import Schema
from server.store.faults import CommitFailed, DatabaseUnavailable
from server.store.log import SqliteLog
from server.store.pg.faults import lost_connection
from server.store.pg.port import BACKEND, BEGIN_WRITE, FEED_CHANNEL, PgTx, PoolReader
from server.store.pg.schema import migrate, migrate_plugin
from server.store.pg.sql import pg_sql
from server.store.writer.pipeline import Hooks

T = TypeVar("T")
log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 5.0  # seconds: a server that does not answer by then is down
READERS = 4  # connections of the read pool


class Counters:
    """``seq`` and ``match`` as the database holds them when a batch takes the write lock,
    then handed out in memory (no read for each number); a job that fails gives its numbers
    back. ``ratings`` counts the commits that changed what the plugins hold, by any writer."""

    LOAD = ("SELECT (SELECT value FROM counters WHERE name = 'seq'), "
            "(SELECT coalesce(max(id), 0) FROM matches), "
            "(SELECT value FROM counters WHERE name = 'push'), "
            "(SELECT value FROM counters WHERE name = 'ratings')")

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    async def load(self, conn: Any) -> None:
        """One round trip; call it holding the write lock, so nobody moves them meanwhile."""
        seq, top, pushed, ratings = await conn.fetchrow(self.LOAD)
        self.values = {"seq": int(seq or 0), "match": int(top), "push": int(pushed or 0),
                       "ratings": int(ratings or 0)}

    def take(self, name: str) -> int:
        self.values[name] += 1
        return self.values[name]


class JobTx(PgTx):
    """A job's view of the batch's transaction: the plugin API's ``Tx`` and ``take``. Its
    savepoint is taken before its first statement (a job that runs none needs none, nor does
    the first job of a batch: rolling the transaction back undoes it alone). Savepoints are
    not released (a round trip each): ``ROLLBACK TO SAVEPOINT job`` goes back to the latest
    one of that name, the failing job's, and the commit ends them all."""

    def __init__(self, conn: Any, counters: Counters) -> None:
        super().__init__(conn)
        self.counters = counters
        self.saved = False
        self.pushes: list[tuple[str, str]] = []

    def take(self, name: str) -> int:
        return self.counters.take(name)

    def publish(self, audience: str, body: str) -> None:
        """Have every node's feed (:mod:`server.store.pg.feed`) hear ``body`` for ``audience``
        once the batch holding this job has committed; a job that fails publishes nothing."""
        self.pushes.append((audience, body))

    async def _save(self) -> None:
        if not self.saved:
            self.saved = True
            await self.conn.execute("SAVEPOINT job")

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self._save()
        await self.conn.execute(pg_sql(sql), *params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        await self._save()
        await super().executemany(sql, rows)

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self._save()
        await self.conn.execute(pg_sql(sql), *params)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        await self._save()
        return await super().fetchall(sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        await self._save()
        return await super().fetchone(sql, params)

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        await self._save()
        async for row in super().stream(sql, params):
            yield row


class _Queued:
    __slots__ = ("future", "job")

    def __init__(self, job: Callable[[JobTx], Awaitable[Any]]) -> None:
        self.job = job
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()


class PgDatabase(Hooks):
    """What :class:`server.store.Database` is on SQLite: ``write``, committed reads, hooks."""

    backend = BACKEND

    def __init__(self, url: str, batch_max: int = 64, schemas: Sequence[Schema] = (),
                 origin: str = "") -> None:
        super().__init__()
        self.path = url
        self.origin = origin  # the node the pushes of its jobs come from
        self.schemas = tuple(schemas)
        self.batch_max = batch_max
        self.writer: Any = None
        self.pool: Any = None
        self.counters = Counters()
        self.commits = 0
        self.queue: asyncio.Queue[_Queued | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._stale = False  # the writer lost its connection: reload before the next job
        self.ratings_seen = 0  # the ``ratings`` counter when this writer last looked
        self.fault: str | None = None  # never set: a PostgreSQL outage is not for good

    async def open(self) -> None:
        import asyncpg

        try:
            self.writer = await asyncpg.connect(self.path, timeout=CONNECT_TIMEOUT)
            await migrate(self.writer)
            for schema in self.schemas:
                await migrate_plugin(self.writer, schema)
            await self.counters.load(self.writer)
            self.ratings_seen = self.counters.values["ratings"]
            self.pool = await asyncpg.create_pool(self.path, min_size=1, max_size=READERS,
                                                  timeout=CONNECT_TIMEOUT)
        except BaseException:
            await self.close()
            raise
        self._task = asyncio.create_task(self._run(), name="db-writer")

    async def close(self) -> None:
        """Finish every queued job, then close the connections."""
        if self._task is not None:
            await self.queue.put(None)
            await self._task
            self._task = None
        if self.pool is not None:
            await self.pool.close()
        if self.writer is not None and not self.writer.is_closed():
            await self.writer.close()
        self.pool = self.writer = None

    async def write(self, job: Callable[[Any], Awaitable[T]]) -> T:
        """Run ``job`` inside the writer's transaction; return once it is committed."""
        if self._task is None:
            raise RuntimeError("the database is closed")
        queued = _Queued(job)
        self.queue.put_nowait(queued)
        result: T = await queued.future
        return result

    def writer_tx(self) -> PgTx:
        """Reads on the writer's connection while no job runs, or from ``on_job_failure``."""
        return PgTx(self.writer)

    @property
    def committed(self) -> PoolReader:
        return PoolReader(self.pool)

    @property
    def log(self) -> SqliteLog:
        return SqliteLog(self.committed)

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        return await self.committed.fetchall(sql, params)

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> Any | None:
        return await self.committed.fetchone(sql, params)

    def data_version(self) -> int | None:
        """No cheap "has anything been committed" on PostgreSQL: a poll always reads."""
        return None

    async def fetchone_soon(self, sql: str, params: Iterable[Any] = ()) -> Any | None:
        """A small indexed lookup (on SQLite read on the loop's thread; here from the pool)."""
        return await self.committed.fetchone(sql, params)

    async def fetchall_soon(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """A small indexed read (on SQLite read on the loop's thread; here from the pool)."""
        return await self.committed.fetchall(sql, params)

    # ---- the writer -----------------------------------------------------------------------

    async def _run(self) -> None:
        while (item := await self.queue.get()) is not None:
            batch = [item]
            stop = False
            try:
                await self._ready()
            except Exception as e:
                self._refuse(batch, e)
                continue
            stop = await self._batch(batch)
            if stop:
                break
        while not self.queue.empty():  # after close(): nothing is left waiting
            left = self.queue.get_nowait()
            if left is not None and not left.future.done():
                left.future.set_exception(CommitFailed("the database was closed"))

    async def _ready(self) -> None:
        """A working connection for the writer, and state reloaded after a lost one."""
        import asyncpg

        if self.writer is None or self.writer.is_closed():
            self._stale = True
            self.writer = await asyncpg.connect(self.path, timeout=CONNECT_TIMEOUT)
        if self._stale:
            await self.counters.load(self.writer)
            self.ratings_seen = self.counters.values["ratings"]
            self._stale = False
            if self.on_commit_failure is not None:
                await self.on_commit_failure()
            log.warning("the database is back; writes go on")

    async def _batch(self, batch: list[_Queued]) -> bool:
        """Run ``batch`` (and the jobs that come meanwhile) in one transaction and commit it;
        whether ``close()`` asked to stop."""
        conn = self.writer
        outcomes: list[tuple[_Queued, Any, BaseException | None]] = []
        pushes: list[tuple[str, str]] = []
        stop = False
        try:
            await conn.execute(BEGIN_WRITE)  # one round trip: a simple query of two statements
            await self.counters.load(conn)
            await self._follow()
            seq = self.counters.values["seq"]
            touched = False
            i = 0
            while i < len(batch):
                outcome = await self._job(conn, batch[i], pushes, first=i == 0)
                outcomes.append(outcome)
                touched = touched or (outcome[2] is None
                                      and (self.touched is None or self.touched()))
                i += 1
                if i == len(batch) and len(batch) < self.batch_max and not self.queue.empty():
                    nxt = self.queue.get_nowait()
                    if nxt is None:
                        stop = True
                    else:
                        batch.append(nxt)
            moved = self.counters.values["seq"]
            ending = "COMMIT" if moved == seq else \
                f"UPDATE counters SET value = {int(moved)} WHERE name = 'seq'; COMMIT"
            if touched:
                self.counters.values["ratings"] += 1
                ending = (f"UPDATE counters SET value = {self.counters.values['ratings']} "
                          "WHERE name = 'ratings'; ") + ending
            if pushes:
                ending = await self._publish(conn, pushes) + ending
            # One round trip: the counters (ints of ours, not text from outside) and COMMIT.
            await conn.execute(ending)
        except Exception as e:
            await self._failed(conn, batch, e)
            return stop
        self.ratings_seen = self.counters.values["ratings"]
        self.commits += 1
        for item, result, error in outcomes:
            if not item.future.done():
                if error is not None:
                    item.future.set_exception(error)
                else:
                    item.future.set_result(result)
        return stop

    async def _follow(self) -> None:
        """Holding the write lock: if another writer changed what the plugins hold since this
        one last looked, reload them (in this transaction, before any job of the batch)."""
        moved = self.counters.values["ratings"]
        if moved != self.ratings_seen:
            self.ratings_seen = moved
            if self.on_moved is not None:
                await self.on_moved()

    async def _publish(self, conn: Any, pushes: list[tuple[str, str]]) -> str:
        """Number the batch's pushes after the last one committed and write them; what the
        commit must also say: the counter, and the notification naming them (delivered to
        every listening node once the commit is done, in commit order)."""
        first = self.counters.values["push"] + 1
        last = first + len(pushes) - 1
        self.counters.values["push"] = last
        await conn.executemany("INSERT INTO pushes (pos, origin, audience, body) "
                               "VALUES ($1, $2, $3, $4)",
                               [(first + i, self.origin, audience, body)
                                for i, (audience, body) in enumerate(pushes)])
        return (f"UPDATE counters SET value = {last} WHERE name = 'push'; "
                f"SELECT pg_notify('{FEED_CHANNEL}', '{first}-{last}'); ")

    async def _job(self, conn: Any, item: _Queued, pushes: list[tuple[str, str]], first: bool
                   ) -> tuple[_Queued, Any, BaseException | None]:
        """Run one job (its pushes join ``pushes`` if it succeeds); the first of a batch needs
        no savepoint (the transaction is its own)."""
        tx = JobTx(conn, self.counters)
        tx.saved = first
        before = dict(self.counters.values)
        if self.on_job_start is not None:
            self.on_job_start()
        try:
            result = await item.job(tx)
        except Exception as e:
            if lost_connection(e, conn):
                raise
            self.counters.values = before
            if first:
                await conn.execute("ROLLBACK")
                await conn.execute(BEGIN_WRITE)
                await self.counters.load(conn)  # the lock was let go: anyone may have moved them
                await self._follow()
            elif tx.saved:
                await conn.execute("ROLLBACK TO SAVEPOINT job")
            if self.on_job_failure is not None:
                await self.on_job_failure()
            return item, None, e
        pushes += tx.pushes
        return item, result, None

    async def _failed(self, conn: Any, batch: list[_Queued], error: BaseException) -> None:
        """The batch could not be committed: none of its jobs is answered as done."""
        if lost_connection(error, conn):
            log.error("the database connection was lost (%s); writes are refused until it is "
                      "back", " ".join(str(error).split()) or type(error).__name__)
            self._stale = True
            try:
                await conn.close(timeout=1)
            except Exception:
                conn.terminate()
            self._refuse(batch, error)
            return
        log.error("transaction failed; nothing of it is kept", exc_info=error)
        try:
            await conn.execute("ROLLBACK")
        except Exception:
            log.exception("rollback failed")
        for item in batch:
            if not item.future.done():
                item.future.set_exception(CommitFailed(str(error)))
        self._stale = True  # reload the counters and the plugins from what was committed

    def _refuse(self, batch: list[_Queued], error: BaseException) -> None:
        for item in batch:
            if not item.future.done():
                item.future.set_exception(DatabaseUnavailable())
