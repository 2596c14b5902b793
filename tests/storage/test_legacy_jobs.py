"""Jobs written against aiosqlite's API (server/store/legacy.py) still run on the writer's
native handle, with the same batching, until every job takes a ``Tx``."""

from __future__ import annotations

import asyncio
from typing import Any

import aiosqlite
import pytest

from server.store import Database
from server.store.legacy import new_match_id, next_seq, tx_of, write_later


async def test_aiosqlite_shaped_calls_work_inline(db: Database) -> None:
    async def job(conn: aiosqlite.Connection) -> dict[str, Any]:
        async with conn.execute("INSERT INTO t (v) VALUES (?)", ("a",)) as cur:
            first = cur.lastrowid  # reading it runs the queued write
        await conn.executemany("INSERT INTO t (v) VALUES (?)", [("b",), ("c",)])
        await write_later(conn, "INSERT INTO t (v) VALUES (?)", ("d",))
        async with conn.execute("SELECT count(*) FROM t") as cur:
            row = await cur.fetchone()
        seen = [r["v"] async for r in await conn.execute("SELECT v FROM t ORDER BY id")]
        every = await (await conn.execute("SELECT id FROM t WHERE id > ?", (first,))).fetchall()
        return {"first": first, "count": row[0] if row else None, "seen": seen,
                "every": [r[0] for r in every], "numbers": (next_seq(conn), new_match_id(conn))}

    assert await db.write(job) == {"first": 1, "count": 4, "seen": ["a", "b", "c", "d"],
                                   "every": [2, 3, 4], "numbers": (1, 1)}
    row = await db.fetchone("SELECT count(*) AS n FROM t")
    assert row is not None and row["n"] == 4


async def test_the_plugins_tx_of_a_legacy_job_is_its_own_handle(db: Database) -> None:
    """What the lobby hands plugins (``SqliteTx(conn)``) writes in the job's transaction: a
    job that raises after it keeps nothing of either."""
    async def job(conn: aiosqlite.Connection, fail: bool) -> int:
        tx = tx_of(conn)
        assert tx is conn
        await tx.later("INSERT INTO t (v) VALUES (?)", (f"plugin {fail}",))
        await conn.execute("INSERT INTO t (v) VALUES (?)", (f"lobby {fail}",))
        if fail:
            raise ValueError("after both wrote")
        row = await tx.fetchone("SELECT count(*) FROM t")
        return int(row[0]) if row else -1

    results = await asyncio.gather(db.write(lambda c: job(c, True)),
                                   db.write(lambda c: job(c, False)), return_exceptions=True)
    assert isinstance(results[0], ValueError) and results[1] == 2
    assert [r["v"] for r in await db.fetchall("SELECT v FROM t ORDER BY id")] == [
        "plugin False", "lobby False"]


async def test_a_legacy_write_read_back_before_its_transaction_is_refused_at_once() -> None:
    """Outside a job there is no handle: the shims say so rather than write elsewhere."""
    with pytest.raises(TypeError):
        next_seq(object())  # type: ignore[arg-type]
