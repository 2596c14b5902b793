"""The group-committing writer: jobs on the loop, queued writes and COMMIT on the commit thread."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
import weakref
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from server.storage import CommitFailed, Database, StorageFailed, rows
from server.writer import (
    GROUP_MAX,
    READ_ONLY,
    _grouped,
    current_command,
    new_match_id,
    next_seq,
    write_later,
)


async def _open(tmp_path: Path) -> Database:
    db = Database(str(tmp_path / "w.db"))
    await db.open()
    assert db.writer is not None
    await db.writer.execute("CREATE TABLE IF NOT EXISTS t "
                            "(id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
    return db


async def test_jobs_use_the_aiosqlite_api_inline(tmp_path: Path) -> None:
    db = await _open(tmp_path)

    async def job(conn: aiosqlite.Connection) -> dict[str, Any]:
        async with conn.execute("INSERT INTO t (v) VALUES (?)", ("a",)) as cur:
            first = cur.lastrowid
        await conn.executemany("INSERT INTO t (v) VALUES (?)", [("b",), ("c",)])
        async with conn.execute("SELECT count(*) FROM t") as cur:
            row = await cur.fetchone()
        seen = [r["v"] async for r in await conn.execute("SELECT v FROM t ORDER BY id")]
        inserted = await conn.execute_insert("INSERT INTO t (v) VALUES (?)", ("d",))
        rows = await conn.execute_fetchall("SELECT v FROM t WHERE id > ?", (first,))
        return {"first": first, "count": row[0] if row else None, "seen": seen,
                "inserted": inserted[0] if inserted else None,
                "rows": [r[0] for r in rows]}

    try:
        out = await db.write(job)
        assert out == {"first": 1, "count": 3, "seen": ["a", "b", "c"], "inserted": 4,
                       "rows": ["b", "c", "d"]}
        row = await db.fetchone("SELECT count(*) AS n FROM t")
        assert row is not None and row["n"] == 4
    finally:
        await db.close()


async def test_a_committed_batch_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    """Its jobs' results and its queued writes go once the answers are out, by reference
    counting alone: a ČAS close's result holds a standing for every player of the ladder,
    and with the collector left to find it a close now and then took 40-90 ms longer."""
    db = await _open(tmp_path)

    class Result:  # weakly referenceable, unlike what jobs usually return
        pass

    refs: list[weakref.ref[Any]] = []

    async def job(conn: aiosqlite.Connection) -> Result:
        await conn.execute("INSERT INTO t (v) VALUES (?)", (f"v{len(refs)}",))  # queued
        refs.append(weakref.ref(conn._writes))  # type: ignore[attr-defined]
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
        await db.close()


async def test_a_job_that_raises_is_rolled_back_alone(tmp_path: Path) -> None:
    db = await _open(tmp_path)

    def insert(value: str, then_fail: bool = False, read_back: bool = False) -> Any:
        async def job(conn: aiosqlite.Connection) -> str:
            async with conn.execute("INSERT INTO t (v) VALUES (?)", (value,)) as cur:
                if read_back:  # the write runs now, inside the job's savepoint
                    assert cur.lastrowid is not None
            if then_fail:
                raise ValueError(f"{value} fails")
            return value
        return job

    try:
        commits = db.commits
        results = await asyncio.gather(
            db.write(insert("x")), db.write(insert("y", then_fail=True)),
            db.write(insert("w", then_fail=True, read_back=True)), db.write(insert("z")),
            return_exceptions=True)
        assert results[0] == "x" and results[3] == "z"
        assert isinstance(results[1], ValueError) and isinstance(results[2], ValueError)
        assert db.commits == commits + 1  # one group commit for the four jobs
        rows = await db.fetchall("SELECT v FROM t ORDER BY v")
        assert [r["v"] for r in rows] == ["x", "z"]
    finally:
        await db.close()


async def test_a_failing_statement_that_is_read_back_fails_its_job_alone(tmp_path: Path) -> None:
    db = await _open(tmp_path)

    def insert(value: str, twice: bool = False) -> Any:
        async def job(conn: aiosqlite.Connection) -> str:
            await conn.execute("INSERT INTO t (v) VALUES (?)", (value,))
            if twice:  # UNIQUE violation, seen by the job when it reads the count
                await conn.execute("INSERT INTO t (v) VALUES (?)", (value,))
                await rows(conn, "SELECT count(*) FROM t")
            return value
        return job

    try:
        results = await asyncio.gather(
            db.write(insert("x")), db.write(insert("y", twice=True)), db.write(insert("z")),
            return_exceptions=True)
        assert results[0] == "x" and results[2] == "z"
        assert isinstance(results[1], sqlite3.IntegrityError)
        got = await db.fetchall("SELECT v FROM t ORDER BY v")
        assert [r["v"] for r in got] == ["x", "z"]
    finally:
        await db.close()


async def test_a_write_failing_at_commit_keeps_nothing_of_its_transaction(tmp_path: Path) -> None:
    """Plain writes wait for the commit; one failing there fails the whole transaction."""
    db = await _open(tmp_path)

    def insert(*values: str) -> Any:
        async def job(conn: aiosqlite.Connection) -> tuple[str, ...]:
            for value in values:
                await conn.execute("INSERT INTO t (v) VALUES (?)", (value,))
            return values
        return job

    try:
        results = await asyncio.gather(
            db.write(insert("x")), db.write(insert("y", "y")), db.write(insert("z")),
            return_exceptions=True)
        assert all(isinstance(r, CommitFailed) for r in results), results
        assert await db.fetchall("SELECT v FROM t") == []
        assert await db.write(insert("after")) == ("after",)  # the writer goes on
        got = await db.fetchall("SELECT v FROM t")
        assert [r["v"] for r in got] == ["after"]
    finally:
        await db.close()


async def test_queued_writes_run_before_anything_that_reads(tmp_path: Path) -> None:
    """A later job, or a later statement of the same job, sees every write queued before it."""
    db = await _open(tmp_path)

    async def write(conn: aiosqlite.Connection) -> None:
        await conn.executemany("INSERT INTO t (v) VALUES (?)", ((v,) for v in "abc"))
        await conn.execute("UPDATE t SET v = 'B' WHERE v = 'b'")

    async def read(conn: aiosqlite.Connection) -> list[str]:
        return [r[0] for r in await rows(conn, "SELECT v FROM t ORDER BY id")]

    try:
        results = await asyncio.gather(db.write(write), db.write(read))
        assert results[1] == ["a", "B", "c"]
    finally:
        await db.close()


async def test_waiting_for_the_write_lock_does_not_block_the_loop(tmp_path: Path) -> None:
    db = await _open(tmp_path)
    other = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process (say `matchlobby user add`) writing
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    async def job(conn: aiosqlite.Connection) -> None:
        await conn.execute("INSERT INTO t (v) VALUES ('late')")

    tick_task = asyncio.create_task(ticker())
    try:
        write = asyncio.create_task(db.write(job))
        await asyncio.sleep(0.3)
        assert not write.done()
        assert ticks >= 10  # the loop kept running while BEGIN IMMEDIATE waited
        other.execute("COMMIT")
        await asyncio.wait_for(write, 5)
        row = await db.fetchone("SELECT count(*) AS n FROM t")
        assert row is not None and row["n"] == 1
    finally:
        tick_task.cancel()
        other.close()
        await db.close()


# ---- the pipeline: a batch is filled while the one before it commits ---------------------


def _put(value: str) -> Any:
    """A job that only writes: it runs ahead of its transaction."""
    async def job(conn: aiosqlite.Connection) -> str:
        await write_later(conn, "INSERT INTO t (v) VALUES (?)", (value,))
        return value
    return job


async def _stalled(tmp_path: Path, db: Database) -> tuple[sqlite3.Connection, asyncio.Task[Any]]:
    """A first batch in flight, stuck on BEGIN IMMEDIATE behind another connection's lock."""
    other = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    first = asyncio.create_task(db.write(_put("first")))
    await asyncio.sleep(0.2)
    assert not first.done()
    return other, first


