"""The lobby's database on PostgreSQL: one writer connection committing jobs in groups, and a
pool of connections for committed reads.

Jobs run one after another on the writer's connection, each in a savepoint of
the batch's transaction (taken before its first statement), exactly as on
SQLite: a job that raises is rolled back alone, and nobody hears of a job's
outcome before the commit holding it is done. Jobs queued while a batch runs or
commits join the next one, so one commit (one WAL flush) serves every job that
came meanwhile.

Each statement is a round trip, and the lobby's event loop has other work
between two of them, so a write whose outcome the job does not read waits
(:class:`JobTx`): a job's writes go together, as one simple query with their
values written in (:func:`~server.store.pg.sql.inliner`), before its next read,
else with the next job's savepoint or with the commit. Writes that fail there
are still the job's own: it is rolled back to its savepoint and fails (or runs
again, below) as if it had failed at the statement, and the jobs after it have
not started yet.

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
from server.store.pg.port import (
    BACKEND,
    BEGIN_WRITE,
    COPY_MIN_ROWS,
    FEED_CHANNEL,
    PENDING,
    PgTx,
    PoolReader,
)
from server.store.pg.schema import LOG_SEQUENCE, MATCH_IDS, migrate, migrate_plugin
from server.store.pg.sql import Inliner, inliner, literal, pg_sql
from server.store.writer.batching import deferrable
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
REBUILT = "UPDATE ladder_versions SET rebuilt = version WHERE ladder = ?"
VERSIONS = "SELECT ladder, version, rebuilt FROM ladder_versions"
NEXT_SEQ = f"SELECT nextval('{LOG_SEQUENCE}')"
HOLD_LADDER_SEQ = HOLD_LADDER + f", nextval('{LOG_SEQUENCE}')"  # RETURNING: once the row is held
NEXT_MATCH = f"SELECT nextval({MATCH_IDS})"
TAKE_PUSHES = ("UPDATE counters SET value = value + $1 WHERE name = 'push' "
               "RETURNING value")


AGAIN = "again"  # the batch's first job runs again, now (see PgDatabase._undo)
DEFER = "defer"  # a later job runs again, first in the next batch
RESERVED: ContextVar[int | None] = ContextVar("reserved_push", default=None)
"""The place in ``pushes`` the caller's last ``write(..., reserve=True)`` reserved."""


class _Batch:
    """What the jobs of one transaction share."""

    __slots__ = ("bounds", "carry", "names", "reuse", "waits_bounded", "wake")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """The transaction was begun again."""
        self.waits_bounded = False  # LOCK_WAIT set: a job before this one holds locks
        self.wake = False  # notify the feeds at the commit, though no push is added
        self.carry: list[str] = []  # the last job's writes, not sent yet
        self.bounds = False  # the carry begins with the savepoint that sets LOCK_WAIT
        self.names = 0
        self.reuse: str | None = None  # a savepoint the next job may take as its own

    def savepoint(self) -> tuple[str, str]:
        """A new savepoint's name and the statements that take it (the batch's first one sets
        :data:`LOCK_WAIT` too, outside it, so a job rolled back does not undo it). Each has a
        name of its own: rolling back to one that never ran (a query that failed to parse)
        fails instead of undoing the job before."""
        self.names += 1
        name = f"j{self.names}"
        if self.waits_bounded:
            return name, f"SAVEPOINT {name}"
        return name, f"SET LOCAL lock_timeout = '{LOCK_WAIT}'; SAVEPOINT {name}"


