"""``matchlobby evaluate --ladder`` on a lobby's database: the same report as ``--file`` on the
same results, read from the log's tables apart from the lobby's log reader."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import run_many
from testkit.replays import CONFIG, FIRST, LADDERS, write_log
from testkit.results import results_text

from ratings_plugin import log_evaluation
from ratings_plugin.commands.replay import match_log
from ratings_plugin.evaluation import evaluate, evaluate_plain
from ratings_plugin.log_evaluation import evaluation
from server.store.backends import open_store
from server.store.connection import open_connection
from server.store.log import ladder_units
from server.store.port import SqliteTx

pytestmark = pytest.mark.sqlite_only("the log is written straight into an SQLite file")


def results_of(db: Path, ladder: str) -> list[str]:
    """The ladder's rated matches as a results file's rows, one event each, in rating order."""
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            "SELECT id, played_on, side_a, side_b, score_a, score_b, winner, length, "
            "unrated_reason FROM matches WHERE ladder = ? AND status = 'finished' "
            "AND seq IS NOT NULL ORDER BY seq", (ladder,)).fetchall()
    finally:
        conn.close()
    rows = []
    for mid, day, a, b, sa, sb, winner, length, unrated in found:
        if sa is None or sb is None:
            sa, sb = (1, 0) if winner == "a" else (0, 1)
        rated = "" if unrated is None else f"no:{unrated}"
        rows.append(f"m{mid},{day},{a},{b},{sa},{sb},{length or 'unlimited'},{rated}")
    return rows


def test_a_ladders_log_scores_as_its_results_file(db_path: Path, tmp_path: Path) -> None:
    write_log(db_path, 11, matches=150)
    config = tmp_path / "lobby.toml"
    config.write_text(CONFIG, encoding="utf-8")
    files = {}
    for name in ("backgammon", "hypergammon"):
        files[name] = tmp_path / f"{name}.csv"
        files[name].write_text(results_text(results_of(db_path, name)), encoding="utf-8")
    on_db = ["--db", str(db_path), "--config", str(config), "--format", "json"]
    runs = run_many([
        ["evaluate", "--ladder", "backgammon", *on_db, "--option",
         "experience_includes_match=false", "--system", "glicko2"],
        ["evaluate", "--file", str(files["backgammon"]), "--format", "json", "--system", "fibs",
         "--system", "fibs", "--option", "experience_includes_match=false"],
        ["evaluate", "--ladder", "hypergammon", *on_db],
        ["evaluate", "--file", str(files["hypergammon"]), "--format", "json", "--system", "fibs",
         "--option", "experience_includes_match=false", "--option", "start_rating=1400.0"],
        ["evaluate", "--ladder", "chess", *on_db],
    ], tmp_path)
    reports: list[dict[str, Any]] = []
    for done in runs[:4]:
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(done.stdout))
    ladder, on_file, hyper, hyper_file = reports
    rated = len(results_of(db_path, "backgammon"))
    assert rated > 100
    assert [(r["system"], r["variant"], r["games"]) for r in ladder["systems"]] == [
        ("fibs", {}, rated), ("fibs", {"experience_includes_match": False}, rated),
        ("glicko2", {}, rated), ("baseline", {}, rated), ("win_rate", {}, rated)]
    # Glicko-2 rates by the time of day, which a results file does not hold
    assert [r for r in ladder["systems"] if r["system"] != "glicko2"] == on_file["systems"]
    assert ladder["systems"][0]["log_loss"] != ladder["systems"][1]["log_loss"]
    # the ladder's own options are read from its configuration (a start of 1400, no match in
    # the experience factor): only the variant shown differs from the file's
    assert hyper["systems"][0]["variant"] == {}
    assert [dict(r, variant={}) for r in hyper["systems"]] == [
        dict(r, variant={}) for r in hyper_file["systems"]]
    unknown = runs[4]
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == ("matchlobby evaluate: unknown ladder 'chess': choose one "
                                      "of backgammon, hypergammon, scrabble")


async def test_the_plain_path_gives_the_books_report_exactly(db_path: Path) -> None:
    """A FIBS ladder's plain log rows give, bit for bit, the report its units give through
    books; a row the plain replay does not take sends the ladder back to the books."""
    write_log(db_path, 12, matches=200)
    conn = open_connection(db_path)
    try:
        ids = {row["name"]: row["id"] for row in conn.execute("SELECT id, name FROM players")}
        for ladder in LADDERS.values():
            entries = [({}, ladder), ({"experience_includes_match": True}, dataclasses.replace(
                ladder, options=ladder.system.parse_options({"experience_includes_match": True})))]
            units = await ladder_units(SqliteTx(conn), ladder.name)
            fast = evaluate_plain(entries, match_log(conn, ladder.name), ids)
            assert fast is not None
            assert fast == evaluate(entries, units)
            assert fast["systems"][0]["games"] == len(units) > 100
        conn.execute("UPDATE matches SET unrated_reason = 'practice' WHERE id = (SELECT max(id) "
                     "FROM matches WHERE ladder = 'backgammon' AND seq IS NOT NULL)")
        assert evaluate_plain([({}, FIRST)], match_log(conn, "backgammon"), ids) is None
    finally:
        conn.close()


async def test_a_correction_committed_under_a_lower_id_is_seen(db_path: Path) -> None:
    """On PostgreSQL a correction's id is drawn before its commit, so two made on two nodes
    may commit out of id order: an evaluation carried on from an ask that saw the later id
    still starts over when the earlier one commits, and matches a fresh one."""
    write_log(db_path, 13, matches=150)
    conn = sqlite3.connect(db_path)
    top = conn.execute("SELECT max(id) FROM corrections").fetchone()[0]
    rated = [row[0] for row in conn.execute(
        "SELECT id FROM matches WHERE ladder = 'backgammon' AND seq IS NOT NULL AND "
        "status = 'finished' AND unrated_reason IS NULL ORDER BY seq LIMIT 2")]

    def adjudicate(correction: int, match: int) -> None:
        with conn:
            conn.execute("UPDATE matches SET winner = CASE winner WHEN 'a' THEN 'b' ELSE 'a' "
                         "END, score_a = score_b, score_b = score_a WHERE id = ?", (match,))
            conn.execute("INSERT INTO corrections (id, match_id, kind, old_status, new_status, "
                         "at) VALUES (?, ?, 'adjudicate', 'finished', 'finished', "
                         "'2026-03-02T00:00:00Z')", (correction, match))

    entries = [({}, FIRST)]
    store = await open_store(str(db_path), [])
    try:
        adjudicate(top + 2, rated[0])  # committed first
        read: list[int] = []
        kept = await evaluation(store, "backgammon", entries, read.append)
        assert sum(read) > 100
        before = kept.report()
        adjudicate(top + 1, rated[1])  # drawn first, committed second
        read.clear()
        carried = await evaluation(store, "backgammon", entries, read.append, kept)
        fresh = await evaluation(store, "backgammon", entries, read.append)
        assert carried.report() == fresh.report() != before
    finally:
        await store.close()
        conn.close()


async def test_the_log_read_a_page_at_a_time_gives_the_whole_logs_report(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain rows and units read in small pages (and a plain read that meets a row it does not
    take, the books over every unit after it) give the report of the whole log at once, each
    row charged once."""
    monkeypatch.setattr(log_evaluation, "PAGE_ROWS", 7)
    monkeypatch.setattr(log_evaluation, "PAGE_UNITS", 5)
    write_log(db_path, 14, matches=120)
    store = await open_store(str(db_path), [])
    try:
        players = len(await store.fetchall("SELECT id FROM players"))
        entries = [({}, FIRST)]
        for step in ("plain", "books"):
            units = await store.log.units("backgammon")
            read: list[int] = []
            found = await evaluation(store, "backgammon", entries, read.append)
            assert isinstance(found.run, log_evaluation.PlainRun) == (step == "plain")
            assert found.report() == evaluate(entries, units)
            assert sum(read) == players + len(units) > 100
            conn = sqlite3.connect(db_path)
            with conn:  # a row the plain replay does not take, half way through the log
                conn.execute("UPDATE matches SET unrated_reason = 'practice' WHERE id = ?",
                             (units[len(units) // 2].match_id,))
            conn.close()
    finally:
        await store.close()
