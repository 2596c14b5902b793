"""The one writer: jobs grouped into pipelined ``BEGIN IMMEDIATE … COMMIT`` transactions.

Durability rules (DESIGN.md): WAL, ``synchronous=FULL``, one writer, and
nobody learns a job's outcome before the commit that holds it. Jobs queued
while a transaction is being committed are grouped into the next one; a job
that raises is rolled back alone and does not sink the others.

Jobs are coroutines over aiosqlite's API, run on the event loop's thread
(:class:`JobConnection`). A batch starts *ahead of its transaction*: jobs that
only write (through :func:`write_later` or ``executemany``) queue their
statements, so the batch runs while the batch before it is still being
committed on the commit thread, and its ``BEGIN IMMEDIATE``, writes and
``COMMIT`` follow there as one step. That is what lets a live match's Python
work overlap the fsync of the matches before it. A job that reads (a
``SELECT``, ``RETURNING``, a ``lastrowid``) first waits for the commit in
flight, begins its batch's transaction (on aiosqlite's thread, as it may wait
for the write lock) and runs every write queued before it, so it sees exactly
what it would have seen had each statement run at once.

A batch is filled while the one before it commits, and is committed only if
that one was (it was computed on top of its effects): after a failure both
fail and the owner reloads its in-memory state (``on_commit_failure``).

An error that says the file itself failed (:data:`STORAGE_FAULTS`: an I/O
error, a damaged page, a full disk) is different: writing on would build on a
file that may have lost what it holds. The batch fails like any other, the
fault is logged once with the commands it hit (:meth:`GroupWriter.fail_storage`),
and from then on every job is refused with :class:`StorageFailed` without
touching the file, until the process is restarted.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import chain
from typing import Any, TypeVar, cast

import aiosqlite

log = logging.getLogger(__name__)
T = TypeVar("T")
Job = Callable[[aiosqlite.Connection], Awaitable[Any]]
Item = tuple[str, Any, bool, "_Later | None"]  # sql, parameters, executemany?, its cursor


class CommitFailed(Exception):
    """The transaction holding a job could not be committed; nothing of it was kept."""


class FlushFailed(Exception):
    """A queued write failed: the transaction is broken and nothing of it may be kept."""


class StorageFailed(CommitFailed):
    """The database file failed; nothing was changed, and no write is tried until a restart."""


# SQLite's primary result codes for a file that failed, rather than a statement.
STORAGE_FAULTS = frozenset({sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL,
                            sqlite3.SQLITE_NOTADB})
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


_WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLAC")
_deferrable_cache: dict[str, bool] = {}


def _deferrable(sql: str) -> bool:
    """A write whose outcome nothing reads back unless asked: it can wait."""
    known = _deferrable_cache.get(sql)
    if known is None:
        known = sql.lstrip()[:6].upper() in _WRITE_VERBS and "RETURNING" not in sql.upper()
        if len(_deferrable_cache) < 4096:
            _deferrable_cache[sql] = known
    return known


# ``INSERT [OR …] INTO table [(columns)] VALUES (?, …) [ON CONFLICT …]``: one row of ``?``
# marks, nothing else around it; a few rows of it can go as one statement.
_ONE_ROW = re.compile(
    r'^\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+[\w."]+\s*(?:\([^()]*\))?\s*'
    r"VALUES\s*(\((?:\s*\?\s*,)*\s*\?\s*\))\s*(?:ON\s+CONFLICT\b.*)?$",
    re.IGNORECASE | re.DOTALL)
GROUP_MAX = 64  # rows in one such statement (64 × 9 marks: far below SQLite's limit)
_row_marks: dict[str, tuple[int, int, int] | None] = {}  # sql → (start, end, marks) of the row
_grouped_sql: dict[tuple[str, int], str] = {}


def _grouped(sql: str, rows: list[Any]) -> tuple[str, tuple[Any, ...]] | None:
    """``executemany(sql, rows)`` as one statement of ``len(rows)`` VALUES rows, when it can be.

    The commit thread runs each statement with a round trip for the GIL
    (released while SQLite steps): a finished live match's two ratings rows,
    two history rows and two players of a match each cost one instead of two.
    SQLite inserts the rows of a multi-row VALUES one after the other, with the
    same conflict handling, so the rows, their ids and the changes counted are
    those of the rows one by one; a statement that fails keeps none of its rows,
    but a failing write fails its job or transaction either way. Rows that do
    not all match the marks are left to ``executemany`` (and its error).
    """
    if not 2 <= len(rows) <= GROUP_MAX:
        return None
    if sql in _row_marks:
        shape = _row_marks[sql]
    else:
        found = _ONE_ROW.match(sql)
        shape = None if found is None else (found.start(1), found.end(1),
                                             found.group(1).count("?"))
        if len(_row_marks) < 4096:
            _row_marks[sql] = shape
    if shape is None:
        return None
    start, end, marks = shape
    if not all(type(r) is tuple and len(r) == marks for r in rows):
        return None
    key = (sql, len(rows))
    text = _grouped_sql.get(key)
    if text is None:
        text = sql[:end] + (", " + sql[start:end]) * (len(rows) - 1) + sql[end:]
        if len(_grouped_sql) < 4096:
            _grouped_sql[key] = text
    return text, tuple(chain.from_iterable(rows))


class _Queued:
    __slots__ = ("command", "future", "job")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.command = current_command.get()
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()


class Counters:
    """Numbers handed out in memory, so that a job needs no read to get one.

    ``seq`` orders every rating ever applied (the ``counters`` row is set to it
    by each transaction that moved it); ``match`` is the last ``matches.id``.
    A job that raises gives its numbers back; a failed transaction reloads them.
    """

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def load(self, conn: sqlite3.Connection) -> None:
        seq = conn.execute("SELECT value FROM counters WHERE name = 'seq'").fetchone()
        top = conn.execute("SELECT coalesce(max(id), 0) FROM matches").fetchone()
        self.values = {"seq": int(seq[0]) if seq else 0, "match": int(top[0])}

    def take(self, name: str) -> int:
        self.values[name] += 1
        return self.values[name]


class _Later:
    """The sqlite3 cursor of a queued write; reading anything from it runs the writes first."""

    __slots__ = ("_writes", "cursor")

    def __init__(self, writes: _Writes) -> None:
        self._writes = writes
        self.cursor: sqlite3.Cursor | None = None

    def __getattr__(self, name: str) -> Any:
        if self.cursor is None:
            if not self._writes.begun:
                raise RuntimeError("the result of a write queued ahead of the transaction "
                                   "cannot be read; use execute() for a write read back")
            self._writes.flush()
        return getattr(self.cursor, name)

    def close(self) -> None:
        if self.cursor is not None:
            self.cursor.close()


class _Writes:
    """A batch's queued writes, in order, with each job's savepoint put in only when needed.

    A job's savepoint matters only once some of its writes have run inside the
    transaction (a job that raises before that just drops what it queued), so
    ``SAVEPOINT job`` goes in front of them when they first run.
    """

    def __init__(self, conn: sqlite3.Connection, counters: Counters) -> None:
        self.conn = conn
        self.counters = counters
        self.items: list[Item] = []
        self.begun = False  # the batch's transaction is open (some statement had to run)
        self.in_job = False
        self.job_start = 0
        self.job_ran = False  # some of the current job's writes have run
        self.job_counters: dict[str, int] = {}
        self.broken: BaseException | None = None  # an earlier job's write failed
        self.job_error: BaseException | None = None  # the current job's write failed
        self.error: BaseException | None = None
        self.opened: list[sqlite3.Cursor] = []  # cursors made on the loop's thread

    def queue(self, sql: str, params: Any, many: bool) -> _Later:
        later = _Later(self)
        if many:
            params = list(params)
            grouped = _grouped(sql, params)
            if grouped is not None:
                (sql, params), many = grouped, False
        self.items.append((sql, params, many, later))
        return later

    def begin_job(self) -> None:
        self.in_job, self.job_start, self.job_ran = True, len(self.items), False
        self.job_error = None
        self.job_counters = dict(self.counters.values)

    def end_job(self, ok: bool) -> None:
        """After a job: keep its writes, or drop them (rolling back those that ran)."""
        self.in_job = False
        if ok:
            if self.job_ran:
                self.items.append(("RELEASE job", (), False, None))
            return
        self.counters.values = self.job_counters
        if not self.job_ran:
            del self.items[self.job_start:]
            return
        self.items.clear()  # all the job's own, queued after its writes ran
        self.conn.execute("ROLLBACK TO job")
        self.conn.execute("RELEASE job")

    def flush(self) -> None:
        """Run every queued write now, on this thread (the transaction is open).

        A failing write of the current job fails that job (at the statement
        that needed the writes); one of an earlier job breaks the batch.
        """
        if self.broken is not None:
            raise FlushFailed(str(self.broken)) from self.broken
        assert self.begun, "writes run only inside the batch's transaction"
        own_from = len(self.items)  # items after this index are the current job's
        if self.in_job:
            if self.job_ran:
                own_from = -1
            else:
                own_from = self.job_start
                self.items.insert(own_from, ("SAVEPOINT job", (), False, None))
                self.job_ran = True
        items, self.items = self.items, []
        self.job_start = 0
        done = self.run(items)
        if done < len(items):
            error = self.error
            assert error is not None
            if done > own_from:
                self.job_error = error
                raise error
            self.broken = error
            raise FlushFailed(str(error)) from error

    def run(self, items: list[Item], keep: bool = True) -> int:
        """Run ``items`` in order; how many succeeded (``self.error`` says why one failed).

        ``keep``: give each queued write its cursor (on the loop's thread, where
        a job may read it; the commit thread keeps none, see :meth:`release`).
        """
        execute, executemany = self.conn.execute, self.conn.executemany
        for i, (sql, params, many, later) in enumerate(items):
            try:
                cursor = executemany(sql, params) if many else execute(sql, params)
            except Exception as e:
                self.error = e
                return i
            if keep and later is not None:
                later.cursor = cursor
                self.opened.append(cursor)
        return len(items)

    def release(self) -> None:
        """Close every cursor opened on the loop's thread, before the commit thread takes over.

        A sqlite3 cursor resets its statement when it is closed or freed. Were
        one freed on the loop's thread while the commit thread runs the same
        cached statement, SQLite would report API misuse; closed now, it has
        nothing left to reset.
        """
        for cursor in self.opened:
            cursor.close()
        self.opened.clear()


class JobConnection(aiosqlite.Connection):
    """The writer's connection as jobs see it: aiosqlite's API, run on the event loop's thread.

    Inside the batch's ``BEGIN IMMEDIATE`` transaction a statement never waits
    for a lock (the transaction holds the write lock; WAL readers do not block
    it) and does no fsync, so running it inline costs less than handing it to
    aiosqlite's thread and back. Plain writes are queued until something
    needs them. Relies on aiosqlite routing every Connection and Cursor call
    through ``_execute`` (true since well before 0.20).
    """

    def __init__(self, conn: sqlite3.Connection, iter_chunk_size: int, writes: _Writes,
                 begin: Callable[[], Awaitable[None]]) -> None:
        # aiosqlite's own __init__ would start a thread; this proxy needs none.
        self._running = True
        self._connection = conn
        self._iter_chunk_size = iter_chunk_size
        self._writes = writes
        self._begin = begin
        self._plain = conn.execute
        self._many = conn.executemany

    def write_later(self, sql: str, params: Any = (), many: bool = False) -> None:
        """Queue a write whose result nobody reads; no transaction needed yet."""
        self._writes.queue(sql, params, many)

    def take(self, name: str) -> int:
        """The next number of a :class:`Counters` sequence (``seq`` is stored at the commit)."""
        return self._writes.counters.take(name)

    async def _execute(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        writes = self._writes
        if isinstance(getattr(fn, "__self__", None), _Later):  # its close(): nothing to run
            return fn(*args, **kwargs)
        if fn == self._many and _deferrable(args[0]):
            return cast(T, writes.queue(args[0], args[1], True))
        if not writes.begun:
            await self._begin()
        if fn == self._plain and _deferrable(args[0]):
            return cast(T, writes.queue(args[0], args[1] if len(args) > 1 else (), False))
        writes.flush()
        result = fn(*args, **kwargs)
        if isinstance(result, sqlite3.Cursor):
            writes.opened.append(result)
        return result

    async def close(self) -> None:
        """Jobs do not close the writer."""

    def __del__(self) -> None:
        pass


async def write_later(conn: aiosqlite.Connection, sql: str, params: Any = ()) -> None:
    """A write whose result the job does not read: queued by the writer, else run now."""
    if isinstance(conn, JobConnection):
        conn.write_later(sql, params)
    else:
        await conn.execute(sql, params)


def _take(conn: aiosqlite.Connection, name: str) -> int:
    if not isinstance(conn, JobConnection):
        raise TypeError("numbers are handed out only inside the writer's jobs")
    return conn.take(name)


def next_seq(conn: aiosqlite.Connection) -> int:
    """The next number in the order ratings were applied (matches and event closes share it)."""
    return _take(conn, "seq")


def new_match_id(conn: aiosqlite.Connection) -> int:
    """The id of the next row of ``matches`` (inserted with it, so no ``lastrowid`` is needed)."""
    return _take(conn, "match")


@dataclass
class Hooks:
    """What the writer's owner does around jobs (the lobby keeps plugin state in step)."""

    on_commit_failure: Callable[[], Awaitable[None]] | None = None
    on_job_failure: Callable[[], Awaitable[None]] | None = None
    on_job_start: Callable[[], None] | None = None


