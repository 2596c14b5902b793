"""The lobby's database on PostgreSQL: one writer connection committing jobs in groups, and a
pool of connections for committed reads.

Jobs run one after another on the writer's connection, each in a savepoint of
the batch's transaction (taken before its first statement), exactly as on
SQLite: a job that raises is rolled back alone, and nobody hears of a job's
outcome before the commit holding it is done. Jobs queued while a batch runs or
commits join the next one, so one commit (one WAL flush) serves every job that
came meanwhile.

Several writers share the database (the lobby's nodes, the command line), so
nothing is decided under one lock of the whole database: a batch takes the
database's write lock *shared* (:data:`~server.store.pg.port.WRITE_LOCK`; a
command line's replay, copy or import takes it alone and has the database to
itself), and a job locks what it changes by row: the match (``FOR UPDATE``), the
invitation, the event, and a ladder whose ratings it changes, by bumping the
ladder's ``ladder_versions`` row (:meth:`JobTx.hold_ladder`), held until the
commit. The version is the ladder's place in the log: a writer whose copy of the
ladder (the plugins' state) is older than the row follows it before rating
(the plugins read again what the other writer changed, or reload whole), so two
writers rating the same players rate them one after the other, each from what
the other committed. ``seq`` and match ids come from the database's
sequences; a ``seq`` is drawn holding its ladder, so one ladder's ``seq`` order
is the order its results were rated in.

Waiting for a lock while holding others is how writers deadlock; here only a
batch's first job may wait as long as it takes. A later job that would wait
longer than :data:`LOCK_WAIT` (or that PostgreSQL picks as a deadlock's victim, or
that finds a unique key taken under it) is rolled back to its savepoint, the
batch commits what ran before it, and it runs again first in the next batch,
reading afresh. The pushes a batch shares are numbered at its end, holding the
``push`` counter's row until the commit, so their order is the commit order; a
job written with ``reserve`` also gets a placeholder there, the place of the
pushes its command decides after the commit (:mod:`server.lobby.sharing`).

If PostgreSQL goes away (a restart, a crash), the jobs of the batch in hand
fail with :class:`~server.store.faults.DatabaseUnavailable` and nothing of
them is answered as done; every later job tries to connect again first and
fails the same way at once while the server is down. Once it is back the
writer reloads the plugins' state from what was committed and goes on by itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from server.api import Schema
from server.store.faults import CommitFailed, DatabaseUnavailable
from server.store.log import SqliteLog
from server.store.pg.faults import lost_connection
from server.store.pg.port import BACKEND, BEGIN_WRITE, FEED_CHANNEL, PENDING, PgTx, PoolReader
from server.store.pg.schema import LOG_SEQUENCE, MATCH_IDS, migrate, migrate_plugin
from server.store.pg.sql import pg_sql
from server.store.writer.pipeline import Hooks

T = TypeVar("T")
log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 5.0  # seconds: a server that does not answer by then is down
READERS = 4  # connections of the read pool


LOCK_WAIT = "20ms"
"""How long a job after its batch's first waits for a lock before it goes first in the next
batch (where it waits as long as it takes): a few batches of another writer."""
RERUN = frozenset({"55P03", "40P01", "23505"})
"""lock_not_available, deadlock_detected, unique_violation: another writer holds or took what
the job needs; it runs again, first in the next batch."""
HOLD_LADDER = ("INSERT INTO ladder_versions (ladder, version) VALUES ($1, 1) "
               "ON CONFLICT (ladder) DO UPDATE SET version = ladder_versions.version + 1 "
               "RETURNING version, rebuilt")
REBUILT = "UPDATE ladder_versions SET rebuilt = version WHERE ladder = $1"
VERSIONS = "SELECT ladder, version, rebuilt FROM ladder_versions"
NEXT_SEQ = f"SELECT nextval('{LOG_SEQUENCE}')"
HOLD_LADDER_SEQ = HOLD_LADDER + f", nextval('{LOG_SEQUENCE}')"  # RETURNING: once the row is held
NEXT_MATCH = f"SELECT nextval({MATCH_IDS})"
TAKE_PUSHES = ("UPDATE counters SET value = value + $1 WHERE name = 'push' "
               "RETURNING value")


AGAIN = "again"  # the batch's first job runs again (see PgDatabase._job)
RESERVED: ContextVar[int | None] = ContextVar("reserved_push", default=None)
"""The place in ``pushes`` the caller's last ``write(..., reserve=True)`` reserved."""


