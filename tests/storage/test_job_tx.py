"""The write job's handle (server/store/writer/jobs.py): the plugin API's ``Tx`` on the writer's
own connection, through the real writer on a real file."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from server.api import Tx
from server.store import Database
from server.store.log import YIELD_ROWS

Committed = Callable[[], list[str]]


async def test_reads_see_the_writes_queued_before_them(db: Database) -> None:
    """A later statement of the same job, and a later job of the same batch, see every write
    queued before them, through each way of reading."""
    async def write(tx: Tx) -> list[str]:
        await tx.executemany("INSERT INTO t (v) VALUES (?)", ((v,) for v in "abc"))
        await tx.later("UPDATE t SET v = 'B' WHERE v = 'b'")
        await tx.execute("INSERT INTO t (v) VALUES ('d')")
        return [r["v"] for r in await tx.fetchall("SELECT v FROM t ORDER BY id")]

    async def read(tx: Tx) -> tuple[Any, ...]:
        one = await tx.fetchone("SELECT count(*) FROM t")
        streamed = [r[0] async for r in tx.stream("SELECT v FROM t ORDER BY id")]
        return one[0] if one else None, streamed

    results = await asyncio.gather(db.write(write), db.write(read))
    assert results[0] == ["a", "B", "c", "d"]
    assert results[1] == (4, ["a", "B", "c", "d"])


async def test_the_log_read_in_a_job_sees_what_the_job_queued(db: Database) -> None:
    """``tx.log`` reads through the same handle: a match the job has just queued is a unit."""
    async def job(tx: Any) -> list[Any]:
        await tx.later("INSERT INTO players (id, name, name_key, created_at) VALUES "
                       "(1, 'ann', 'ann', 'x'), (2, 'bo', 'bo', 'x')")
        seq, mid = tx.take("seq"), tx.take("match")
        await tx.later(
            "INSERT INTO matches (id, ladder, side_a, side_b, length, played_on, status, winner, "
            "seq, created_at, finished_at) VALUES (?, 'backgammon', 'ann', 'bo', 3, "
            "'2026-01-02', 'finished', 'b', ?, 'x', 'y')", (mid, seq))
        await tx.executemany("INSERT INTO match_players (match_id, player_id, side) "
                             "VALUES (?, ?, ?)", [(mid, 1, "a"), (mid, 2, "b")])
        return list(await tx.log.units("backgammon"))

    units = await db.write(job)
    assert [(u.seq, u.match_id, u.player_ids) for u in units] == [(1, 1, {"ann": 1, "bo": 2})]
    game = units[0].games[0]
    assert (game.side_a, game.side_b, game.score_a, game.score_b) == (("ann",), ("bo",), 0, 1)


async def test_a_job_that_raises_is_rolled_back_alone(db: Database) -> None:
    """Whether its writes were still queued or had already run (a read made them run, inside
    the job's savepoint), a job that raises leaves nothing; the others of its batch commit."""
    def insert(value: str, then_fail: bool = False, read_back: bool = False) -> Any:
        async def job(tx: Tx) -> str:
            await tx.execute("INSERT INTO t (v) VALUES (?)", (value,))
            if read_back:
                row = await tx.fetchone("SELECT count(*) FROM t WHERE v = ?", (value,))
                assert row is not None and row[0] == 1
            if then_fail:
                raise ValueError(f"{value} fails")
            return value
        return job

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


async def test_a_failing_statement_that_is_read_back_fails_its_job_alone(db: Database) -> None:
    def insert(value: str, twice: bool = False) -> Any:
        async def job(tx: Tx) -> str:
            await tx.execute("INSERT INTO t (v) VALUES (?)", (value,))
            if twice:  # UNIQUE violation, seen by the job when it reads the count
                await tx.execute("INSERT INTO t (v) VALUES (?)", (value,))
                await tx.fetchall("SELECT count(*) FROM t")
            return value
        return job

    results = await asyncio.gather(
        db.write(insert("x")), db.write(insert("y", twice=True)), db.write(insert("z")),
        return_exceptions=True)
    assert results[0] == "x" and results[2] == "z"
    assert isinstance(results[1], sqlite3.IntegrityError)
    got = await db.fetchall("SELECT v FROM t ORDER BY v")
    assert [r["v"] for r in got] == ["x", "z"]


async def test_later_writes_are_sent_with_the_commit(db: Database, committed: Committed) -> None:
    """A job that only writes with ``later`` returns before any of its statements runs; the
    batch's ``BEGIN IMMEDIATE``, its writes and ``COMMIT`` then run on the commit thread,
    and the job is answered only once they have."""
    assert db.writer is not None
    events: list[tuple[str, str]] = []
    db.writer.set_trace_callback(lambda sql: events.append((threading.current_thread().name, sql)))

    async def job(tx: Tx) -> str:
        await tx.later("INSERT INTO t (v) VALUES (?)", ("sent",))
        await tx.later("UPDATE t SET v = 'sent!' WHERE v = 'sent'")
        events.append(("job", "returns"))
        return "ok"

    try:
        assert await db.write(job) == "ok"
        assert committed() == ["sent!"]  # durable when answered
    finally:
        db.writer.set_trace_callback(None)
    names = [sql.split()[0].upper() for _, sql in events]
    assert names[0] == "RETURNS", events  # nothing ran before the job was done
    assert names[1:] == ["BEGIN", "INSERT", "UPDATE", "COMMIT"], events
    assert {thread for thread, _ in events[1:]} == {"db-commit"}, events


async def test_a_long_read_in_a_job_leaves_the_loop_turns(db: Database) -> None:
    """A job's reads run inline on the loop, so ``stream`` yields every ``YIELD_ROWS`` rows:
    another task runs while the rows are read, not only after. ``fetchall`` of the same rows
    (the control) gives it none."""
    rows = 10 * YIELD_ROWS

    async def fill(tx: Tx) -> None:
        await tx.executemany("INSERT INTO t (v) VALUES (?)", ((str(k),) for k in range(rows)))

    await db.write(fill)

    async def during(read: str) -> tuple[int, int]:
        seen = 0
        turns = 0
        reading = False

        async def other() -> None:
            nonlocal turns
            while True:
                turns += reading
                await asyncio.sleep(0)

        async def job(tx: Tx) -> None:
            nonlocal seen, reading
            await tx.fetchone("SELECT 1")  # the transaction open (BEGIN waits on a thread)
            reading = True
            if read == "stream":
                async for _ in tx.stream("SELECT v FROM t"):
                    seen += 1
            else:
                seen = len(await tx.fetchall("SELECT v FROM t"))
            reading = False

        task = asyncio.create_task(other())
        await asyncio.sleep(0)
        try:
            await db.write(job)
        finally:
            task.cancel()
        return seen, turns

    seen, turns = await during("stream")
    assert seen == rows and turns >= 9  # a turn every YIELD_ROWS rows
    seen, turns = await during("fetchall")
    assert seen == rows and turns == 0


async def test_rows_counts_what_the_last_statement_returned_or_changed(db: Database) -> None:
    """``rows`` after queued writes: a write sqlite3 does not parse as one (``WITH … INSERT``)
    still counts its rows, an upsert that changes nothing counts 0, a select its rows."""
    async def job(tx: Any) -> list[int]:
        await tx.later("INSERT INTO t (v) VALUES ('queued')")
        return [
            await tx.rows([("WITH x AS (SELECT 'a' AS v) INSERT INTO t (v) SELECT v FROM x", ())]),
            await tx.rows([("INSERT INTO t (v) VALUES (?) ON CONFLICT (v) DO UPDATE SET "
                            "v = excluded.v WHERE 0", ("a",))]),
            await tx.rows([("SELECT 1", ()), ("SELECT v FROM t", ())])]

    assert await db.write(job) == [1, 0, 2]
