"""A database file read (or changed) with plain ``sqlite3``, beside the server's own code."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from testkit import postgres
from testkit.postgres import PgDb


def sql(db: Path, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row of ``query``, from a connection of its own (on either backend)."""
    if isinstance(db, PgDb):
        return postgres.query(db, query, params)
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute(query, params).fetchall())
    finally:
        conn.close()


def execute(db: Path, statement: str, params: Sequence[Any] = ()) -> int:
    """Run one writing statement and commit it; the rows it changed (on either backend)."""
    if isinstance(db, PgDb):
        return postgres.execute(db, statement, params)
    conn = sqlite3.connect(db)
    try:
        with conn:
            return conn.execute(statement, params).rowcount
    finally:
        conn.close()


def dump_db(path: Path) -> str:
    """Every table's rows (and the schema), in a stable text form."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


def integrity(db: Path) -> str:
    """``PRAGMA integrity_check``'s verdict: ``ok`` for a whole file (on PostgreSQL, every
    B-tree index checked against its table by ``amcheck``'s ``bt_index_check``)."""
    if isinstance(db, PgDb):
        return postgres.integrity(db)
    return "; ".join(str(r[0]) for r in sql(db, "PRAGMA integrity_check"))


def log_position(db: Path) -> int:
    """The last ``seq`` handed out: SQLite's counter, PostgreSQL's sequence (which a
    transaction that never commits also moves)."""
    if isinstance(db, PgDb):
        return int(sql(db, "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 "
                           "END FROM log_seq")[0][0])
    return int(sql(db, "SELECT value FROM counters WHERE name = 'seq'")[0][0])


def seq_drawn(db: Path, counter: int, units: int) -> bool:
    """Every ``seq`` handed out is a unit's: SQLite's writer gives a failed job's number
    back; PostgreSQL's sequence does not (a job rolled back, or cut short by a kill, leaves
    its number unused), so there the units are at most as many."""
    return counter >= units if isinstance(db, PgDb) else counter == units


def seq_gaps(db: Path) -> tuple[int, int, int]:
    """(counter, units holding a seq, distinct seqs): equal when no applied unit was lost."""
    counter = log_position(db)
    used = sql(db, "SELECT count(seq), count(DISTINCT seq) FROM (SELECT seq FROM matches "
                   "WHERE seq IS NOT NULL UNION ALL SELECT seq FROM events WHERE seq IS NOT NULL) AS u")
    return int(counter), int(used[0][0]), int(used[0][1])


def log_rows(db: Path, ladder: str) -> list[str]:
    """The ladder's rated log as results-file rows, in the order it was applied (``seq``).

    Written from the tables with plain SQL (not with the server's log reader): a
    live or FIBS-event match is its own unit; a closed event's games are one unit.
    """
    def rows(query: str, params: Sequence[Any]) -> list[dict[str, Any]]:
        if isinstance(db, PgDb):
            return postgres.query_dicts(db, query, params)
        conn = sqlite3.connect(db)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(query, params).fetchall()]
        finally:
            conn.close()

    units = rows(
        """SELECT seq, 'match' AS kind, id FROM matches
           WHERE ladder = ? AND seq IS NOT NULL AND status = 'finished'
           UNION ALL SELECT seq, 'event' AS kind, id FROM events
           WHERE ladder = ? AND status = 'closed' AND seq IS NOT NULL ORDER BY 1""",
        (ladder, ladder))
    out: list[str] = []
    for unit in units:
        if unit["kind"] == "match":
            games = rows("SELECT * FROM matches WHERE id = ?", (unit["id"],))
        else:
            games = rows("SELECT * FROM matches WHERE event_id = ? AND status = 'finished' "
                         "AND seq IS NULL ORDER BY id", (unit["id"],))
        for g in games:
            sa, sb = g["score_a"], g["score_b"]
            if sa is None or sb is None:
                sa, sb = {"a": (1, 0), "b": (0, 1)}.get(g["winner"], (0, 0))
            length = "unlimited" if g["length"] is None else g["length"]
            rated = f"no:{g['unrated_reason']}" if g["unrated_reason"] else ""
            out.append(f"unit {unit['seq']},{g['played_on']},{g['side_a']},{g['side_b']},"
                       f"{sa},{sb},{length},{rated}")
    return out


def executemany(db: Path, statement: str, rows: Sequence[Sequence[Any]]) -> None:
    """Run one writing statement for each of ``rows``, committed together (either backend)."""
    if isinstance(db, PgDb):
        postgres.executemany(db, statement, rows)
        return
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.executemany(statement, rows)
    finally:
        conn.close()


def spread_history(db: Path, hours: float = 31) -> None:
    """Demo data for charts: one history row every ``hours``, the last one now (matches a
    test plays all fall within seconds). Only while the server is stopped."""
    conn = sqlite3.connect(db)
    try:
        ids = [r[0] for r in conn.execute("SELECT id FROM history ORDER BY id")]
        end = datetime.now(UTC).replace(microsecond=0)
        for i, hid in enumerate(ids):
            at = end - timedelta(hours=hours * (len(ids) - 1 - i))
            conn.execute("UPDATE history SET at = ? WHERE id = ?",
                         (at.strftime("%Y-%m-%dT%H:%M:%SZ"), hid))
        conn.commit()
    finally:
        conn.close()


def columns(db: Path, table: str) -> list[str]:
    """A table's columns in order (``[]``: no such table), on either backend."""
    if isinstance(db, PgDb):
        return [r[0] for r in postgres.query(
            db, "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                "AND table_schema = current_schema() ORDER BY ordinal_position", (table,))]
    return [r[1] for r in sql(db, f"PRAGMA table_info({table})")]


def schema_version(db: Path) -> int:
    """The lobby's schema version as stored (``PRAGMA user_version`` on SQLite)."""
    if isinstance(db, PgDb):
        return int(sql(db, "SELECT version FROM schema_version")[0][0])
    return int(sql(db, "PRAGMA user_version")[0][0])
