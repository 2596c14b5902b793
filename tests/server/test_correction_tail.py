"""A correction on a FIBS ladder replays it from the corrected match on
(ratings_plugin/corrections/tail.py).

The reference is the same correction replayed from the whole log
(``LadderCorrected`` without a ``seq``), on a copy of the same database: the
stored ratings and history rows, the plugin's standings and the changes it
reports must be the same, bit for bit (``repr``), after each of a run of voids
and adjudications at random places of the log, the first and the last rated
match among them. The tail's rows are the only ones written, in place: every
row keeps its id but a voided match's, which are deleted. And ``matchlobby
replay --check`` agrees.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from testkit.db import sql
from testkit.replays import CONFIG, LADDERS, exact, generic, replay_here, stored, write_log

from ratings_plugin.corrections.tail import write_tail
from ratings_plugin.plugin import Outcome, RatingsPlugin
from ratings_plugin.store import INSERT_HISTORY
from server.api import LadderCorrected, PluginSetup
from server.config import ladder_config
from server.store.connection import open_connection
from server.store.log import ladder_units
from server.store.port import SqliteTx

pytestmark = pytest.mark.sqlite_only("writes its log straight into an SQLite file")

ROWS = "SELECT * FROM history WHERE ladder = ? ORDER BY id"


class Unheard:
    """A publisher with nobody connected."""

    def push(self, event: str, data: Any, *, players: Any = (), watchers: Any = None) -> None:
        pass


async def correct(db: Path, ladder: str, match_id: int, kind: str, tail: bool) -> Outcome:
    """What the lobby's ``void``/``adjudicate`` does to the log and the plugin, in one transaction."""
    conn = open_connection(db)
    try:
        plugin = RatingsPlugin(PluginSetup([*LADDERS.values(), ladder_config(
            {"name": "scrabble", "system": "cas"}, "test")]))
        await plugin.load(SqliteTx(conn), committed=True)
        conn.execute("BEGIN IMMEDIATE")
        if kind == "void":
            conn.execute("UPDATE matches SET status = 'voided', winner = NULL WHERE id = ?",
                         (match_id,))
        else:
            conn.execute(
                "UPDATE matches SET winner = CASE winner WHEN 'a' THEN 'b' ELSE 'a' END, "
                "score_a = score_b, score_b = score_a WHERE id = ?", (match_id,))
        seq = conn.execute("SELECT seq FROM matches WHERE id = ?", (match_id,)).fetchone()[0]
        event = LadderCorrected(ladder, cause={"match": match_id}, seq=seq if tail else None)
        outcome = await plugin.on_event(SqliteTx(conn), event)
        conn.execute("COMMIT")
        assert isinstance(outcome, Outcome)
        plugin.on_commit([(event, outcome)], Unheard())
        return outcome
    finally:
        conn.close()


def add_newcomer_match(db: Path) -> int:
    """A rated match at the end of the log for a player who plays nowhere else."""
    rows = sql(db, "SELECT id FROM players WHERE name IN ('alice', 'Newcomer')")
    assert len(rows) == 1
    conn = sqlite3.connect(db)
    with conn:
        new = conn.execute("INSERT INTO players (name, name_key, role, created_at) VALUES "
                           "('Newcomer', 'newcomer', 'player', '2026-01-01T00:00:00Z') "
                           "RETURNING id").fetchone()[0]
        seq = conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'seq' "
                           "RETURNING value").fetchone()[0]
        mid = conn.execute(
            "INSERT INTO matches (ladder, side_a, side_b, length, played_on, status, winner, "
            "how, seq, created_at, finished_at) VALUES ('backgammon', 'Newcomer', 'alice', 5, "
            "'2026-12-31', 'finished', 'a', 'resign', ?, '2026-12-31T00:00:00Z', "
            "'2026-12-31T00:00:00Z') RETURNING id", (seq,)).fetchone()[0]
        conn.executemany("INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)",
                         [(mid, new, "a"), (mid, rows[0][0], "b")])
    conn.close()
    return int(mid)


def state(db: Path) -> dict[str, Any]:
    """The stored ratings and history of every FIBS ladder, history without its ids."""
    return {ladder: (exact(stored(db, ladder)[0]), exact(stored(db, ladder)[1]))
            for ladder in LADDERS}


