"""Corrections (void, adjudicate) recompute the ladder from the log; `matchlobby replay` audits it."""

from __future__ import annotations

from pathlib import Path

from testkit.cli import rate_file, run_cli_async
from testkit.clients import check_ladder_update, expect_error, start_match
from testkit.db import execute, sql
from testkit.fibs import FibsModel, check_fibs_state
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient


async def _replay_check(db: Path) -> tuple[int, str]:
    done = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    return done.returncode, done.stdout + done.stderr


async def _play(winner: LobbyClient, loser: LobbyClient, length: int) -> int:
    mid = await start_match(winner, loser, length=length)
    await loser.call("resign")
    return mid


def _fibs_row(winner: str, loser: str, length: int) -> str:
    return f"club,{today()},{winner},{loser},{length},0,{length},"


async def test_void_recomputes_and_replay_check_agrees(lobby: LobbyServer, tmp_path: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    carol = await lobby.player("carol")
    admin = await lobby.admin()
    watcher = await lobby.client()
    await watcher.watch("backgammon")
    m1 = await _play(alice, bob, 5)
    m2 = await _play(bob, carol, 3)
    m3 = await _play(carol, alice, 1)
    m4 = await _play(alice, carol, 3)
    assert (await _replay_check(lobby.db))[0] == 0

    data = await admin.call("void", match=m2, reason="wrong players")
    assert data["status"] == "voided" and data["recomputed"] is True and data["match"] == m2
    assert data["reason"] == "wrong players" and data["winner"] is None
    for c in (bob, carol):
        assert (await c.next_push("match_corrected"))["data"]["match"] == m2
    update = await watcher.next_push("ladder_updated")
    assert update["data"]["ladder"] == "backgammon"

    # the ratings are what they would have been without m2 …
    model = FibsModel()
    model.play("alice", "bob", 5)
    model.play("carol", "alice", 1)
    model.play("alice", "carol", 3)
    await check_fibs_state(watcher, model)
    table = await watcher.call("ladder", ladder="backgammon", all=True)
    check_ladder_update(update["data"], table, [c["player"] for c in data["changes"]])
    # … bit for bit what a fresh computation of the remaining log gives
    offline = await rate_file("fibs", [_fibs_row("alice", "bob", 5), _fibs_row("carol", "alice", 1),
                                       _fibs_row("alice", "carol", 3)], tmp_path / "fibs.csv")
    assert table["players"] == offline["players"]
    hist = await watcher.call("history", name="carol", ladder="backgammon")
    assert [e["cause"] for e in hist["entries"]] == [{"match": m3}, {"match": m4}]
    assert (await watcher.call("whois", name="bob"))["matches"]["played"] == 1

    assert (await _replay_check(lobby.db))[0] == 0  # safe while the server runs
    await expect_error(admin.call("void", match=m2, reason="again"), "conflict")
    await expect_error(admin.call("adjudicate", match=m2, winner="bob"), "conflict")
    await expect_error(admin.call("void", match=999, reason="no such"), "not_found")
    await expect_error(bob.call("void", match=m1, reason="mine"), "forbidden")
    await lobby.stop()
    code, out = await _replay_check(lobby.db)
    assert code == 0, out
    assert sql(lobby.db, "SELECT count(*) FROM corrections WHERE match_id = ?", (m2,)) == [(1,)]


async def test_adjudicate_flips_a_finished_match_and_recomputes(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    carol = await lobby.player("carol")
    admin = await lobby.admin()
    m1 = await start_match(alice, bob, length=5)
    await alice.call("report win", score_a=5, score_b=2)
    await bob.call("confirm", match=m1)
    m2 = await _play(bob, carol, 3)
    await expect_error(admin.call("adjudicate", match=m1, winner="alice"), "conflict")  # already

    data = await admin.call("adjudicate", match=m1, winner="bob")
    assert data["status"] == "finished" and data["winner"] == "bob" and data["recomputed"] is True
    model = FibsModel()
    model.play("bob", "alice", 5)
    model.play("bob", "carol", 3)
    await check_fibs_state(admin, model)
    assert {c["player"] for c in data["changes"]} == {"alice", "bob", "carol"}
    # the scores follow the winner
    assert sql(lobby.db, "SELECT winner, score_a, score_b FROM matches WHERE id = ?", (m1,)) == [
        ("b", 2, 5)]
    hist = await admin.call("history", name="bob", ladder="backgammon")
    assert [e["cause"] for e in hist["entries"]] == [{"match": m1}, {"match": m2}]
    code, out = await _replay_check(lobby.db)
    assert code == 0, out


async def test_void_in_a_closed_cas_event_recomputes_the_event(lobby: LobbyServer,
                                                                tmp_path: Path) -> None:
    admin = await lobby.admin()
    eid = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
    rows = [f"Open,{today()},{a},{b},{sa},{sb},," for a, b, sa, sb in
            (("ann", "ben", 400, 380), ("cid", "dot", 350, 420), ("ann", "cid", 390, 391),
             ("ben", "dot", 300, 300), ("dot", "ann", 280, 410))]
    games = (await admin.call("event import", new=True, event=eid, csv=results_text(rows)))["games"]
    await admin.call("event close", event=eid)
    data = await admin.call("void", match=games[2]["match"], reason="scoresheet lost")
    assert data["recomputed"] is True
    table = await admin.call("ladder", ladder="scrabble", all=True)
    offline = await rate_file("cas", rows[:2] + rows[3:], tmp_path / "cas.csv")
    assert table["players"] == offline["players"]
    code, out = await _replay_check(lobby.db)
    assert code == 0, out


async def test_replay_check_finds_a_tampered_rating_and_replay_fixes_it(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await _play(alice, bob, 3)
    await _play(bob, alice, 1)
    await lobby.stop()
    db = lobby.db
    good = sql(db, "SELECT ladder, player_id, rating, state FROM ratings ORDER BY player_id")
    sql_update = ("UPDATE ratings SET rating = rating + 1 WHERE ladder = 'backgammon' AND "
                  "player_id = (SELECT id FROM players WHERE name = 'alice')")
    _execute(db, sql_update)

    code, out = await _replay_check(db)
    assert code == 1
    assert "backgammon: alice: stored" in out and "bob" not in out

    done = await run_cli_async(["replay", "--db", str(db)], db.parent)
    assert done.returncode == 0, done.stderr
    assert sql(db, "SELECT ladder, player_id, rating, state FROM ratings ORDER BY player_id") \
        == good
    code, out = await _replay_check(db)
    assert code == 0, out


def _execute(db: Path, statement: str) -> None:
    assert execute(db, statement) == 1