class _Batch:
    """What the jobs of one transaction share."""

    __slots__ = ("waits_bounded", "wake")

    def __init__(self) -> None:
        self.waits_bounded = False  # LOCK_WAIT set: a job before this one holds locks
        self.wake = False  # notify the feeds at the commit, though no push is added


class JobTx(PgTx):
    """A job's view of the batch's transaction: the plugin API's ``Tx``, the numbers and the
    ladders. Its savepoint is taken before its first statement (the first job of a batch
    needs none: rolling the transaction back undoes it alone). Savepoints are not released
    (a round trip each): ``ROLLBACK TO SAVEPOINT job`` goes back to the latest one of that
    name, the failing job's, and the commit ends them all."""

    def __init__(self, conn: Any, owner: PgDatabase, batch: _Batch) -> None:
        super().__init__(conn)
        self.owner = owner
        self.batch = batch
        self.saved = False
        self.held: set[str] = set()
        self.pushes: list[tuple[str, str]] = []

    async def hold_ladder(self, ladder: str, rebuild: bool = False) -> None:
        """Nobody else changes ``ladder``'s ratings until this transaction ends, and the
        plugins' copy of it here is the database's (brought up to date first if another
        writer moved it). ``rebuild``: this job rewrites the ladder (a correction), so
        another writer's copy must be reloaded whole, not followed."""
        if ladder not in self.held:
            await self._save()
            version, rebuilt = await self.conn.fetchrow(HOLD_LADDER, ladder)
            self.held.add(ladder)
            await self.owner.ladder_held(ladder, int(version), int(rebuilt))
        if rebuild:
            await self.conn.execute(REBUILT, ladder)

    async def next_seq(self, ladder: str) -> int:
        """The place in the log of a unit rated on ``ladder`` (which it holds first: drawn
        with the hold, one round trip, when it is not held yet)."""
        if ladder in self.held:
            return int(await self.conn.fetchval(NEXT_SEQ))
        await self._save()
        version, rebuilt, seq = await self.conn.fetchrow(HOLD_LADDER_SEQ, ladder)
        self.held.add(ladder)
        await self.owner.ladder_held(ladder, int(version), int(rebuilt))
        return int(seq)

    async def next_match_id(self) -> int:
        await self._save()
        return int(await self.conn.fetchval(NEXT_MATCH))

    def wake(self) -> None:
        """Have every node's feed read ``pushes`` again after the commit (a job that fills
        places reserved earlier adds no row)."""
        self.batch.wake = True

    def publish(self, audience: str, body: str) -> None:
        """Have every node's feed (:mod:`server.store.pg.feed`) hear ``body`` for ``audience``
        once the batch holding this job has committed; a job that fails publishes nothing."""
        self.pushes.append((audience, body))

    async def _save(self) -> None:
        if not self.saved:
            self.saved = True
            if self.batch.waits_bounded:
                await self.conn.execute("SAVEPOINT job")
            else:  # set outside the savepoint, so a rolled-back job does not undo it
                self.batch.waits_bounded = True
                await self.conn.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'; "
                                        "SAVEPOINT job")

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
    __slots__ = ("future", "job", "rerun", "reserve", "reserved")

    def __init__(self, job: Callable[[JobTx], Awaitable[Any]], reserve: bool) -> None:
        self.job = job
        self.rerun = False  # run again once after meeting another writer's lock
        self.reserve = reserve
        self.reserved: int | None = None
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
        self.commits = 0
        self.queue: asyncio.Queue[_Queued | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._stale = False  # the writer lost its connection: reload before the next job
        self.seen: dict[str, int] = {}  # each ladder's version the plugins' copy reflects
        self.follows = self.reloads = 0
        self._republish = False  # reloaded inside a batch: reload as committed next batch
        self._deferred: list[_Queued] = []  # to run first in the next batch
        self.reruns = 0
        self.fault: str | None = None  # never set: a PostgreSQL outage is not for good

    async def open(self) -> None:
        import asyncpg

        try:
            self.writer = await asyncpg.connect(self.path, timeout=CONNECT_TIMEOUT)
            await migrate(self.writer)
            for schema in self.schemas:
                await migrate_plugin(self.writer, schema)
            self.seen = self._seen(await self._versions(self.writer))
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

    async def write(self, job: Callable[[Any], Awaitable[T]], reserve: bool = False) -> T:
        """Run ``job`` inside the writer's transaction; return once it is committed.
        ``reserve``: its commit also writes a placeholder in ``pushes``, its position left in
        :data:`RESERVED` for the caller, which fills it with the pushes the command causes
        (:mod:`server.lobby.sharing`): other servers deliver them in commit order."""
        if self._task is None:
            raise RuntimeError("the database is closed")
        queued = _Queued(job, reserve)
        self.queue.put_nowait(queued)
        result: T = await queued.future
        if queued.reserved is not None:
            RESERVED.set(queued.reserved)  # the caller's context: this is a coroutine of it
        return result

    async def fill(self, rows: Sequence[tuple[int, str]], audience: str) -> None:
        """Fill places reserved by this writer's commits (``pos``, body) in a transaction of
        its own on a connection of the read pool, beside the writer's queue, and wake the
        feeds: nobody else writes these rows."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany("UPDATE pushes SET audience = $1, body = $2 "
                                   "WHERE pos = $3 AND origin = $4",
                                   [(audience, body, pos, self.origin) for pos, body in rows])
            await conn.execute(f"SELECT pg_notify('{FEED_CHANNEL}', 'filled')")

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
        while True:
            item = self._deferred.pop(0) if self._deferred else await self.queue.get()
            if item is None:
                break
            try:
                await self._ready()
            except Exception as e:
                self._refuse([item], e)
                continue
            if await self._batch([item]):
                while self._deferred:  # close() came meanwhile: the jobs put off run first
                    await self._batch([self._deferred.pop(0)])
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
            self.seen = self._seen(await self._versions(self.writer))
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
        state = _Batch()
        try:
            await conn.execute(BEGIN_WRITE)  # one round trip: a simple query of two statements
            await self._follow(conn)
            i = 0
            while i < len(batch):
                outcome = await self._job(conn, batch[i], pushes, state, first=i == 0)
                if outcome == AGAIN:
                    state = _Batch()  # the transaction was begun again
                    continue
                if outcome is None:  # put off: it goes first next time, and the batch ends
                    self._deferred.insert(0, batch[i])
                    break
                assert not isinstance(outcome, str)
                if i == 0 and outcome[2] is not None:
                    state = _Batch()
                outcomes.append(outcome)
                i += 1
                if i == len(batch) and len(batch) < self.batch_max and not self.queue.empty():
                    nxt = self.queue.get_nowait()
                    if nxt is None:
                        stop = True
                    else:
                        batch.append(nxt)
            ending = "COMMIT"
            reserving = [item for item, _, error in outcomes
                         if error is None and item.reserve]
            if pushes or reserving:
                ending = await self._publish(conn, pushes, reserving, state) + ending
            elif state.wake:
                ending = f"SELECT pg_notify('{FEED_CHANNEL}', 'filled'); " + ending
            started = time.perf_counter()
            await conn.execute(ending)
            committed = time.perf_counter() - started
        except Exception as e:
            await self._failed(conn, batch, e)
            self._deferred = [d for d in self._deferred if not d.future.done()]
            return stop
        self.commits += 1
        if self.on_commit is not None:
            self.on_commit(committed, len(outcomes))
        for item, result, error in outcomes:
            if not item.future.done():
                if error is not None:
                    item.future.set_exception(error)
                else:
                    item.future.set_result(result)
        return stop

    @staticmethod
    async def _versions(conn: Any) -> dict[str, tuple[int, int]]:
        """Each ladder's version and the version of its latest rebuild."""
        return {row[0]: (int(row[1]), int(row[2])) for row in await conn.fetch(VERSIONS)}

    @staticmethod
    def _seen(versions: dict[str, tuple[int, int]]) -> dict[str, int]:
        return {ladder: v for ladder, (v, _) in versions.items()}

    async def _moved(self, committed: bool, ladder: str | None) -> bool:
        """Have the plugins follow ``ladder`` (``None``: reload them whole); whether every
        plugin followed it (else one reloaded whole)."""
        if self.on_moved is None:
            return True
        followed = await self.on_moved(committed, ladder)
        if followed:
            self.follows += 1
        else:
            self.reloads += 1
        return followed

    async def _follow(self, conn: Any) -> None:
        """At a batch's start: the ladders another writer moved since the plugins here saw
        them are followed from what is committed (the batch has written nothing yet), before
        any job; a ladder rebuilt meanwhile (or a reload inside a batch) reloads them whole."""
        versions = await self._versions(conn)
        moved = [ladder for ladder, (v, _) in versions.items() if self.seen.get(ladder) != v]
        rebuilt = any(r > self.seen.get(ladder, 0) for ladder, (_, r) in versions.items())
        if self._republish or rebuilt:
            self._republish = False
            await self._moved(True, None)
        else:
            for ladder in sorted(moved):
                await self._moved(True, ladder)
        self.seen = self._seen(versions)

    async def ladder_held(self, ladder: str, version: int, rebuilt: int) -> None:
        """A job holds ``ladder``, now at ``version`` (its own change counted): if the copy
        here missed another writer's change, it follows it first, inside this transaction
        (the rows it reads are what the other writer committed: this batch has not changed
        the ladder yet). A plugin that cannot follow reloads whole, following the
        transaction, and the next batch reloads it as committed."""
        seen = self.seen.get(ladder, 0)
        if seen != version - 1:
            whole = rebuilt > seen
            # what a whole reload covers, read before it: a ladder another writer moves
            # meanwhile is found moved at its hold, not taken as seen
            versions = self._seen(await self._versions(self.writer)) if whole else None
            if not await self._moved(False, None if whole else ladder):
                self._republish = True
            if versions is not None:
                self.seen = versions
        self.seen[ladder] = version

    async def _publish(self, conn: Any, pushes: list[tuple[str, str]],
                       reserving: list[_Queued], state: _Batch) -> str:
        """Number the batch's pushes after the last one committed and write them, then a
        placeholder for each job in ``reserving`` (its command's pushes come later), holding
        the ``push`` counter's row until the commit (so the numbers follow the commits); what
        the commit must also say: the notification (delivered to every listening node once
        the commit is done, in commit order)."""
        if state.waits_bounded:  # the counter's row waits for a commit in hand, never long
            await conn.execute("SET LOCAL lock_timeout = 0")
        rows = [*pushes, *((PENDING, "") for _ in reserving)]
        last = int(await conn.fetchval(TAKE_PUSHES, len(rows)))
        first = last - len(rows) + 1
        await conn.executemany("INSERT INTO pushes (pos, origin, audience, body) "
                               "VALUES ($1, $2, $3, $4)",
                               [(first + i, self.origin, audience, body)
                                for i, (audience, body) in enumerate(rows)])
        for i, item in enumerate(reserving):
            item.reserved = first + len(pushes) + i
        return f"SELECT pg_notify('{FEED_CHANNEL}', '{first}-{last}'); "

    async def _job(self, conn: Any, item: _Queued, pushes: list[tuple[str, str]],
                   state: _Batch, first: bool
                   ) -> tuple[_Queued, Any, BaseException | None] | str | None:
        """Run one job (its pushes join ``pushes`` if it succeeds); the first of a batch needs
        no savepoint (the transaction is its own). A job that met another writer's lock or
        row is rolled back and runs again, once: ``AGAIN`` (the first job: now, in the
        transaction begun again, holding nothing) or ``None`` (a later one: first in the next
        batch, this one committing what ran before it)."""
        tx = JobTx(conn, self, state)
        tx.saved = first
        seen = dict(self.seen)
        republish = self._republish
        if self.on_job_start is not None:
            self.on_job_start()
        try:
            result = await item.job(tx)
        except Exception as e:
            if lost_connection(e, conn):
                raise
            self.seen, self._republish = seen, republish or self._republish
            rerun = getattr(e, "sqlstate", None) in RERUN and not item.rerun
            if first:
                await conn.execute("ROLLBACK")
                await conn.execute(BEGIN_WRITE)
                await self._follow(conn)
            elif tx.saved:
                await conn.execute("ROLLBACK TO SAVEPOINT job")
            if self.on_job_failure is not None:
                await self.on_job_failure()
            if rerun:
                item.rerun = True
                self.reruns += 1
                log.info("a job met another writer's lock or row (%s); it runs again",
                         getattr(e, "sqlstate", "?"))
                return AGAIN if first else None
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
        self._stale = True  # reload the plugins from what was committed

    def _refuse(self, batch: list[_Queued], error: BaseException) -> None:
        for item in batch:
            if not item.future.done():
                item.future.set_exception(DatabaseUnavailable())
