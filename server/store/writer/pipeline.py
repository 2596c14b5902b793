"""The one writer: jobs grouped into pipelined ``BEGIN IMMEDIATE … COMMIT`` transactions.

Durability rules (DESIGN.md): WAL, ``synchronous=FULL``, one writer, and
nobody learns a job's outcome before the commit that holds it. Jobs queued
while a transaction is being committed are grouped into the next one; a job
that raises is rolled back alone and does not sink the others.

Jobs run on the event loop's thread (``server.store.writer.jobs``). A batch
starts *ahead of its transaction*: jobs that only write queue their
statements, so the batch runs while the batch before it is still being
committed on the commit thread, and its ``BEGIN IMMEDIATE``, writes and
``COMMIT`` follow there as one step. That is what lets a live match's Python
work overlap the fsync of the matches before it. A job that reads first waits
for the commit in flight and begins its batch's transaction (on a worker
thread, as it may wait for the write lock).

A batch is filled while the one before it commits, and is committed only if
that one was (it was computed on top of its effects): after a failure both
fail and the owner reloads its in-memory state (``on_commit_failure``).

An error that says the file itself failed (``server.store.faults``) is
different: the batch fails like any other, the fault is logged once with the
commands it hit (:meth:`GroupWriter.fail_storage`), and from then on every job
is refused with ``StorageFailed`` without touching the file, until the
process is restarted.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from server.store.faults import (
    READ_ONLY,
    CommitFailed,
    FlushFailed,
    StorageFailed,
    storage_fault,
)
from server.store.port import begin_immediate
from server.store.writer.batch import Batch, Job, Queued, retire
from server.store.writer.batching import Counters, Writes
from server.store.writer.jobs import JobTx

log = logging.getLogger(__name__)


@dataclass
class Hooks:
    """What the writer's owner does around jobs (the lobby keeps plugin state in step)."""

    on_commit_failure: Callable[[], Awaitable[None]] | None = None
    on_job_failure: Callable[[], Awaitable[None]] | None = None
    on_job_start: Callable[[], None] | None = None
    # Several writers on one database (PostgreSQL: the nodes, the command line; unused on
    # SQLite, which one process serves): another writer moved a ladder (``None``: rebuilt
    # one, reload whole); ``True``: as committed, at a batch's start, ``False``: inside a job.
    # Returns whether every plugin followed it without reloading whole.
    on_moved: Callable[[bool, str | None], Awaitable[bool]] | None = None
    # Plugins reloaded following a batch's transaction (one could not follow inside it, or a
    # job failed): at the next batch's start, what that batch committed is theirs to publish
    # (those plugins alone reload, as committed).
    on_republish: Callable[[], Awaitable[None]] | None = None
    # A batch committed: the seconds its commit took and how many jobs it held (metrics).
    on_commit: Callable[[float, int], None] | None = None


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

    def __init__(self, conn: sqlite3.Connection, hooks: Hooks, batch_max: int = 64) -> None:
        self.conn = conn  # used by one thread at a time: the loop's, a worker's, the commit's
        self.hooks = hooks
        self.batch_max = batch_max
        self.counters = Counters()
        self.queue: asyncio.Queue[Queued | None] = asyncio.Queue()
        self.filling: Batch | None = None  # jobs run, waiting for the commit in flight
        self.flying: Batch | None = None  # being committed
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
        self.counters.load(self.conn)  # nothing runs on the connection yet
        self.committed_seq = self.counters.values["seq"]

    async def write(self, job: Job) -> Any:
        """Queue ``job``; its result once the commit holding it is done."""
        if self.fault is not None:
            raise StorageFailed(READ_ONLY)
        queued = Queued(job)
        self.queue.put_nowait(queued)  # unbounded
        return await queued.future

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

    async def _run_one(self, item: Queued) -> None:
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

    def _new_batch(self) -> Batch:
        b = Batch(Writes(self.conn, self.counters))
        assert self.loop is not None
        b.landed = self.loop.create_future()
        b.jobs = JobTx(self.conn, b.writes, lambda: self._begin(b))
        return b

    async def _run_job(self, b: Batch, item: Queued) -> None:
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

    async def _abandon(self, b: Batch, error: BaseException) -> None:
        """A batch that cannot be committed: roll back what ran, fail every job of it."""
        b.writes.release()
        if (fault := storage_fault(error)) is not None:
            error = self.fail_storage(fault, (item.command for item in b.items))
        if b.writes.begun:
            try:
                self.conn.execute("ROLLBACK")
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

    def _stamp(self, b: Batch) -> None:
        """The ``seq`` counter goes with the batch that moved it (under ``lock``)."""
        seq = self.counters.values["seq"]
        if seq != self.committed_seq:
            b.seq = self.committed_seq = seq

    def _commit_on(self, first: Batch) -> None:
        """On the commit thread: commit ``first``, then each batch filled meanwhile."""
        b: Batch | None = first
        while b is not None:
            error: BaseException | None = None
            started = time.perf_counter()
            try:
                self._commit(b)
            except BaseException as e:  # reported to the loop, which fails the batch
                error = e
            b.seconds = time.perf_counter() - started
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

    def _commit(self, b: Batch) -> None:
        """On the commit thread: the batch's queued writes and ``COMMIT``."""
        conn = self.conn
        try:
            if not b.writes.begun:
                conn.execute("BEGIN IMMEDIATE")
            if b.writes.run(b.writes.items, close=False) < len(b.writes.items):
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

    def _landed(self, b: Batch, error: BaseException | None) -> None:
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
        if self.hooks.on_commit is not None:
            self.hooks.on_commit(b.seconds, len(b.items))
        for item, result, err in b.outcomes:
            if not item.future.done():
                if err is not None:
                    item.future.set_exception(err)
                else:
                    item.future.set_result(result)
        retire(b)
        self._submit()

    async def _drain(self, one: bool = False) -> None:
        """Wait until no commit is in flight (``one``: until the one in flight has landed)."""
        while (b := self.flying) is not None and b.landed is not None:
            await b.landed
            if one:
                return

    def _fail(self, b: Batch, error: BaseException) -> None:
        if self.fault is None and not isinstance(error, CommitFailed):
            log.error("transaction failed; nothing of it is kept", exc_info=error)
        self.failed = True
        for item in b.items:
            if not item.future.done():
                item.future.set_exception(StorageFailed(READ_ONLY) if self.fault is not None
                                          else CommitFailed(str(error)))
        retire(b)

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
            self.counters.load(self.conn)  # no commit is in flight
            self.committed_seq = self.counters.values["seq"]
        if self.hooks.on_commit_failure is not None:
            await self.hooks.on_commit_failure()
        self.failed = False

    async def _begin(self, b: Batch) -> None:
        """Open the batch's transaction (a job reads): after the commit in flight."""
        await self._drain()
        if self.failed:
            b.writes.broken = self._refusal()
            raise b.writes.broken
        await begin_immediate(self.conn)
        b.writes.begun = True
