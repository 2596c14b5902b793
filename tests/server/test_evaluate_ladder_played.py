"""``matchlobby evaluate --ladder`` on matches played through a real server, beside ``--file``
on the same results written by the test."""

from __future__ import annotations

import json
import math
from pathlib import Path

from testkit.cli import run_cli_async
from testkit.clients import name_of, play
from testkit.db import sql
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer


async def test_matches_played_in_the_lobby_score_as_their_results_file(
        lobby: LobbyServer, db_path: Path, tmp_path: Path) -> None:
    ann, bob, cid = await lobby.players("ann", "bob", "cid")
    played = [(ann, bob, 3), (bob, cid, 1), (ann, cid, 5), (cid, ann, 1), (bob, ann, 7),
              (ann, bob, 1)]
    rows = []
    for i, (winner, loser, length) in enumerate(played):
        match = (await play(winner, loser, length))["match"]
        a, b = name_of(winner), name_of(loser)
        assert sql(db_path, "SELECT side_a, side_b FROM matches WHERE id = ?", (match,)) == [
            (a, b)]  # the inviter is side A
        rows.append(f"m{i},{today()},{a},{b},{length},0,{length},")
    results = tmp_path / "played.csv"
    results.write_text(results_text(rows), encoding="utf-8")
    on_ladder = await run_cli_async(["evaluate", "--ladder", "backgammon", "--db", str(db_path),
                                     "--format", "json"], tmp_path)
    on_file = await run_cli_async(["evaluate", "--file", str(results), "--system", "fibs",
                                   "--format", "json"], tmp_path)
    missing = await run_cli_async(["evaluate", "--ladder", "backgammon", "--db",
                                   str(tmp_path / "missing.db")], tmp_path)
    assert on_ladder.returncode == 0, on_ladder.stderr
    assert on_file.returncode == 0, on_file.stderr
    ladder, file = json.loads(on_ladder.stdout), json.loads(on_file.stdout)
    assert [(r["system"], r["games"]) for r in ladder["systems"]] == [
        ("fibs", 6), ("baseline", 6), ("win_rate", 6)]
    assert ladder == file
    assert ladder["systems"][1]["log_loss"] == math.log(2)
    assert missing.returncode == 2
    assert missing.stderr.strip().endswith("missing.db: no such database file")
    assert not (tmp_path / "missing.db").exists()


async def test_events_closed_in_the_lobby_score_as_their_results_file(
        lobby: LobbyServer, db_path: Path, tmp_path: Path) -> None:
    """ČAS events (each a unit rated at its close, a draw among the games) through the books."""
    admin = await lobby.admin()
    days = {"Day 1": [("ann", "ben", 420, 380), ("cid", "dan", 390, 390), ("ann", "cid", 400, 350),
                      ("ben", "dan", 330, 420)],
            "Day 2": [("ann", "ben", 500, 300), ("cid", "dan", 440, 300), ("ann", "dan", 450, 320)]}
    rows = []
    for day, games in days.items():
        event = (await admin.call("event create", name=day, ladder="scrabble"))["id"]
        these = [f"{day},{today()},{a},{b},{sa},{sb},," for a, b, sa, sb in games]
        await admin.call("event import", new=True, event=event, csv=results_text(these))
        await admin.call("event close", event=event)
        rows += these
    results = tmp_path / "days.csv"
    results.write_text(results_text(rows), encoding="utf-8")
    on_ladder = await run_cli_async(["evaluate", "--ladder", "scrabble", "--db", str(db_path),
                                     "--format", "json"], tmp_path)
    on_file = await run_cli_async(["evaluate", "--file", str(results), "--system", "cas",
                                   "--format", "json"], tmp_path)
    assert on_ladder.returncode == 0, on_ladder.stderr
    assert on_file.returncode == 0, on_file.stderr
    ladder, file = json.loads(on_ladder.stdout), json.loads(on_file.stdout)
    assert [(r["system"], r["games"]) for r in ladder["systems"]] == [
        ("cas", 7), ("baseline", 7), ("win_rate", 7)]
    assert ladder == file
    day_one = 4  # predicted from the empty ladder: 0.5 each
    assert ladder["systems"][0]["calibration"][5]["games"] >= day_one
