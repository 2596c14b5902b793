"""A FIBS log written straight into a lobby's tables (matches of every kind, as the server
leaves them), and ``matchlobby replay`` run on it as a process or in this one; the generic
replay path's rows, the reference the fast path and the corrections are held to."""

from __future__ import annotations

import dataclasses
import io
import random
import sqlite3
from pathlib import Path
from typing import Any

import ratings_plugin.commands.replay as replay_module
from ratings_plugin import store
from ratings_plugin.book import replay_ladder
from server.api import LadderConfig
from server.cli import Environment
from server.config import Config, ladder_config, load_config
from server.store.connection import open_connection
from server.store.log import ladder_units
from server.store.port import SqliteTx
from testkit.cli import run_cli_async
from testkit.db import sql

SECOND = ladder_config({"name": "hypergammon", "system": "fibs",
                        "experience_includes_match": False, "start_rating": 1400.0}, "test")
FIRST = ladder_config({"name": "backgammon", "system": "fibs"}, "test")
CONFIG = """
[password_hashing]
n = 1024

[[ladders]]
name = "backgammon"
system = "fibs"

[[ladders]]
name = "hypergammon"
system = "fibs"
experience_includes_match = false
start_rating = 1400.0

[[ladders]]
name = "scrabble"
system = "cas"
"""
LADDERS = {"backgammon": FIRST, "hypergammon": SECOND}
NAMES = ["alice", "Bob", "carol", "Dave", "erin", "Frank", "gina", "Hal", "ivy", "Zed", "amy",
         "Yan"]


def write_log(db: Path, seed: int, matches: int = 300) -> None:
    """``matches`` rated matches per FIBS ladder, with the unrated rows around them."""
    rng = random.Random(seed)
    conn = sqlite3.connect(db)
    with conn:
        ids = {}
        for name in NAMES:
            conn.execute("INSERT OR IGNORE INTO players (name, name_key, role, created_at) "
                         "VALUES (?, ?, 'player', '2026-01-01T00:00:00Z')", (name, name.casefold()))
            ids[name] = conn.execute("SELECT id FROM players WHERE name = ?", (name,)).fetchone()[0]
        admin = conn.execute("SELECT id FROM players WHERE role = 'admin'").fetchone()[0]
        event = conn.execute(
            "INSERT INTO events (name, ladder, date, status, created_at, closed_at) VALUES "
            "('club', 'backgammon', '2026-01-02', 'closed', '2026-01-02T00:00:00Z', "
            "'2026-01-09T00:00:00Z') RETURNING id").fetchone()[0]
        seq = conn.execute("SELECT value FROM counters WHERE name = 'seq'").fetchone()[0]
        rows: list[tuple[Any, ...]] = []
        for k in range(2 * matches + matches // 5):
            ladder = rng.choice(list(LADDERS))
            a, b = rng.sample(NAMES[:8] if k < 40 else NAMES, 2)  # some pairs meet at 1500 each
            points = rng.choice([1, 1, 3, 5, 7, 9, 11, 2])
            day = f"2026-{1 + k * 11 // (3 * matches):02d}-{1 + rng.randrange(28):02d}"
            at = f"2026-03-01T{k // 3600 % 24:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z"
            won = rng.random() < 0.5
            kind = rng.random()
            sa = sb = None
            if rng.random() < 0.5:
                loser = rng.randrange(points)
                sa, sb = (points, loser) if won else (loser, points)
            winner: str | None = "a" if won else "b"
            status, how, event_id, row_seq = "finished", "resign", None, None
            length: int | None = points
            if kind < 0.05:
                status, winner, sa, sb, how = "aborted", None, None, None, "abort"
            elif kind < 0.08:
                length, how = None, "resign"  # unlimited: never rated, no seq
            else:
                seq += 1
                row_seq = seq
                if kind < 0.15 and ladder == "backgammon":
                    event_id, how = event, "event"
                    if sa is None:
                        sa, sb = (1, 0) if won else (0, 1)
                if kind > 0.97:  # voided after it was rated
                    status, winner = "voided", None
                elif kind > 0.94:  # adjudicated the other way
                    winner = "b" if won else "a"
                    if sa is not None:
                        sa, sb = sb, sa
            rows.append((ladder, event_id, a, b, length, day, status, winner, sa, sb, how,
                         row_seq, at, at, ids[a], ids[b], kind))
        # a live match gets its id when it starts: ids are not in seq order
        order = sorted(range(len(rows)), key=lambda i: i + rng.randrange(6))
        for i in order:
            r = rows[i]
            mid = conn.execute(
                "INSERT INTO matches (ladder, event_id, side_a, side_b, length, played_on, status, "
                "winner, score_a, score_b, how, seq, created_at, finished_at) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id", r[:14]).fetchone()[0]
            conn.executemany("INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)",
                             [(mid, r[14], "a"), (mid, r[15], "b")])
            if r[6] == "voided" or r[16] > 0.94:
                conn.execute(
                    "INSERT INTO corrections (match_id, kind, old_status, old_winner, new_status, "
                    "new_winner, reason, by_player, at) VALUES (?, ?, 'finished', ?, ?, ?, ?, ?, ?)",
                    (mid, "void" if r[6] == "voided" else "adjudicate", r[7], r[6], r[7],
                     "test", admin, r[12]))
        conn.execute("UPDATE counters SET value = ? WHERE name = 'seq'", (seq,))
    conn.close()


async def generic(db: Path, ladder: LadderConfig) -> tuple[list[Any], list[Any]]:
    """The reference: ratings and history rows from the generic replay path."""
    conn = open_connection(db)
    try:
        ids = {row["name"]: row["id"] for row in conn.execute("SELECT id, name FROM players")}
        book, history = replay_ladder(ladder, await ladder_units(SqliteTx(conn), ladder.name), ids)
    finally:
        conn.close()
    return sorted(store.rating_rows(ladder, book.standings.values(), ids)), history


def stored(db: Path, ladder: str) -> tuple[list[Any], list[Any]]:
    return (sql(db, "SELECT * FROM ratings WHERE ladder = ? ORDER BY player_id", (ladder,)),
            sql(db, "SELECT ladder, player_id, before, after, match_id, event_id, at FROM history "
                    "WHERE ladder = ? ORDER BY id", (ladder,)))


def exact(rows: list[Any]) -> list[str]:
    return [repr(tuple(r)) for r in rows]


async def replay_cli(db: Path, config: Path, *args: str) -> tuple[int, str]:
    done = await run_cli_async(["replay", "--db", str(db), "--config", str(config), *args],
                               db.parent)
    return done.returncode, done.stdout + done.stderr


async def run_replay(config: Config, check: bool, out: io.StringIO) -> int:
    """``matchlobby replay`` in this process, on the database the CLI would open."""
    db = await Environment(config, writable=not check).open()
    try:
        return await replay_module.run(db, config.database, config.ladders, check, out)
    finally:
        await db.close()


async def replay_here(db: Path, config: Path, *args: str) -> tuple[int, str]:
    """``matchlobby replay`` in this process, so that the fixtures below reach it."""
    out = io.StringIO()
    code = await run_replay(dataclasses.replace(load_config(config), database=str(db)),
                            "--check" in args, out)
    return code, out.getvalue()
