"""What survives: a restart on the same file, SIGTERM to `matchlobby serve`, the file itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

from testkit.cli import run_cli_async
from testkit.clients import start_match
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.db import schema_version, sql
from testkit.fibs import FibsModel, check_changes, check_fibs_state
from testkit.postgres import PgDb
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer
from testkit.server_process import ServerProcess

from clients import LobbyClient
from server.store.schema import SCHEMA_VERSION

LADDERS = ("backgammon", "scrabble", "foosball-singles", "foosball-doubles")
PLAYERS = ("alice", "bob", "carol", "dave", "erin")


async def _snapshot(c: LobbyClient) -> dict:
    """Every ladder, every player's ratings and history and account facts."""
    shot: dict = {}
    for ladder in LADDERS:
        shot[ladder] = await c.call("ladder", ladder=ladder, all=True)
    for name in PLAYERS:
        who = await c.call("whois", name=name)
        for volatile in ("online", "status", "last_login"):
            who.pop(volatile)
        shot[name] = (who, await c.call("history", name=name))
    shot["events"] = await c.call("events")
    return shot


async def test_restart_keeps_ratings_history_accounts_and_live_matches(harness: LobbyServer) -> None:
    await harness.start()
    c = {n: await harness.player(n) for n in PLAYERS}
    admin = await harness.admin()
    model = FibsModel()
    m1 = await start_match(c["alice"], c["bob"], length=3)
    await c["bob"].call("resign")
    model.play("alice", "bob", 3)
    eid = (await admin.call("event create", name="Cup", ladder="scrabble"))["id"]
    rows = [f"Cup,{today()},alice,carol,400,390,,", f"Cup,{today()},dave,alice,350,351,,"]
    await admin.call("event import", new=True, event=eid, csv=results_text(rows))
    await admin.call("event close", event=eid)
    live = await start_match(c["bob"], c["carol"], length=5)  # still being played
    claimed = await start_match(c["dave"], c["erin"], length=3)
    await c["erin"].call("report win", score_a=3, score_b=1)  # awaiting dave's answer
    before = await _snapshot(admin)
    assert before["bob"][0]["match"]["match"] == live

    await harness.stop()
    for client in c.values():
        await client.next_push("disconnected")
    await harness.start()

    watcher = await harness.client()
    assert await _snapshot(watcher) == before
    await check_fibs_state(watcher, model)
    # every account logs in again, with the live matches where they were
    again = {n: await harness.client() for n in PLAYERS}
    replies = {n: await again[n].login(n, PASSWORD) for n in PLAYERS}
    assert replies["alice"]["match"] is None
    # bob, back first, could claim once the drop timeout (counted from the start) has passed;
    # carol, back after him, finds him connected
    assert 0 < replies["bob"]["match"].pop("claim_in") <= 600
    assert replies["carol"]["match"].pop("claim_in") is None
    assert replies["bob"]["match"] == replies["carol"]["match"]
    assert {k: v for k, v in replies["bob"]["match"].items() if k != "stake"} == {
        "match": live, "ladder": "backgammon", "length": 5, "a": "bob", "b": "carol",
        "status": "playing"}
    assert replies["erin"]["match"]["status"] == "claimed"
    assert (await watcher.call("whois", name="carol"))["status"] == "playing"
    await (await harness.client()).login(ADMIN, ADMIN_PASSWORD)
    await expect_wrong_password(harness)

    # both live matches can be finished after the restart, with the claimed score kept
    finished = await again["carol"].call("resign")
    assert finished["match"] == live
    check_changes(finished["changes"], model.play("bob", "carol", 5))
    finished = await again["dave"].call("confirm", match=claimed)
    check_changes(finished["changes"], model.play("erin", "dave", 3))
    assert sql(harness.db, "SELECT score_a, score_b FROM matches WHERE id = ?", (claimed,)) == [
        (1, 3)]
    await check_fibs_state(watcher, model)
    assert m1 < live < claimed


async def expect_wrong_password(harness: LobbyServer) -> None:
    c = await harness.client()
    reply = await c.request("login", {"name": "alice", "password": "not-it"})
    assert reply["ok"] is False and reply["error"]["code"] == "forbidden"