def _committed(tmp_path: Path) -> list[str]:
    """What another connection sees: only what has been committed."""
    with sqlite3.connect(tmp_path / "w.db") as look:
        return [r[0] for r in look.execute("SELECT v FROM t ORDER BY id")]


async def test_jobs_run_while_the_batch_before_commits_and_answer_after_their_own(
        tmp_path: Path) -> None:
    db = await _open(tmp_path)
    try:
        other, first = await _stalled(tmp_path, db)
        later = [asyncio.create_task(db.write(_put(v))) for v in ("a", "b", "c")]
        await asyncio.sleep(0.2)
        assert not any(t.done() for t in later)  # run, but not answered before their commit
        commits = db.commits
        other.execute("COMMIT")
        other.close()
        assert await first == "first"
        seen = []
        for task in later:
            value = await task
            seen.append(value)
            assert value in _committed(tmp_path)  # durable when answered
        assert seen == ["a", "b", "c"]
        assert db.commits == commits + 2  # the three filled one batch behind the first
    finally:
        await db.close()


async def test_a_reading_job_waits_for_the_commit_in_flight_and_sees_it(tmp_path: Path) -> None:
    db = await _open(tmp_path)

    async def read(conn: aiosqlite.Connection) -> list[str]:
        return [r[0] for r in await rows(conn, "SELECT v FROM t ORDER BY id")]

    try:
        other, first = await _stalled(tmp_path, db)
        reader = asyncio.create_task(db.write(read))
        await asyncio.sleep(0.1)
        other.execute("COMMIT")
        other.close()
        assert await first == "first"
        assert await reader == ["first"]
    finally:
        await db.close()