class JobTx(PgTx):
    """A job's view of the batch's transaction: the plugin API's ``Tx``, the numbers and the
    ladders. Its savepoint is taken before its first statement (the first job of a batch
    needs none: rolling the transaction back undoes it alone); savepoints are not released
    (a round trip each), the commit ends them all.

    A plain write (no ``RETURNING``) whose values can be written in waits in ``queued``; the
    job's next statement that must run now sends them first, in the same round trip as its
    savepoint when that is not taken yet. What is still queued when the job returns is sent
    by the writer, ahead of the next job's savepoint or with the commit."""

    def __init__(self, conn: Any, owner: PgDatabase, batch: _Batch, first: bool,
                 savepoint: str | None) -> None:
        super().__init__(conn)
        self.owner = owner
        self.batch = batch
        self.saved = first or savepoint is not None
        self.savepoint = savepoint
        self.queued: list[str] = []
        self.held: set[str] = set()
        self.pushes: list[tuple[str, str]] = []

    async def hold_ladder(self, ladder: str, rebuild: bool = False) -> None:
        """Nobody else changes ``ladder``'s ratings until this transaction ends, and the
        plugins' copy of it here is the database's (brought up to date first if another
        writer moved it). ``rebuild``: this job rewrites the ladder (a correction), so
        another writer's copy must be reloaded whole, not followed."""
        if ladder not in self.held:
            await self._ready()
            version, rebuilt = await self.conn.fetchrow(HOLD_LADDER, ladder)
            self.held.add(ladder)
            await self.owner.ladder_held(ladder, int(version), int(rebuilt))
        if rebuild:
            await self.execute(REBUILT, (ladder,))

    async def next_seq(self, ladder: str) -> int:
        """The place in the log of a unit rated on ``ladder`` (which it holds first: drawn
        with the hold, one round trip, when it is not held yet)."""
        if ladder in self.held:  # a sequence takes no lock: the queued writes can wait
            return int(await self.conn.fetchval(NEXT_SEQ))
        await self._ready()
        version, rebuilt, seq = await self.conn.fetchrow(HOLD_LADDER_SEQ, ladder)
        self.held.add(ladder)
        await self.owner.ladder_held(ladder, int(version), int(rebuilt))
        return int(seq)

    async def next_match_id(self) -> int:
        """From the sequence, which no rollback takes back: no savepoint needed yet."""
        return int(await self.conn.fetchval(NEXT_MATCH))

    def wake(self) -> None:
        """Have every node's feed read ``pushes`` again after the commit (a job that fills
        places reserved earlier adds no row)."""
        self.batch.wake = True

    def publish(self, audience: str, body: str) -> None:
        """Have every node's feed (:mod:`server.store.pg.feed`) hear ``body`` for ``audience``
        once the batch holding this job has committed; a job that fails publishes nothing."""
        self.pushes.append((audience, body))

    async def _ready(self) -> str | None:
        """Before a statement that runs now: the job's savepoint, if it has none yet, and the
        writes it queued, in one round trip (the tag of the last one)."""
        parts = self.queued
        saving = not self.saved
        if saving:
            self.savepoint, head = self.batch.savepoint()
            self.saved = True
            parts = [head, *parts]
        if not parts:
            return None
        self.queued = []
        if saving:  # the query's first statement: set even if the writes after it fail
            self.batch.waits_bounded = True
        status: str = await self.conn.execute("; ".join(parts))
        return status

    async def _inliner(self, sql: str) -> Inliner:
        """What writes the values into ``sql`` as the types of its parameters, learnt by
        preparing it once (in the job's savepoint: a statement that does not prepare fails
        the job here)."""
        found = self.owner.inliners.get(sql)
        if found is None:
            await self._ready()
            statement = await self.conn.prepare(pg_sql(sql))
            found = inliner(sql, [t.name for t in statement.get_parameters()])
            if len(self.owner.inliners) < 4096:
                self.owner.inliners[sql] = found
        return found

    async def _queue(self, sql: str, rows: list[Sequence[Any]]) -> bool:
        """Queue ``sql``, once for each of ``rows``, when it is a plain write whose values can
        all be written in."""
        if not deferrable(sql):
            return False
        render = await self._inliner(sql)
        texts = [render(row) for row in rows]
        if None in texts:
            return False
        self.queued += texts  # type: ignore[arg-type]
        return True

    async def rows(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> int:
        """Run ``statements`` now, in the round trip of the job's savepoint (if it takes it
        now) and of the writes queued before them; how many rows the last one returned or
        changed, from PostgreSQL's tag of it (a statement whose values cannot all be written
        in goes prepared, as do the ones after it)."""
        texts: list[str] = []
        for sql, params in statements:
            text = (await self._inliner(sql))(params)
            if text is None:
                break
            texts.append(text)
        self.queued += texts
        status = await self._ready()
        for sql, params in statements[len(texts):]:
            status = await self.conn.execute(pg_sql(sql), *params)
        count = (status or "").rpartition(" ")[2]
        return int(count) if count.isdigit() else 0

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        if not await self._queue(sql, [params]):
            await self._ready()
            await self.conn.execute(pg_sql(sql), *params)

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if not rows or (len(rows) < COPY_MIN_ROWS and await self._queue(sql, rows)):
            return
        await self._ready()
        await super().executemany(sql, rows)

    async def later(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self.execute(sql, params)

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        await self._ready()
        return await super().fetchall(sql, params)

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        await self._ready()
        return await super().fetchone(sql, params)

    async def stream(self, sql: str, params: Sequence[Any] = ()) -> AsyncIterator[Any]:
        await self._ready()
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


class _Ran:
    """A job that ran in the batch: its outcome, and what undoing it later needs."""

    __slots__ = ("error", "first", "item", "pushes", "republish", "result", "savepoint",
                 "seen")

    def __init__(self, item: _Queued, first: bool, seen: dict[str, int],
                 republish: bool) -> None:
        self.item = item
        self.first = first  # no savepoint: undoing it begins the transaction again
        self.savepoint: str | None = None
        self.seen = seen  # the ladders' versions before it
        self.republish = republish
        self.result: Any = None
        self.error: BaseException | None = None
        self.pushes: list[tuple[str, str]] = []


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
        self._committed = 0.0  # seconds the last commit took
        self.inliners: dict[str, Inliner] = {}  # a write's values written in (JobTx._inliner)

    async def open(self) -> None:
        import asyncpg

        try:
            self.writer = await _connect(self.path)
            await migrate(self.writer)
            for schema in self.schemas:
                await migrate_plugin(self.writer, schema)
            self.seen = self._seen(await self._versions(self.writer))
            self.pool = await asyncpg.create_pool(self.path, min_size=1, max_size=READERS,
                                                  timeout=CONNECT_TIMEOUT, reset=_as_left)
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
        if self.writer is None or self.writer.is_closed():
            self._stale = True
            self.writer = await _connect(self.path)
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
        done: list[_Ran] = []  # the jobs run, in order, failed ones too
        stop = ending = False
        state = _Batch()
        try:
            await self._begin(conn)
            i = 0
            while True:
                if (i == len(batch) and not ending and len(batch) < self.batch_max
                        and not stop and not self.queue.empty()):
                    nxt = self.queue.get_nowait()
                    if nxt is None:
                        stop = True
                    else:
                        batch.append(nxt)
                if ending or i == len(batch):
                    verdict = await self._commit(conn, done, state)
                    if verdict is None:
                        break
                    i -= 1  # the last job's writes failed at the commit: it is undone
                else:
                    savepoint, state.reuse = state.reuse, None
                    verdict = None
                    if state.carry:  # the writes the job before left go with this one's savepoint
                        name, head = state.savepoint()
                        verdict = await self._close(conn, done, state, head)
                        if verdict is None:
                            savepoint = name
                            state.waits_bounded = True
                        else:
                            i -= 1
                    if verdict is None:
                        verdict = await self._job(conn, batch[i], state, i == 0, savepoint)
                if verdict == AGAIN:  # the first job, in the transaction begun again
                    continue
                if verdict == DEFER:  # first in the next batch; this one commits what ran
                    self._deferred[0:0] = batch[i:]
                    ending = True
                    continue
                assert isinstance(verdict, _Ran)
                done.append(verdict)
                i += 1
        except Exception as e:
            await self._failed(conn, batch, e)
            self._deferred = [d for d in self._deferred if not d.future.done()]
            return stop
        self.commits += 1
        if self.on_commit is not None:
            self.on_commit(self._committed, len(done))
        for ran in done:
            future = ran.item.future
            if not future.done():
                if ran.error is not None:
                    future.set_exception(ran.error)
                else:
                    future.set_result(ran.result)
        return stop

    async def _commit(self, conn: Any, done: list[_Ran], state: _Batch) -> str | _Ran | None:
        """Commit the batch: ``None``; or the last job's queued writes failed on the way, and
        what became of it (:meth:`_undo`)."""
        pushes = [p for ran in done if ran.error is None for p in ran.pushes]
        reserving = [ran.item for ran in done if ran.error is None and ran.item.reserve]
        ending = "COMMIT"
        if pushes or reserving:
            if state.carry:  # sent before the pushes are numbered: a failure may drop some
                verdict = await self._close(conn, done, state, "")
                if verdict is not None:
                    return verdict
            ending = await self._publish(conn, pushes, reserving, state) + ending
        elif state.wake:
            ending = f"SELECT pg_notify('{FEED_CHANNEL}', 'filled'); " + ending
        started = time.perf_counter()
        verdict = await self._close(conn, done, state, ending)
        self._committed = time.perf_counter() - started
        return verdict

    async def _close(self, conn: Any, done: list[_Ran], state: _Batch, then: str
                     ) -> str | _Ran | None:
        """Send the writes the last job left, and ``then`` after them, in one round trip:
        ``None``; or they failed (``then`` did not run), and the job is undone and settled
        (:meth:`_undo`) as if it had failed at the statement. A failure of ``then`` itself
        (the commit) is the batch's."""
        sql = "; ".join([*state.carry, then] if then else state.carry)
        blamed, bounds = bool(state.carry), state.bounds
        state.carry, state.bounds = [], False
        try:
            status = await conn.execute(sql)
        except Exception as e:
            if lost_connection(e, conn) or not blamed or not conn.is_in_transaction():
                raise
            if bounds:  # set by the carry's first statement: no rollback to a savepoint undoes it
                state.waits_bounded = True
            ran = done.pop()
            return await self._undo(conn, ran, e, state)
        if then.endswith("COMMIT") and status != "COMMIT":  # never: a failed job was not undone
            raise CommitFailed(f"the transaction ended with {status}, not COMMIT")
        if bounds:
            state.waits_bounded = True
        return None

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

    async def _begin(self, conn: Any, before: str = "") -> None:
        """Begin a batch's transaction, then follow the ladders another writer moved
        (:meth:`_follow`). Its last statement counts the ladders whose version is not the one
        seen here, so a batch when none moved begins in one round trip: the versions are
        read only when one did (or a reload is due)."""
        status = await conn.execute(f"{before}{BEGIN_WRITE}; {self._unseen()}")
        if self._republish or status != "SELECT 0":
            await self._follow(conn)

    def _unseen(self) -> str:
        """A statement whose count is the ladders at a version other than the one seen here
        (those never seen included)."""
        names = {ladder: literal(ladder, "text") for ladder in self.seen}
        if not names or None in names.values():  # counts every ladder: all are read
            return "SELECT 1 FROM ladder_versions"
        cases = " ".join(f"WHEN {names[ladder]} THEN {int(version)}"
                         for ladder, version in self.seen.items())
        return f"SELECT 1 FROM ladder_versions WHERE version IS DISTINCT FROM CASE ladder {cases} END"

    async def _follow(self, conn: Any) -> None:
        """At a batch's start: the ladders another writer moved since the plugins here saw
        them are followed from what is committed (the batch has written nothing yet), before
        any job; a ladder rebuilt meanwhile reloads them whole. Then the plugins that reloaded
        inside the last batch, following its transaction, reload as committed
        (``on_republish``): only those, not every plugin."""
        versions = await self._versions(conn)
        moved = [ladder for ladder, (v, _) in versions.items() if self.seen.get(ladder) != v]
        rebuilt = any(r > self.seen.get(ladder, 0) for ladder, (_, r) in versions.items())
        if rebuilt:
            await self._moved(True, None)
        else:
            for ladder in sorted(moved):
                await self._moved(True, ladder)
            if self._republish and self.on_republish is not None:
                await self.on_republish()
        self._republish = False
        self.seen = self._seen(versions)

    async def ladder_held(self, ladder: str, version: int, rebuilt: int) -> None:
        """A job holds ``ladder``, now at ``version`` (its own change counted): if the copy
        here missed another writer's change, it follows it first, inside this transaction
        (the rows it reads are what the other writer committed: this batch has not changed
        the ladder yet). A plugin that cannot follow reloads whole, following the
        transaction, and the next batch reloads it as committed (:meth:`_follow`)."""
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

    async def _job(self, conn: Any, item: _Queued, state: _Batch, first: bool,
                   savepoint: str | None) -> str | _Ran:
        """Run one job; what became of it (:meth:`_undo` when it raised). Its queued writes
        are left in ``state.carry`` for the writer to send (:meth:`_close`)."""
        tx = JobTx(conn, self, state, first, savepoint)
        ran = _Ran(item, first, dict(self.seen), self._republish)
        if self.on_job_start is not None:
            self.on_job_start()
        try:
            ran.result = await item.job(tx)
        except Exception as e:
            if lost_connection(e, conn):
                raise
            ran.savepoint = tx.savepoint
            return await self._undo(conn, ran, e, state)
        ran.pushes = tx.pushes
        state.carry = tx.queued
        if tx.queued and not tx.saved:  # it only queued writes: its savepoint goes before them
            tx.savepoint, head = state.savepoint()
            state.carry = [head, *tx.queued]
            state.bounds = not state.waits_bounded
        ran.savepoint = tx.savepoint
        return ran

    async def _undo(self, conn: Any, ran: _Ran, error: BaseException, state: _Batch
                    ) -> str | _Ran:
        """Roll back a job that failed (the first of a batch: the whole transaction, begun
        again); it failed with ``error``: the settled :class:`_Ran`. A job that met another
        writer's lock or row runs again, once: ``AGAIN`` (the first job: now, in the
        transaction begun again, holding nothing) or ``DEFER`` (a later one: first in the
        next batch, this one committing what ran before it)."""
        self.seen, self._republish = ran.seen, ran.republish or self._republish
        state.carry, state.bounds = [], False
        if ran.first:
            await self._begin(conn, "ROLLBACK; ")
            state.reset()
        elif ran.savepoint is not None:
            await conn.execute(f"ROLLBACK TO SAVEPOINT {ran.savepoint}")
            state.reuse = ran.savepoint  # still there: the next job's, should it need one
        if self.on_job_failure is not None:
            await self.on_job_failure()
            self._republish = True  # what the plugins reloaded in it, published next batch
        if getattr(error, "sqlstate", None) in RERUN and not ran.item.rerun:
            ran.item.rerun = True
            self.reruns += 1
            log.info("a job met another writer's lock or row (%s); it runs again",
                     getattr(error, "sqlstate", "?"))
            return AGAIN if ran.first else DEFER
        ran.error = error
        return ran

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


async def _connect(url: str) -> Any:
    """The writer's connection: quoted literals read as written (backslashes too), which the
    queued writes' values rely on (:func:`~server.store.pg.sql.literal`)."""
    import asyncpg

    return await asyncpg.connect(url, timeout=CONNECT_TIMEOUT,
                                 server_settings={"standard_conforming_strings": "on"})


async def _as_left(conn: Any) -> None:
    """A read pool's connection goes back as it is: it only ever runs reads and transactions
    that end themselves (asyncpg rolls back one left open), so the reset query asyncpg sends
    by default (a round trip at every release) would find nothing to reset."""