async def test_a_tail_correction_leaves_what_a_whole_replay_leaves(tmp_path: Path,
                                                                   db_path: Path) -> None:
    write_log(db_path, 21, matches=150)
    newcomer = add_newcomer_match(db_path)
    code, out = await replay_here(db_path, _config(tmp_path))
    assert code == 0, out
    whole = tmp_path / "whole.db"
    shutil.copy(db_path, whole)
    rng = random.Random(21)
    plan: list[tuple[str, str, int | None]] = [
        ("backgammon", "adjudicate", 0), ("hypergammon", "void", -1),
        ("backgammon", "void", None), ("hypergammon", "adjudicate", None),
        ("backgammon", "adjudicate", -1), ("backgammon", "void", None),
        ("hypergammon", "void", 0)]
    for ladder, kind, at in plan:
        rated = [r[0] for r in sql(db_path, "SELECT id FROM matches WHERE ladder = ? AND status = "
                                            "'finished' AND seq IS NOT NULL ORDER BY seq", (ladder,))]
        match_id = rated[rng.randrange(len(rated))] if at is None else rated[at]
        before = sql(db_path, ROWS, (ladder,))
        first = min(r[0] for r in sql(db_path, "SELECT id FROM history WHERE match_id = ?",
                                       (match_id,)))
        got = await correct(db_path, ladder, match_id, kind, tail=True)
        want = await correct(whole, ladder, match_id, kind, tail=False)
        assert state(db_path) == state(whole), (ladder, kind, match_id)
        for name, options in LADDERS.items():  # and both are what a replay of the log gives
            ratings, history = await generic(db_path, options)
            assert state(db_path)[name] == (exact(ratings), exact(history))
        assert repr(sorted(got.standings.items())) == repr(sorted(want.standings.items()))
        assert repr(got.changes) == repr(want.changes)
        assert got.changes, "a correction that moves nobody tests little"
        kept = [r for r in before if r[0] < first]
        assert sql(db_path, ROWS, (ladder,))[:len(kept)] == kept  # ids included
        assert len(kept) < len(before)
        # the tail's rows are updated in place: only a voided match's rows go
        assert [r[0] for r in sql(db_path, ROWS, (ladder,))] == [
            r[0] for r in before if kind == "adjudicate" or r[5] != match_id]
    # the newcomer's only match voided: no rating left for them, on either path
    assert sql(db_path, "SELECT count(*) FROM ratings r JOIN players p ON p.id = r.player_id "
                        "WHERE p.name = 'Newcomer'") == [(1,)]
    got = await correct(db_path, "backgammon", newcomer, "void", tail=True)
    want = await correct(whole, "backgammon", newcomer, "void", tail=False)
    assert "Newcomer" not in got.standings
    assert repr(sorted(got.standings.items())) == repr(sorted(want.standings.items()))
    assert state(db_path) == state(whole)
    assert sql(db_path, "SELECT count(*) FROM ratings r JOIN players p ON p.id = r.player_id "
                        "WHERE p.name = 'Newcomer'") == [(0,)]
    code, out = await replay_here(db_path, _config(tmp_path), "--check")
    assert code == 0, out


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "replay.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