async def test_an_acknowledged_result_is_in_the_file(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    mid = await start_match(alice, bob, length=3)
    finished = await alice.call("resign")
    # the reply has left only after the commit: another connection to the file sees it all
    if not isinstance(lobby.db, PgDb):
        assert sql(lobby.db, "PRAGMA journal_mode") == [("wal",)]
    assert sql(lobby.db, "SELECT status, winner, how, length FROM matches WHERE id = ?",
               (mid,)) == [("finished", "b", "resign", 3)]
    stored = dict(sql(lobby.db, "SELECT p.name, r.rating FROM ratings r JOIN players p "
                                "ON p.id = r.player_id WHERE r.ladder = 'backgammon'"))
    assert stored == {c["player"]: c["after"] for c in finished["changes"]}
    assert sql(lobby.db, "SELECT count(*) FROM history WHERE match_id = ?", (mid,)) == [(2,)]
    assert schema_version(lobby.db) == SCHEMA_VERSION


async def test_matchlobby_serve_as_a_process(db_path: Path, fast_config: Path,
                                             tmp_path: Path) -> None:
    server = ServerProcess(db_path, fast_config, log=tmp_path / "serve.log").start()
    try:
        await server.ready()
        assert f"listening on {server.url} " in server.output(), server.tail()
        alice, bob, admin = (LobbyClient(server.url, reconnect=False) for _ in range(3))
        for client in (alice, bob, admin):
            await client.connect()
        await alice.register("alice", PASSWORD)
        await bob.register("bob", PASSWORD)
        assert (await admin.login(ADMIN, ADMIN_PASSWORD))["role"] == "admin"
        await start_match(alice, bob, length=1)
        finished = await bob.call("resign")
        eid = (await admin.call("event create", name="Day", ladder="foosball-singles"))["id"]
        await admin.call("event result", new=True, event=eid, side_a="alice", side_b="bob", score_a=10,
                         score_b=4)
        await admin.call("event close", event=eid)
        table = await admin.call("ladder", ladder="foosball-singles")

        assert await asyncio.to_thread(server.terminate) == 0
        for client in (alice, bob, admin):
            gone = await client.next_push("disconnected")
            assert gone["data"]["code"] == 1001  # going away
            await client.close()
        assert "stopped" in server.output()
    finally:
        server.stop()

    # the data survived: the file, the audit and a new server all agree
    assert sql(db_path, "SELECT name FROM players ORDER BY id") == [(ADMIN,), ("alice",), ("bob",)]
    done = await run_cli_async(["replay", "--check", "--db", str(db_path)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    h = LobbyServer(db_path)
    try:
        await h.start()
        c = await h.client()
        await c.login("alice", PASSWORD)
        row = (await c.call("rating", ladder="backgammon"))["ratings"][0]
        after = {ch["player"]: ch["after"] for ch in finished["changes"]}
        assert row["rating"] == after["alice"] and row["player"] == "alice"
        assert await c.call("ladder", ladder="foosball-singles") == table
    finally:
        await h.aclose()


async def test_concurrent_results_are_each_committed_and_consistent(lobby: LobbyServer) -> None:
    names = [f"p{i}" for i in range(8)]
    c = {n: await lobby.player(n) for n in names}
    pairs = [(names[i], names[i + 1]) for i in range(0, 8, 2)]
    for i, (a, b) in enumerate(pairs):
        await start_match(c[a], c[b], length=i + 1)
    # every loser resigns at the same moment: the writer may group them into one commit
    finished = await asyncio.gather(*(c[b].call("resign") for _, b in pairs))
    model = FibsModel()
    for (a, b), (i, data) in zip(pairs, enumerate(finished), strict=True):
        assert data["winner"] == a
        check_changes(data["changes"], model.play(a, b, i + 1))
    await check_fibs_state(c["p0"], model)
    assert sql(lobby.db, "SELECT count(*) FROM matches WHERE status = 'finished'") == [(4,)]
    assert sorted(s for (s,) in sql(lobby.db, "SELECT seq FROM matches")) == [1, 2, 3, 4]
    done = await run_cli_async(["replay", "--check", "--db", str(lobby.db)], lobby.db.parent)
    assert done.returncode == 0, done.stdout


async def test_a_cas_event_closed_after_a_restart_agrees_with_the_log(harness: LobbyServer) -> None:
    """Peklo's history is reloaded at start-up; the next close must match a replay."""
    await harness.start()
    admin = await harness.admin()
    header = "event,date,side_a,side_b,score_a,score_b\n"
    first = await admin.call("event create", name="Spring", ladder="scrabble")
    rows = "".join(f"Spring,{today()},{a},{b},{sa},{sb}\n" for a, b, sa, sb in (
        ("ann", "ben", 420, 380), ("cid", "dee", 300, 300), ("ann", "cid", 350, 390),
        ("ben", "dee", 401, 399)))
    await admin.call("event import", new=True, event=first["id"], csv=header + rows)
    await admin.call("event close", event=first["id"])
    await harness.stop()
    await harness.start()
    admin = await harness.admin()
    second = await admin.call("event create", name="Summer", ladder="scrabble")
    await admin.call("event import", new=True, event=second["id"],
                     csv=header + f"Summer,{today()},ann,dee,500,320\nSummer,{today()},eve,ben,410,412\n")
    await admin.call("event close", event=second["id"])
    done = await run_cli_async(["replay", "--check", "--db", str(harness.db)], harness.db.parent)
    assert done.returncode == 0, done.stdout + done.stderr


async def test_a_cas_event_with_no_rated_game_keeps_the_ladder(harness: LobbyServer) -> None:
    """Closing an empty event, or one of unrated games only, rates nothing: every stored
    value (Peklo's too) survives it and a restart, and a replay agrees."""
    await harness.start()
    admin = await harness.admin()
    header = "event,date,side_a,side_b,score_a,score_b,length,rated\n"
    first = await admin.call("event create", name="Spring", ladder="scrabble")
    rows = "".join(f"Spring,{today()},{a},{b},{sa},{sb},,\n" for a, b, sa, sb in (
        ("ann", "ben", 420, 380), ("cid", "dee", 300, 300), ("ann", "cid", 350, 390)))
    await admin.call("event import", new=True, event=first["id"], csv=header + rows)
    await admin.call("event close", event=first["id"])
    table = await admin.call("ladder", ladder="scrabble", all=True)
    assert len({p["peklo"] for p in table["players"]}) > 1  # solved, not all the start value
    empty = await admin.call("event create", name="Rained off", ladder="scrabble")
    assert (await admin.call("event close", event=empty["id"]))["changes"] == []
    forfeits = await admin.call("event create", name="Forfeits", ladder="scrabble")
    await admin.call("event import", event=forfeits["id"],
                     csv=header + f"Forfeits,{today()},ann,dee,0,0,,no:forfeit\n")
    assert (await admin.call("event close", event=forfeits["id"]))["changes"] == []
    assert await admin.call("ladder", ladder="scrabble", all=True) == table
    await harness.stop()
    await harness.start()
    admin = await harness.admin()
    assert await admin.call("ladder", ladder="scrabble", all=True) == table
    done = await run_cli_async(["replay", "--check", "--db", str(harness.db)], harness.db.parent)
    assert done.returncode == 0, done.stdout + done.stderr
