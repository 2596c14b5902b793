"""The CHECKs of ``matches`` on SQLite: written as comparisons, they accept and refuse exactly
what the ``IN`` lists did, on a new database and on one written by an old lobby
(``tests/fixtures/schema3.db``), and a match's insert and finishing update build no temporary
b-tree (SQLite builds one for an ``IN`` list of more than two values at each row it checks).
A SQLite that refuses to have a table's text rewritten keeps the lists and still migrates."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from server.store.port import SqliteTx
from server.store.schema import SCHEMA_VERSION, migrate
from server.store.seeks import drop_all

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema3.db"
STATUSES = ("playing", "claimed", "disputed", "finished", "aborted", "voided")
WINNERS = ("a", "b", "draw", None)
INSERT = ("INSERT INTO matches (id, ladder, side_a, side_b, length, played_on, status, "
          "created_at) VALUES (?, 'backgammon', 'x', 'y', 1, '2026-12-05', ?, 't')")
FINISH = "UPDATE matches SET status = ?, winner = ? WHERE id = ?"


def connect(path: Path) -> sqlite3.Connection:
    # migrate() runs BEGIN IMMEDIATE on a worker thread
    return sqlite3.connect(path, isolation_level=None, check_same_thread=False)


def temporary_btrees(conn: sqlite3.Connection, sql: str, params: tuple[object, ...]) -> int:
    return sum(row[1] == "OpenEphemeral" for row in conn.execute("EXPLAIN " + sql, params))


def assert_checks_hold(conn: sqlite3.Connection) -> None:
    top = conn.execute("SELECT coalesce(max(id), 0) FROM matches").fetchone()[0]
    for n, status in enumerate(STATUSES, start=top + 1):
        conn.execute(INSERT, (n, status))
        for winner in WINNERS:
            conn.execute(FINISH, (status, winner, n))
    for bad_status, bad_winner in (("over", "a"), ("Playing", None), ("finished", "c"),
                                   ("finished", "A"), ("", None)):
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            conn.execute(FINISH, (bad_status, bad_winner, top + 1))
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        conn.execute(INSERT, (top + 100, "won"))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


@pytest.mark.parametrize("start", ["new", "schema3"])
async def test_the_checks_of_matches_hold_and_build_no_temporary_btree(
        tmp_path: Path, start: str) -> None:
    db = tmp_path / "lobby.db"
    if start == "schema3":
        shutil.copy(FIXTURE, db)
    conn = connect(db)
    try:
        assert await migrate(conn) == SCHEMA_VERSION
        text = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'matches'").fetchone()[0]
        assert " IN " not in text.upper(), text
        assert temporary_btrees(conn, INSERT, (10**6, "playing")) == 0
        assert temporary_btrees(conn, FINISH, ("finished", "a", 10**6)) == 0
        assert_checks_hold(conn)
    finally:
        conn.close()
    again = connect(db)  # the rewritten text is what a new connection reads
    try:
        assert_checks_hold(again)
    finally:
        again.close()


async def test_dropping_the_seeks_of_a_join_builds_no_temporary_btree(tmp_path: Path) -> None:
    conn = connect(tmp_path / "lobby.db")
    try:
        await migrate(conn)
        for n in (1, 2, 3):
            conn.execute("INSERT INTO players (id, name, name_key, created_at) "
                         "VALUES (?, ?, ?, 't')", (n, f"p{n}", f"p{n}"))
            conn.execute("INSERT INTO seeks (player_id, ladder, length, since, node) "
                         "VALUES (?, 'backgammon', 1, 't', 'n')", (n,))
        ran: list[str] = []
        conn.set_trace_callback(ran.append)
        await drop_all(SqliteTx(conn), (1, 3))
        conn.set_trace_callback(None)
        assert [r[0] for r in conn.execute("SELECT player_id FROM seeks")] == [2]
        assert ran, "nothing ran"
        for sql in ran:  # as run, with its values in it
            assert temporary_btrees(conn, sql, ()) == 0, sql
    finally:
        conn.close()


async def test_a_sqlite_that_refuses_the_rewrite_keeps_the_lists_and_migrates(
        tmp_path: Path) -> None:
    conn = connect(tmp_path / "lobby.db")

    def no_schema_writes(action: int, table: str | None, *_: object) -> int:
        if action == sqlite3.SQLITE_UPDATE and table in ("sqlite_master", "sqlite_schema"):
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    try:
        assert await migrate(conn, SCHEMA_VERSION - 1) == SCHEMA_VERSION - 1
        conn.set_authorizer(no_schema_writes)  # as a SQLite in defensive mode refuses it
        assert await migrate(conn) == SCHEMA_VERSION
        conn.set_authorizer(None)
        text = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'matches'").fetchone()[0]
        assert "status IN" in text, text
        assert temporary_btrees(conn, INSERT, (10**6, "playing")) == 2  # what the lists cost
        assert_checks_hold(conn)
    finally:
        conn.close()