async def test_the_units_from_a_seq_on_are_the_tail_of_the_whole_log(db_path: Path) -> None:
    """``ladder_units(since)``: the same units as the whole log's from that ``seq`` on, event
    units (their games have no ``seq`` of their own) included."""
    write_log(db_path, 22, matches=60)
    conn = sqlite3.connect(db_path)
    with conn:
        ids = dict(conn.execute("SELECT name, id FROM players"))
        for e in range(4):
            seq = conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'seq' "
                               "RETURNING value").fetchone()[0]
            event = conn.execute(
                "INSERT INTO events (name, ladder, date, status, created_at, closed_at, seq) "
                "VALUES (?, 'scrabble', '2026-02-01', 'closed', '2026-02-01T00:00:00Z', "
                "'2026-02-02T00:00:00Z', ?) RETURNING id", (f"night {e}", seq)).fetchone()[0]
            for g, (a, b) in enumerate([("alice", "Bob"), ("carol", "alice"), ("Dave", "Bob")]):
                mid = conn.execute(
                    "INSERT INTO matches (ladder, event_id, side_a, side_b, played_on, status, "
                    "winner, score_a, score_b, how, created_at, finished_at) VALUES ('scrabble', "
                    "?, ?, ?, '2026-02-01', 'finished', 'a', ?, 300, 'event', "
                    "'2026-02-01T00:00:00Z', '2026-02-01T00:00:00Z') RETURNING id",
                    (event, a, b, 400 + g + e)).fetchone()[0]
                conn.executemany("INSERT INTO match_players (match_id, player_id, side) "
                                 "VALUES (?, ?, ?)", [(mid, ids[a], "a"), (mid, ids[b], "b")])
    conn.close()
    conn2 = open_connection(db_path)
    try:
        reader = SqliteTx(conn2)
        for ladder in (*LADDERS, "scrabble"):
            whole = await ladder_units(reader, ladder)
            assert len(whole) >= 4
            for since in sorted({whole[0].seq, whole[len(whole) // 2].seq, whole[-1].seq,
                                 whole[-1].seq + 1}):
                assert await ladder_units(reader, ladder, since) == [
                    u for u in whole if u.seq >= since]
    finally:
        conn2.close()


@pytest.mark.parametrize("change", ["values", "a match gone", "a row not the same", "more rows",
                                    "fewer rows"])
async def test_write_tail_updates_in_place_while_the_rows_are_the_same(
        db_path: Path, tmp_path: Path, change: str) -> None:
    """``write_tail`` leaves the ladder's rows from ``first`` on equal to the given ones, in
    order: the same rows updated in place (ids kept), a gone match's rows deleted, and from
    the first row that is not the same, the rest deleted and the given ones inserted."""
    write_log(db_path, 23, matches=60)
    assert (await replay_here(db_path, _config(tmp_path)))[0] == 0
    rows = sql(db_path, ROWS, ("backgammon",))
    first = rows[len(rows) // 2][0]
    tail = [r for r in rows if r[0] >= first]
    history = [r[1:] for r in tail]  # (ladder, player, before, after, match, event, at)
    kept = len(tail)
    if change == "values":
        # every third row's after moved, and the before alone of the row after it
        history = [(*h[:2], h[2], h[3] + 1.0, *h[4:]) if i % 3 == 0
                   else (*h[:2], (h[2] or 0.0) + 1.0, *h[3:]) if i % 3 == 1 else h
                   for i, h in enumerate(history)]
    elif change == "a match gone":
        gone = history[6][4]
        history = [h for h in history if h[4] != gone]
    elif change == "a row not the same":
        other = next(h[1] for h in history if h[1] != history[9][1])
        history[9] = (history[9][0], other, *history[9][2:])
        kept = 9
    elif change == "more rows":
        history = history + history[-4:]
    else:
        history = history[:-6]
        kept = len(history)
    conn = open_connection(db_path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        done = await write_tail(SqliteTx(conn), "backgammon", first, history, INSERT_HISTORY)
        conn.execute("COMMIT")
    finally:
        conn.close()
    after = sql(db_path, ROWS, ("backgammon",))
    assert [r[1:] for r in after if r[0] >= first] == history
    assert [r for r in after if r[0] < first] == [r for r in rows if r[0] < first]
    same = [r[0] for r in tail[:kept]]
    if change == "a match gone":
        same = [r[0] for r in tail if r[5] != gone]
    assert [r[0] for r in after if r[0] >= first][:len(same)] == same  # updated in place
    assert done.kept + done.updated == len(same)
    assert done.updated == (len(range(0, len(tail), 3)) + len(range(1, len(tail), 3))
                            if change == "values" else 0)
    assert done.inserted == len(history) - len(same)
    assert done.deleted == len(tail) - len(same)


@pytest.mark.parametrize("damage", ["a rating row gone", "fewer games than the tail's rows"])
async def test_a_tail_that_does_not_add_up_is_corrected_from_the_whole_log(
        db_path: Path, tmp_path: Path, damage: str) -> None:
    """When a tail player's stored standing cannot be what the tail was added to, the plugin
    replays the whole log instead (before writing anything), which also mends the standing."""
    write_log(db_path, 24, matches=80)
    assert (await replay_here(db_path, _config(tmp_path)))[0] == 0
    whole = tmp_path / "whole.db"
    shutil.copy(db_path, whole)
    rated = [r[0] for r in sql(db_path, "SELECT id FROM matches WHERE ladder = 'backgammon' AND "
                                        "status = 'finished' AND seq IS NOT NULL ORDER BY seq")]
    match_id = rated[len(rated) // 2]
    player = sql(db_path, "SELECT player_id FROM match_players WHERE match_id = ? LIMIT 1",
                 (match_id,))[0][0]
    conn = sqlite3.connect(db_path)
    with conn:
        if damage == "a rating row gone":
            conn.execute("DELETE FROM ratings WHERE ladder = 'backgammon' AND player_id = ?",
                         (player,))
        else:
            conn.execute("UPDATE ratings SET games = 0 WHERE ladder = 'backgammon' AND "
                         "player_id = ?", (player,))
    conn.close()
    got = await correct(db_path, "backgammon", match_id, "void", tail=True)
    want = await correct(whole, "backgammon", match_id, "void", tail=False)
    assert state(db_path) == state(whole)
    assert repr(sorted(got.standings.items())) == repr(sorted(want.standings.items()))
    code, out = await replay_here(db_path, _config(tmp_path), "--check")
    assert code == 0, out
