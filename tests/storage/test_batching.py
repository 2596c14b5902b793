"""Queued writes (server/store/writer/batching.py): a few rows of an insert go as one statement,
written exactly as ``executemany`` would have written them."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from server.api import Tx
from server.store import CommitFailed, Database
from server.store.writer.batching import GROUP_MAX, grouped


def test_a_few_rows_of_an_insert_become_one_statement_and_nothing_else_does() -> None:
    sql = "INSERT INTO r (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v"
    assert grouped(sql, [(1, "a"), (2, "b"), (1, "c")]) == (
        "INSERT INTO r (k, v) VALUES (?, ?), (?, ?), (?, ?) "
        "ON CONFLICT (k) DO UPDATE SET v = excluded.v", (1, "a", 2, "b", 1, "c"))
    assert grouped(sql, [(1, "a")]) is None  # one row: nothing to gain
    assert grouped(sql, [(i, "x") for i in range(GROUP_MAX + 1)]) is None
    assert grouped(sql, [(1, "a"), (2,)]) is None  # left to executemany and its error
    assert grouped(sql, [{"k": 1}, {"k": 2}]) is None
    assert grouped("UPDATE r SET v = ? WHERE k = ?", [("a", 1), ("b", 2)]) is None
    assert grouped("INSERT INTO r (k, v) SELECT ?, ?", [(1, "a"), (2, "b")]) is None
    assert grouped("INSERT INTO r (k, v) VALUES (?, 'x')", [(1,), (2,)]) is None
    assert grouped("INSERT INTO r (k) SELECT k FROM s WHERE k IN (VALUES (?))", [(1,), (2,)]) \
        is None  # a VALUES that is not the inserted row
    assert grouped("INSERT INTO r (k, v) VALUES (?, ?) RETURNING id", [(1, "a"), (2, "b")]) \
        is None
    assert grouped("insert or replace into r values (?, ?)", [(1, "a"), (2, "b")]) == (
        "insert or replace into r values (?, ?), (?, ?)", (1, "a", 2, "b"))


async def test_grouped_rows_are_written_as_executemany_writes_them(tmp_path: Path,
                                                                   db: Database) -> None:
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
    for rows in calls:
        reference.executemany(upsert, rows)
    reference.commit()
    expected = {t: reference.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
                for t in ("r", "log")}
    reference.close()

    assert db.writer is not None
    db.writer.executescript(schema)
    statements: list[str] = []
    db.writer.set_trace_callback(statements.append)

    def job(rows: list[tuple[Any, ...]]) -> Any:
        async def run(tx: Tx) -> None:
            await tx.executemany(upsert, rows)
        return run

    for rows in calls:
        await db.write(job(rows))
    db.writer.set_trace_callback(None)
    for t in ("r", "log"):
        assert [tuple(r) for r in await db.fetchall(f"SELECT * FROM {t} ORDER BY rowid")] \
            == expected[t]
    # (the trace repeats a statement for each trigger it fires: count each text once)
    inserts = list(dict.fromkeys(s for s in statements if s.startswith("INSERT INTO r")))
    # one statement per call that fits in a group; the long one row by row
    assert len(inserts) == 1 + 1 + (GROUP_MAX + 5) + 1
    assert inserts[0].count("VALUES (") == 1 and inserts[0].count("), (") == 1


async def test_grouped_rows_that_break_a_constraint_keep_none_of_the_batch(db: Database) -> None:
    async def fine(tx: Tx) -> None:
        await tx.executemany("INSERT INTO t (v) VALUES (?)", [("p",), ("q",)])

    async def clash(tx: Tx) -> None:
        await tx.executemany("INSERT INTO t (v) VALUES (?)", [("r",), ("r",)])

    results = await asyncio.gather(db.write(fine), db.write(clash), return_exceptions=True)
    assert all(isinstance(r, CommitFailed) for r in results), results
    assert await db.fetchall("SELECT v FROM t") == []
    await db.write(fine)
    assert [r["v"] for r in await db.fetchall("SELECT v FROM t ORDER BY id")] == ["p", "q"]
