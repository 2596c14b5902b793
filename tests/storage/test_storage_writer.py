"""The group-committing writer (server/store/writer/pipeline.py): batches filled while the one
before commits, answers only after their own commit, failures kept to what they touch."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testkit.probes import wait_until

from server.api import Tx
from server.store import CommitFailed, Database, StorageFailed
from server.store.faults import READ_ONLY, current_command
from server.store.writer.jobs import JobTx
from server.store.writer.pipeline import GroupWriter

Committed = Callable[[], list[str]]


def _put(value: str) -> Any:
    """A job that only writes: it runs ahead of its transaction."""
    async def job(tx: Tx) -> str:
        await tx.later("INSERT INTO t (v) VALUES (?)", (value,))
        return value
    return job


def _writer(db: Database) -> GroupWriter:
    assert db._group is not None
    return db._group


async def _in_flight(db: Database) -> None:
    """Until a batch is with the commit thread (there, stuck behind another's lock)."""
    await wait_until(lambda: _writer(db).flying is not None, what="a batch in flight")


async def _filled(db: Database, jobs: int) -> None:
    """Until ``jobs`` jobs have run into the batch behind the one in flight, and none runs."""
    def filled() -> bool:
        w = _writer(db)
        with w.lock:
            return w.filling is not None and len(w.filling.items) == jobs and not w.in_job
    await wait_until(filled, what=f"{jobs} jobs run into the next batch")


async def _stalled(tmp_path: Path, db: Database) -> tuple[sqlite3.Connection, asyncio.Task[Any]]:
    """A first batch in flight, stuck on BEGIN IMMEDIATE behind another connection's lock."""
    other = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    first = asyncio.create_task(db.write(_put("first")))
    await _in_flight(db)
    assert not first.done()
    return other, first


async def test_a_committed_batch_is_freed_without_the_cyclic_collector(db: Database) -> None:
    """Its jobs' results and its queued writes go once the answers are out, by reference
    counting alone: a ČAS close's result holds a standing for every player of the ladder,
    and with the collector left to find it a close now and then took 40-90 ms longer."""

    class Result:  # weakly referenceable, unlike what jobs usually return
        pass

    refs: list[weakref.ref[Any]] = []

    async def job(tx: JobTx) -> Result:
        await tx.execute("INSERT INTO t (v) VALUES (?)", (f"v{len(refs)}",))  # queued
        refs.append(weakref.ref(tx._writes))
        out = Result()
        refs.append(weakref.ref(out))
        return out

    gc.collect()
    gc.disable()  # anything left in a reference cycle stays alive
    try:
        for _ in range(3):
            results = await asyncio.gather(*(db.write(job) for _ in range(4)))
            assert all(isinstance(r, Result) for r in results)
            del results
        earlier = list(refs)
        await db.write(job)  # the writer's locals let go of the last batch for this one's
        assert len(earlier) == 24
        assert [i for i, r in enumerate(earlier) if r() is not None] == []
        row = await db.fetchone("SELECT count(*) AS n FROM t")
        assert row is not None and row["n"] == 13
    finally:
        gc.enable()


async def test_a_write_failing_at_commit_keeps_nothing_of_its_transaction(db: Database) -> None:
    """Plain writes wait for the commit; one failing there fails the whole transaction."""
    def insert(*values: str) -> Any:
        async def job(tx: Tx) -> tuple[str, ...]:
            for value in values:
                await tx.execute("INSERT INTO t (v) VALUES (?)", (value,))
            return values
        return job

    results = await asyncio.gather(
        db.write(insert("x")), db.write(insert("y", "y")), db.write(insert("z")),
        return_exceptions=True)
    assert all(isinstance(r, CommitFailed) for r in results), results
    assert await db.fetchall("SELECT v FROM t") == []
    assert await db.write(insert("after")) == ("after",)  # the writer goes on
    got = await db.fetchall("SELECT v FROM t")
    assert [r["v"] for r in got] == ["after"]


async def test_waiting_for_the_write_lock_does_not_block_the_loop(tmp_path: Path,
                                                                  db: Database) -> None:
    other = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process (say `matchlobby user add`) writing
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def job(tx: Tx) -> None:
        await tx.fetchone("SELECT count(*) FROM t")  # a read: the transaction opens first
        await tx.execute("INSERT INTO t (v) VALUES ('late')")

    tick_task = asyncio.create_task(ticker())
    try:
        write = asyncio.create_task(db.write(job))
        await wait_until(lambda: _writer(db).in_job, what="the job waiting for BEGIN")
        began = ticks
        # the loop keeps running while BEGIN IMMEDIATE waits
        await wait_until(lambda: ticks >= began + 10, what="ten ticks of the loop")
        assert not write.done()
        other.execute("COMMIT")
        await asyncio.wait_for(write, 5)
        row = await db.fetchone("SELECT count(*) AS n FROM t")
        assert row is not None and row["n"] == 1
    finally:
        tick_task.cancel()
        other.close()


# ---- the pipeline: a batch is filled while the one before it commits ---------------------


def _written(how: str, value: str) -> Any:
    """A job that only writes, through ``how``: every way runs ahead of its transaction."""
    async def job(tx: Tx) -> str:
        sql = "INSERT INTO t (v) VALUES (?)"
        if how == "execute":
            await tx.execute(sql, (value,))
        elif how == "executemany":
            await tx.executemany(sql, [(value,)])
        else:
            await tx.later(sql, (value,))
        return value
    return job


@pytest.mark.parametrize("how", ["later", "execute", "executemany"])
async def test_jobs_run_while_the_batch_before_commits_and_answer_after_their_own(
        tmp_path: Path, db: Database, committed: Committed, how: str) -> None:
    other, first = await _stalled(tmp_path, db)
    later = [asyncio.create_task(db.write(_written(how, v))) for v in ("a", "b", "c")]
    await _filled(db, 3)
    assert not any(t.done() for t in later)  # run, but not answered before their commit
    commits = db.commits
    other.execute("COMMIT")
    other.close()
    assert await first == "first"
    seen = []
    for task in later:
        value = await task
        seen.append(value)
        assert value in committed()  # durable when answered
    assert seen == ["a", "b", "c"]
    assert db.commits == commits + 2  # the three filled one batch behind the first


async def test_a_reading_job_waits_for_the_commit_in_flight_and_sees_it(
        tmp_path: Path, db: Database) -> None:
    async def read(tx: Tx) -> list[str]:
        return [r[0] for r in await tx.fetchall("SELECT v FROM t ORDER BY id")]

    other, first = await _stalled(tmp_path, db)
    reader = asyncio.create_task(db.write(read))
    await wait_until(lambda: _writer(db).in_job, what="the reading job waiting for its BEGIN")
    other.execute("COMMIT")
    other.close()
    assert await first == "first"
    assert await reader == ["first"]


async def test_a_failed_commit_fails_the_batch_filled_on_top_of_it(
        tmp_path: Path, db: Database, committed: Committed) -> None:
    await db.write(_put("taken"))

    async def taken_twice(tx: Tx) -> None:
        await tx.later("INSERT INTO t (v) VALUES ('x')")
        await tx.later("INSERT INTO t (v) VALUES ('taken')")  # UNIQUE: fails at commit

    other = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    first = asyncio.create_task(db.write(taken_twice))
    await _in_flight(db)
    later = [asyncio.create_task(db.write(_put(v))) for v in ("a", "b")]
    await _filled(db, 2)
    other.execute("COMMIT")
    other.close()
    results = await asyncio.gather(first, *later, return_exceptions=True)
    assert all(isinstance(r, CommitFailed) for r in results), results
    assert committed() == ["taken"]
    assert await db.write(_put("after")) == "after"
    assert committed() == ["taken", "after"]


async def test_numbers_are_handed_out_in_memory_given_back_and_kept(tmp_path: Path) -> None:
    """``seq`` and match ids: no gaps from a job that raised, the same after a restart."""
    def numbers(fail: bool = False) -> Any:
        async def job(tx: JobTx) -> tuple[int, int]:
            got = (tx.take("seq"), tx.take("match"))
            if fail:
                raise ValueError("after taking numbers")
            return got
        return job

    db = Database(str(tmp_path / "w.db"))
    await db.open()
    try:
        assert await db.write(numbers()) == (1, 1)
        results = await asyncio.gather(db.write(numbers()), db.write(numbers(fail=True)),
                                       db.write(numbers()), return_exceptions=True)
        assert results[0] == (2, 2) and isinstance(results[1], ValueError)
        assert results[2] == (3, 3)  # the failed job's numbers were given back
    finally:
        await db.close()
    db = Database(str(tmp_path / "w.db"))
    await db.open()
    try:
        assert await db.write(numbers()) == (4, 1)  # seq is stored; no match row was inserted
        with sqlite3.connect(tmp_path / "w.db") as look:
            assert look.execute("SELECT value FROM counters WHERE name = 'seq'").fetchone() == (4,)
    finally:
        await db.close()


async def test_a_batch_holds_at_most_batch_max_jobs(tmp_path: Path, committed: Committed) -> None:
    db = Database(str(tmp_path / "w.db"), batch_max=4)
    await db.open()
    assert db.writer is not None
    db.writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
    try:
        commits = db.commits
        values = [f"v{i}" for i in range(10)]
        assert await asyncio.gather(*(db.write(_put(v)) for v in values)) == values
        assert db.commits - commits >= 3  # 10 jobs, at most 4 a transaction
        assert committed() == values
    finally:
        await db.close()


# ---- a file that fails ----------------------------------------------------------------------


async def _fill(tx: Tx) -> None:
    await tx.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT)")
    await tx.executemany("INSERT INTO big (body) VALUES (?)", [("x" * 100,)] * 2000)