async def test_a_failed_commit_fails_the_batch_filled_on_top_of_it(tmp_path: Path) -> None:
    db = await _open(tmp_path)
    await db.write(_put("taken"))

    async def taken_twice(conn: aiosqlite.Connection) -> None:
        await write_later(conn, "INSERT INTO t (v) VALUES ('x')")
        await write_later(conn, "INSERT INTO t (v) VALUES ('taken')")  # UNIQUE: fails at commit

    try:
        other = sqlite3.connect(tmp_path / "w.db", isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        first = asyncio.create_task(db.write(taken_twice))
        await asyncio.sleep(0.2)
        later = [asyncio.create_task(db.write(_put(v))) for v in ("a", "b")]
        await asyncio.sleep(0.1)
        other.execute("COMMIT")
        other.close()
        results = await asyncio.gather(first, *later, return_exceptions=True)
        assert all(isinstance(r, CommitFailed) for r in results), results
        assert _committed(tmp_path) == ["taken"]
        assert await db.write(_put("after")) == "after"
        assert _committed(tmp_path) == ["taken", "after"]
    finally:
        await db.close()


async def test_numbers_are_handed_out_in_memory_given_back_and_kept(tmp_path: Path) -> None:
    """``seq`` and match ids: no gaps from a job that raised, the same after a restart."""
    db = await _open(tmp_path)

    def numbers(fail: bool = False) -> Any:
        async def job(conn: aiosqlite.Connection) -> tuple[int, int]:
            got = (next_seq(conn), new_match_id(conn))
            if fail:
                raise ValueError("after taking numbers")
            return got
        return job

    try:
        assert await db.write(numbers()) == (1, 1)
        results = await asyncio.gather(db.write(numbers()), db.write(numbers(fail=True)),
                                       db.write(numbers()), return_exceptions=True)
        assert results[0] == (2, 2) and isinstance(results[1], ValueError)
        assert results[2] == (3, 3)  # the failed job's numbers were given back
    finally:
        await db.close()
    db = await _open(tmp_path)
    try:
        assert await db.write(numbers()) == (4, 1)  # seq is stored; no match row was inserted
        with sqlite3.connect(tmp_path / "w.db") as look:
            assert look.execute("SELECT value FROM counters WHERE name = 'seq'").fetchone() == (4,)
    finally:
        await db.close()


async def test_a_batch_holds_at_most_batch_max_jobs(tmp_path: Path) -> None:
    db = Database(str(tmp_path / "w.db"), batch_max=4)
    await db.open()
    assert db.writer is not None
    await db.writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
    try:
        commits = db.commits
        values = [f"v{i}" for i in range(10)]
        assert await asyncio.gather(*(db.write(_put(v)) for v in values)) == values
        assert db.commits - commits >= 3  # 10 jobs, at most 4 a transaction
        assert _committed(tmp_path) == values
    finally:
        await db.close()


def test_a_few_rows_of_an_insert_become_one_statement_and_nothing_else_does() -> None:
    sql = "INSERT INTO r (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
    grouped = _grouped(sql, [(1, "a"), (2, "b"), (1, "c")])
    assert grouped == ("INSERT INTO r (k, v) VALUES (?, ?), (?, ?), (?, ?) "
                       "ON CONFLICT (k) DO UPDATE SET v = excluded.v", (1, "a", 2, "b", 1, "c"))
    assert _grouped(sql, [(1, "a")]) is None  # one row: nothing to gain
    assert _grouped(sql, [(i, "x") for i in range(GROUP_MAX + 1)]) is None
    assert _grouped(sql, [(1, "a"), (2,)]) is None  # left to executemany and its error
    assert _grouped(sql, [{"k": 1}, {"k": 2}]) is None
    assert _grouped("UPDATE r SET v = ? WHERE k = ?", [("a", 1), ("b", 2)]) is None
    assert _grouped("INSERT INTO r (k, v) SELECT ?, ?", [(1, "a"), (2, "b")]) is None
    assert _grouped("INSERT INTO r (k, v) VALUES (?, 'x')", [(1,), (2,)]) is None
    assert _grouped("INSERT INTO r (k) SELECT k FROM s WHERE k IN (VALUES (?))", [(1,), (2,)]) \
        is None  # a VALUES that is not the inserted row
    assert _grouped("INSERT INTO r (k, v) VALUES (?, ?) RETURNING id", [(1, "a"), (2, "b")]) \
        is None
    assert _grouped("insert or replace into r values (?, ?)", [(1, "a"), (2, "b")]) == (
        "insert or replace into r values (?, ?), (?, ?)", (1, "a", 2, "b"))


async def test_grouped_rows_are_written_as_executemany_writes_them(tmp_path: Path) -> None:
    schema = ("CREATE TABLE r (id INTEGER PRIMARY KEY, k INTEGER UNIQUE, v TEXT, n REAL); "
              "CREATE TABLE log (what TEXT); "
              "CREATE TRIGGER r_ins AFTER INSERT ON r BEGIN INSERT INTO log VALUES "
              "('ins ' || new.k || ' ' || new.id); END; "
              "CREATE TRIGGER r_upd AFTER UPDATE ON r BEGIN INSERT INTO log VALUES "
              "('upd ' || new.k || ' ' || new.v); END;")
    upsert = ("INSERT INTO r (k, v, n) VALUES (?, ?, ?) "
              "ON CONFLICT (k) DO UPDATE SET v = excluded.v, n = excluded.n")
    calls = [[(1, "a", 0.1), (2, "b", None)], [(2, "c", 2.5), (3, "d", -0.0), (3, "e", 1e300)],
             [(k, f"v{k}", k / 7) for k in range(GROUP_MAX + 5)],  # more than a group
             [(k, "w", 0.0) for k in range(10, 10 + GROUP_MAX)]]
    reference = sqlite3.connect(tmp_path / "reference.db")
    reference.executescript(schema)
    for rows_ in calls:
        reference.executemany(upsert, rows_)
    reference.commit()
    expected = {t: reference.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                for t in ("r", "log")}
    reference.close()

    db = await _open(tmp_path)
    try:
        assert db.writer is not None
        await db.writer.executescript(schema)
        statements: list[str] = []
        db.writer._conn.set_trace_callback(statements.append)

        def job(rows_: list[tuple[Any, ...]]) -> Any:
            async def run(conn: aiosqlite.Connection) -> None:
                await conn.executemany(upsert, rows_)
            return run

        for rows_ in calls:
            await db.write(job(rows_))
        db.writer._conn.set_trace_callback(None)
        for t in ("r", "log"):
            assert [tuple(r) for r in await db.fetchall(f"SELECT * FROM {t} ORDER BY rowid")] \
                == expected[t]
        # (the trace repeats a statement for each trigger it fires: count each text once)
        inserts = list(dict.fromkeys(s for s in statements if s.startswith("INSERT INTO r")))
        # one statement per call that fits in a group; the long one row by row
        assert len(inserts) == 1 + 1 + (GROUP_MAX + 5) + 1
        assert inserts[0].count("VALUES (") == 1 and inserts[0].count("), (") == 1
    finally:
        await db.close()


async def test_grouped_rows_that_break_a_constraint_keep_none_of_the_batch(tmp_path: Path) -> None:
    db = await _open(tmp_path)
    try:
        async def fine(conn: aiosqlite.Connection) -> None:
            await conn.executemany("INSERT INTO t (v) VALUES (?)", [("p",), ("q",)])

        async def clash(conn: aiosqlite.Connection) -> None:
            await conn.executemany("INSERT INTO t (v) VALUES (?)", [("r",), ("r",)])

        results = await asyncio.gather(db.write(fine), db.write(clash), return_exceptions=True)
        assert all(isinstance(r, CommitFailed) for r in results), results
        assert await db.fetchall("SELECT v FROM t") == []
        await db.write(fine)
        assert [r["v"] for r in await db.fetchall("SELECT v FROM t ORDER BY id")] == ["p", "q"]
    finally:
        await db.close()


async def _fill(conn: aiosqlite.Connection) -> None:
    await conn.execute("CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT)")
    await conn.executemany("INSERT INTO big (body) VALUES (?)", [("x" * 100,)] * 2000)


async def _count_big(conn: aiosqlite.Connection) -> int:
    async with conn.execute("SELECT count(*) FROM big") as cur:
        row = await cur.fetchone()
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


async def test_a_damaged_page_met_by_a_read_stops_every_write(tmp_path: Path) -> None:
    db = await _open(tmp_path)
    try:
        await _damaged_big_table(db, tmp_path / "w.db")
        with pytest.raises(StorageFailed):
            await db.fetchall("SELECT count(*) FROM big")
        assert db.fault is not None
        with pytest.raises(StorageFailed):
            await db.write(_put("refused"))
        assert "refused" not in _committed(tmp_path)
    finally:
        await db.close()


async def test_a_damaged_page_met_by_a_job_stops_every_write(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A job's read meets a page gone bad on disk: its whole batch fails (an earlier job's
    write with it), the fault is logged once with the commands, and from then on every job
    is refused at once."""
    db = await _open(tmp_path)
    path = tmp_path / "w.db"
    try:
        await _damaged_big_table(db, path)
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
        assert "lost" not in _committed(tmp_path)
        assert "refused" not in _committed(tmp_path)
    finally:
        await db.close()
    logged = [r.getMessage() for r in caplog.records
              if r.name == "server.writer" and r.levelno >= logging.ERROR]
    assert len(logged) == 1, logged
    assert "database failure (SQLITE_CORRUPT" in logged[0] and "resign (alice)" in logged[0]
