"""The group-committing writer: jobs run inline on the loop, BEGIN/COMMIT on aiosqlite's thread."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from server.storage import Database


async def _open(tmp_path: Path) -> Database:
    db = Database(str(tmp_path / "w.db"))
    await db.open()
    assert db.writer is not None
    await db.writer.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
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


async def test_a_failing_job_is_rolled_back_alone(tmp_path: Path) -> None:
    db = await _open(tmp_path)

    def insert(value: str, then_fail: bool = False) -> Any:
        async def job(conn: aiosqlite.Connection) -> str:
            await conn.execute("INSERT INTO t (v) VALUES (?)", (value,))
            if then_fail:
                await conn.execute("INSERT INTO t (v) VALUES (?)", (value,))  # UNIQUE violation
            return value
        return job

    try:
        commits = db.commits
        results = await asyncio.gather(
            db.write(insert("x")), db.write(insert("y", then_fail=True)), db.write(insert("z")),
            return_exceptions=True)
        assert results[0] == "x" and results[2] == "z"
        assert isinstance(results[1], sqlite3.IntegrityError)
        assert db.commits == commits + 1  # one group commit for the three jobs
        rows = await db.fetchall("SELECT v FROM t ORDER BY v")
        assert [r["v"] for r in rows] == ["x", "z"]
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