async def _count_big(tx: Tx) -> int:
    row = await tx.fetchone("SELECT count(*) FROM big")
    return int(row[0]) if row else -1


async def _damaged_big_table(db: Database, path: Path) -> None:
    """Table ``big``, then every page of it overwritten on disk under the open database."""
    await db.write(_fill)
    assert await db.write(_count_big) == 2000
    other = sqlite3.connect(path, isolation_level=None)
    assert other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    pages = [r[0] for r in other.execute("SELECT pageno FROM dbstat WHERE name = 'big'")]
    size = other.execute("PRAGMA page_size").fetchone()[0]
    with open(path, "r+b") as f:
        for page in pages:
            f.seek((page - 1) * size)
            f.write(b"\xa5" * size)
    other.execute("CREATE TABLE poke (x)")  # a commit: the connections' caches are read afresh
    other.close()


async def test_a_damaged_page_met_by_a_read_stops_every_write(
        tmp_path: Path, db: Database, committed: Committed) -> None:
    await _damaged_big_table(db, tmp_path / "w.db")
    with pytest.raises(StorageFailed):
        await db.fetchall("SELECT count(*) FROM big")
    assert db.fault is not None
    with pytest.raises(StorageFailed):
        await db.write(_put("refused"))
    assert "refused" not in committed()