@dataclass
class _Batch:
    writes: _Writes
    jobs: JobConnection | None = None
    items: list[_Queued] = field(default_factory=list)
    outcomes: list[tuple[_Queued, Any, BaseException | None]] = field(default_factory=list)
    landed: asyncio.Future[None] | None = None  # done when its commit has landed
    seq: int | None = None  # the ``seq`` counter to store with it, when it moved
    next: _Batch | None = None  # the batch the commit thread took on right after it


def _retire(b: _Batch) -> None:
    """Let go of what a batch holds once its jobs have their answers.

    A batch is in reference cycles (its ``jobs`` keeps a callback bound to
    it; each queued write's ``_Later`` points back at its ``_Writes``), so
    without this everything it holds, a ČAS close's outcome with a standing
    for every player of the ladder included, waits for the cyclic collector:
    a close then ended in a 40-90 ms collection now and then.
    """
    b.jobs = None
    b.items = []
    b.outcomes = []
    b.writes.items = []


class _CommitThread:
    """One thread for commits, fed through a queue (lighter than an executor)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._main, name="db-commit", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        while (work := self.jobs.get()) is not None:
            work()

    def run(self, work: Callable[[], None]) -> None:
        self.jobs.put(work)

    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join()


class GroupWriter:
    """Runs queued jobs in batches, one transaction each, filling a batch while the one
    before it commits (at most one commit in flight, so batches grow with the load).

    Commits run on a thread of their own. When one is done, that thread takes
    the batch filled meanwhile at once (unless a job of it is running), so the
    next commit does not wait for the event loop to hear of the last one; the
    replies go out when the loop does (:meth:`_landed`). ``filling``,
    ``in_job`` and ``flying`` are shared with it under ``lock``.
    """

    def __init__(self, conn: aiosqlite.Connection, hooks: Hooks, batch_max: int = 64) -> None:
        self.conn = conn
        self.hooks = hooks
        self.batch_max = batch_max
        self.counters = Counters()
        self.queue: asyncio.Queue[_Queued | None] = asyncio.Queue()
        self.filling: _Batch | None = None  # jobs run, waiting for the commit in flight
        self.flying: _Batch | None = None  # being committed
        self.in_job = False
        self.failed = False
        self.fault: str | None = None  # the storage fault that stopped every write
        self.commits = 0
        self.committer = _CommitThread()
        self.committed_seq = 0  # as stored by the last batch handed over
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.counters.load(self.raw)  # nothing runs on the connection yet
        self.committed_seq = self.counters.values["seq"]

    async def write(self, job: Job) -> Any:
        """Queue ``job``; its result once the commit holding it is done."""
        if self.fault is not None:
            raise StorageFailed(READ_ONLY)
        queued = _Queued(job)
        self.queue.put_nowait(queued)  # unbounded
        return await queued.future

    @property
    def raw(self) -> sqlite3.Connection:
        return self.conn._conn

    async def run(self) -> None:
        """Until ``None`` is queued: run each job as it comes, commit batch after batch."""
        try:
            while (item := await self.queue.get()) is not None:
                while item is not None:
                    if self.failed:
                        await self._recover()
                    if self.fault is not None:
                        if not item.future.done():
                            item.future.set_exception(StorageFailed(READ_ONLY))
                    else:
                        await self._run_one(item)
                    full = self.filling  # read once: the commit thread may take it meanwhile
                    if full is not None and len(full.items) >= self.batch_max:
                        if self.flying is None:
                            self._submit()
                        else:
                            await self._drain(one=True)  # full: it goes when the flight lands
                    if self.queue.empty():
                        break
                    item = self.queue.get_nowait()
                if self.flying is None:
                    self._submit()
                if item is None:
                    break
            while self.flying is not None or self.filling is not None:
                await self._drain()
                if self.failed:
                    await self._recover()
                else:
                    self._submit()
        finally:
            self.committer.stop()

    async def _run_one(self, item: _Queued) -> None:
        with self.lock:
            if self.filling is None:
                self.filling = self._new_batch()
            b = self.filling
            self.in_job = True
        try:
            await self._run_job(b, item)
        except Exception as e:
            with self.lock:
                self.filling = None
            await self._abandon(b, e)
        finally:
            with self.lock:
                self.in_job = False
        if self.failed:
            with self.lock:
                later, self.filling = self.filling, None
            if later is not None:  # computed on top of a failed commit
                await self._abandon(later, self._refusal())

    def _new_batch(self) -> _Batch:
        b = _Batch(_Writes(self.raw, self.counters))
        assert self.loop is not None
        b.landed = self.loop.create_future()
        b.jobs = JobConnection(self.raw, self.conn._iter_chunk_size, b.writes,
                               lambda: self._begin(b))
        return b

    async def _run_job(self, b: _Batch, item: _Queued) -> None:
        """Run one job into batch ``b``; raises when the batch itself is broken."""
        writes, jobs = b.writes, b.jobs
        assert jobs is not None
        b.items.append(item)
        writes.begin_job()
        if self.hooks.on_job_start is not None:
            self.hooks.on_job_start()
        try:
            result = await item.job(jobs)
        except Exception as e:
            if writes.broken is not None:
                raise FlushFailed(str(writes.broken)) from writes.broken
            if storage_fault(e) is not None:  # the file failed: nothing of the batch is kept
                raise
            writes.end_job(ok=False)
            if self.hooks.on_job_failure is not None:
                if not writes.begun:
                    await self._begin(b)
                writes.flush()  # the earlier jobs' writes, for the state it reloads
                await self.hooks.on_job_failure()
            b.outcomes.append((item, None, e))
            return
        lost = writes.broken or writes.job_error
        if lost is not None:  # the job went on after one of its writes failed
            raise FlushFailed(str(lost)) from lost
        writes.end_job(ok=True)
        b.outcomes.append((item, result, None))

    async def _abandon(self, b: _Batch, error: BaseException) -> None:
        """A batch that cannot be committed: roll back what ran, fail every job of it."""
        b.writes.release()
        if (fault := storage_fault(error)) is not None:
            error = self.fail_storage(fault, (item.command for item in b.items))
        if b.writes.begun:
            try:
                await self.conn.execute("ROLLBACK")
            except Exception:
                if self.fault is None:  # after a fault, its one log line says it all
                    log.exception("rollback failed")
        self._fail(b, error)

    def _submit(self) -> None:
        """Hand the filled batch to the idle commit thread (when there is one to hand)."""
        with self.lock:
            b = self.filling
            if (b is None or not b.items or self.flying is not None or self.in_job
                    or self.failed):
                return
            self.filling = None
            self._stamp(b)
            self.flying = b
        b.writes.release()
        self.committer.run(lambda: self._commit_on(b))

    def _stamp(self, b: _Batch) -> None:
        """The ``seq`` counter goes with the batch that moved it (under ``lock``)."""
        seq = self.counters.values["seq"]
        if seq != self.committed_seq:
            b.seq = self.committed_seq = seq

    def _commit_on(self, first: _Batch) -> None:
        """On the commit thread: commit ``first``, then each batch filled meanwhile."""
        b: _Batch | None = first
        while b is not None:
            error: BaseException | None = None
            try:
                self._commit(b)
            except BaseException as e:  # reported to the loop, which fails the batch
                error = e
            if error is None:
                with self.lock:
                    f = self.filling
                    if (f is not None and f.items and not self.in_job and not self.failed
                            and not f.writes.begun):  # begun: the loop hands it over
                        self.filling = None
                        self._stamp(f)
                        b.next = f
            assert self.loop is not None
            self.loop.call_soon_threadsafe(self._landed, b, error)
            b = b.next

    def _commit(self, b: _Batch) -> None:
        """On the commit thread: the batch's queued writes and ``COMMIT``."""
        conn = self.raw
        try:
            if not b.writes.begun:
                conn.execute("BEGIN IMMEDIATE")
            if b.writes.run(b.writes.items, keep=False) < len(b.writes.items):
                assert b.writes.error is not None
                raise b.writes.error
            if b.seq is not None:
                conn.execute("UPDATE counters SET value = ? WHERE name = 'seq'", (b.seq,))
            conn.execute("COMMIT")
        except BaseException as e:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    if storage_fault(e) is None:
                        log.exception("rollback failed")
            raise

    def _landed(self, b: _Batch, error: BaseException | None) -> None:
        """On the loop, when a commit is done: its replies go out, the next batch goes in."""
        with self.lock:
            assert b is self.flying and b.landed is not None
            self.flying = b.next
        b.landed.set_result(None)
        if error is not None:
            if (fault := storage_fault(error)) is not None:
                error = self.fail_storage(fault, (item.command for item in b.items))
            self._fail(b, error)
            with self.lock:
                later = None if self.in_job else self.filling  # nothing of it has run yet
                if later is not None:
                    self.filling = None
            if later is not None:
                self._fail(later, self._refusal())
            return
        self.commits += 1
        for item, result, err in b.outcomes:
            if not item.future.done():
                if err is not None:
                    item.future.set_exception(err)
                else:
                    item.future.set_result(result)
        _retire(b)
        self._submit()

    async def _drain(self, one: bool = False) -> None:
        """Wait until no commit is in flight (``one``: until the one in flight has landed)."""
        while (b := self.flying) is not None and b.landed is not None:
            await b.landed
            if one:
                return

    def _fail(self, b: _Batch, error: BaseException) -> None:
        if self.fault is None and not isinstance(error, CommitFailed):
            log.error("transaction failed; nothing of it is kept", exc_info=error)
        self.failed = True
        for item in b.items:
            if not item.future.done():
                item.future.set_exception(StorageFailed(READ_ONLY) if self.fault is not None
                                          else CommitFailed(str(error)))
        _retire(b)

    def _refusal(self) -> CommitFailed:
        """What the jobs of a batch computed on top of a failed one are told."""
        if self.fault is not None:
            return StorageFailed(READ_ONLY)
        return CommitFailed("an earlier transaction failed")

    def fail_storage(self, error: sqlite3.Error, commands: Iterable[str]) -> StorageFailed:
        """Stop every write for good after ``error`` (logged the first time); what to raise.

        No job starts after this. Jobs that ran before it (a read elsewhere found the
        fault) are committed as usual if SQLite can, and answered as committed.
        """
        if self.fault is None:
            code = getattr(error, "sqlite_errorname", "SQLite error")
            self.fault = f"{code}: {' '.join(str(error).split())}"
            hit = ", ".join(dict.fromkeys(commands)) or "no command"
            log.error("database failure (%s) in %s; every write is refused from now on and "
                      "reads are served as they can be. Stop the server, check the file "
                      "(PRAGMA integrity_check, matchlobby replay --check), repair or restore "
                      "it, and start the server again.", self.fault, hit)
        return StorageFailed(READ_ONLY)

    async def _recover(self) -> None:
        """After a failed transaction: reload what the failed jobs changed in memory.

        Not after a storage fault: no job runs again, and the file may not be readable.
        """
        await self._drain()
        if self.fault is not None:
            with self.lock:
                later, self.filling = self.filling, None
            if later is not None:
                await self._abandon(later, StorageFailed(READ_ONLY))
            self.failed = False
            return
        with self.lock:
            self.counters.load(self.raw)  # no commit is in flight
            self.committed_seq = self.counters.values["seq"]
        if self.hooks.on_commit_failure is not None:
            await self.hooks.on_commit_failure()
        self.failed = False

    async def _begin(self, b: _Batch) -> None:
        """Open the batch's transaction (a job reads): after the commit in flight."""
        await self._drain()
        if self.failed:
            b.writes.broken = self._refusal()
            raise b.writes.broken
        await self.conn.execute("BEGIN IMMEDIATE")  # on aiosqlite's thread: may wait for the lock
        b.writes.begun = True