async def test_a_damaged_page_met_by_a_job_stops_every_write(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, committed: Committed) -> None:
    """A job's read meets a page gone bad on disk: its whole batch fails (an earlier job's
    write with it), the fault is logged once with the commands, and from then on every job
    is refused at once."""
    db = Database(str(tmp_path / "w.db"))
    await db.open()
    assert db.writer is not None
    db.writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
    try:
        await _damaged_big_table(db, tmp_path / "w.db")
        token = current_command.set("resign (alice)")
        try:
            results = await asyncio.gather(db.write(_put("lost")), db.write(_count_big),
                                           return_exceptions=True)
        finally:
            current_command.reset(token)
        assert all(isinstance(r, StorageFailed) for r in results), results
        assert str(results[0]) == READ_ONLY
        assert db.fault is not None and db.fault.startswith("SQLITE_CORRUPT"), db.fault
        with pytest.raises(StorageFailed):
            await db.write(_put("refused"))
        assert "lost" not in committed()
        assert "refused" not in committed()
    finally:
        await db.close()
    logged = [r.getMessage() for r in caplog.records
              if r.name == "server.store.writer.pipeline" and r.levelno >= logging.ERROR]
    assert len(logged) == 1, logged
    assert "database failure (SQLITE_CORRUPT" in logged[0] and "resign (alice)" in logged[0]
