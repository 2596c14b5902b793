"""Live FIBS matches over real WebSocket connections, ended in every way they can end."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import websockets.asyncio.client
from testkit.clients import expect_error, given_up, settle, start_match, until_offline
from testkit.db import sql
from testkit.fibs import FibsModel, check_changes, check_fibs_state, close, fibs_changes
from testkit.server_loop import LobbyServer

from clients import LobbyClient


def test_the_oracle_reproduces_the_checks_of_ratings_md() -> None:
    """The test's own FIBS formula against the numbers RATINGS.md §1 quotes."""
    # favourite's win probability = 1 - (the underdog's change factor); derive it from Δ
    def favourite(diff: float, n: int) -> float:
        d_fav, _ = fibs_changes(1500 + diff, 1000, 1500, 1000, n, first_won=False)
        return -d_fav / (4 * 1 * n**0.5)

    assert round(favourite(100, 1) * 100, 1) == 52.9
    assert round(favourite(100, 13) * 100, 1) == 60.2
    for n, pct in ((1, 58.5), (3, 64.5), (5, 68.4), (7, 71.4), (9, 73.8), (11, 75.9), (13, 77.6)):
        assert round(favourite(300, n) * 100, 1) == pct
    assert fibs_changes(1500, 400, 1500, 400, 1, True) == (2.0, -2.0)
    w, lo = fibs_changes(1500, 0, 1500, 0, 1, True)
    assert (round(w, 2), round(lo, 2)) == (9.98, -9.98)


async def _watcher(lobby: LobbyServer) -> LobbyClient:
    w = await lobby.client()
    assert await w.watch("backgammon") == {"ladder": "backgammon", "watching": True}
    return w


async def _check_finished_pushes(players: dict[str, LobbyClient], watcher: LobbyClient,
                                 data: dict, expected: dict, by: LobbyClient) -> None:
    """The players and a watcher hear match_finished, except ``by``, whose command ended
    the match and who has the same object as its reply; each player hears their own
    rating_changed, the watcher hears both."""
    for c in [*players.values(), watcher]:
        if c is not by:
            p = await c.next_push("match_finished")
            assert p["data"] == data
    for c, names in [*((c, [n]) for n, c in players.items()), (watcher, sorted(expected))]:
        heard = []
        for _ in names:
            d = (await c.next_push("rating_changed"))["data"]
            assert d["ladder"] == "backgammon"
            assert d["cause"] == {"match": data["match"]}
            check_changes([d], {d["player"]: expected[d["player"]]})
            heard.append(d["player"])
        assert sorted(heard) == names
    # a reply on the same connection comes after any push sent before it
    await by.call("ladders")
    assert [p for p in by.drain_pushes() if p["event"] == "match_finished"] == []


async def test_resign_rates_at_once_with_the_fibs_numbers(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    carol = await lobby.player("carol")
    watcher = await _watcher(lobby)
    model = FibsModel()

    mid = await start_match(alice, bob, length=5)
    assert (await alice.whois("alice")).status == "playing"
    finished = await bob.call("resign")
    expected = model.play("alice", "bob", 5)
    assert finished["match"] == mid and finished["winner"] == "alice" and finished["how"] == "resign"
    assert finished["loser"] == "bob" and finished["length"] == 5 and finished["rated"] is True
    check_changes(finished["changes"], expected)
    # equal ratings, new players: 4 · 4.95 · √5 · ½ each way
    change = {c["player"]: c["change"] for c in finished["changes"]}
    assert close(change["alice"], 4 * 4.95 * 5**0.5 / 2)
    assert close(change["bob"], -4 * 4.95 * 5**0.5 / 2)
    await _check_finished_pushes({"alice": alice, "bob": bob}, watcher, finished, expected, by=bob)

    # a second match between unequal players exercises the favourite/underdog branches
    mid2 = await start_match(carol, alice, length=3)
    assert mid2 != mid
    finished = await alice.call("resign")  # the favourite resigns: the underdog wins
    expected = model.play("carol", "alice", 3)
    check_changes(finished["changes"], expected)
    await _check_finished_pushes({"alice": alice, "carol": carol}, watcher, finished, expected,
                                 by=alice)

    await check_fibs_state(watcher, model)
    who = await watcher.call("whois", name="alice")
    assert who["matches"] == {"played": 2, "dropped": 0, "disputed": 0}
    assert who["status"] == "ready" and who["match"] is None
    hist = await watcher.call("history", name="alice", ladder="backgammon")
    assert [e["cause"] for e in hist["entries"]] == [{"match": mid}, {"match": mid2}]
    listed = await watcher.call("who")
    assert {p["player"]: p["ratings"]["backgammon"] for p in listed["players"]} == {
        n: (await watcher.call("rating", name=n, ladder="backgammon"))["ratings"][0]["rating"]
        for n in ("alice", "bob", "carol")
    }


async def test_report_win_then_confirm(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    watcher = await _watcher(lobby)
    model = FibsModel()
    mid = await start_match(alice, bob, length=7)

    claimed = await bob.call("report win", score_a=7, score_b=3)
    assert claimed == {"match": mid, "by": "bob", "scores": [7, 3], "status": "claimed"}
    assert (await alice.next_push("result_claimed"))["data"] == claimed
    # a claim cannot be answered by its author, nor reported twice
    await expect_error(bob.call("confirm", match=mid), "forbidden")
    await expect_error(alice.call("report win"), "conflict")
    # nothing is rated before the confirmation
    assert (await watcher.call("ladder", ladder="backgammon", all=True))["players"] == []

    finished = await alice.call("confirm", match=mid)
    expected = model.play("bob", "alice", 7)
    assert finished["how"] == "confirm" and finished["winner"] == "bob"
    check_changes(finished["changes"], expected)
    await _check_finished_pushes({"alice": alice, "bob": bob}, watcher, finished, expected, by=alice)
    await check_fibs_state(watcher, model)
    # the confirmed score is the stored one (bob is side b)
    assert sql(lobby.db, "SELECT score_a, score_b, winner, status FROM matches WHERE id = ?",
               (mid,)) == [(3, 7, "b", "finished")]
    await expect_error(alice.call("confirm", match=mid), "not_found")


async def test_report_win_dispute_and_admin_adjudicates(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    watcher = await _watcher(lobby)
    model = FibsModel()
    mid = await start_match(alice, bob, length=5)

    await alice.call("report win", score_a=5, score_b=2)
    disputed = await bob.call("dispute", match=mid)
    assert disputed == {"match": mid, "status": "disputed", "by": "bob",
                        "since": disputed["since"]}
    assert (await admin.next_push("result_disputed"))["data"] == disputed
    assert (await alice.next_push("result_disputed"))["data"] == disputed
    # while disputed, neither player can settle it themselves
    await expect_error(bob.call("resign"), "conflict")
    await expect_error(bob.call("confirm", match=mid), "conflict")
    await expect_error(alice.call("adjudicate", match=mid, winner="alice"), "forbidden")
    await expect_error(admin.call("adjudicate", match=mid, winner="carol"), "bad_request")

    finished = await admin.call("adjudicate", match=mid, winner="ALICE")
    expected = model.play("alice", "bob", 5)
    assert finished["how"] == "adjudicate" and finished["winner"] == "alice"
    check_changes(finished["changes"], expected)
    await _check_finished_pushes({"alice": alice, "bob": bob}, watcher, finished, expected, by=admin)
    await check_fibs_state(watcher, model)
    for name in ("alice", "bob"):
        who = await watcher.call("whois", name=name)
        assert who["matches"] == {"played": 1, "dropped": 0, "disputed": 1}
    # the claimed score stands, since the admin agreed with the claimant
    assert sql(lobby.db, "SELECT score_a, score_b, how FROM matches WHERE id = ?", (mid,)) == [
        (5, 2, "adjudicate")]


async def test_claim_after_the_drop_timeout(harness: LobbyServer) -> None:
    await harness.start(drop_timeout=0.3)
    alice, bob = await harness.player("alice"), await harness.player("bob")
    carol = await harness.player("carol")
    watcher = await _watcher(harness)
    model = FibsModel()
    mid = await start_match(alice, bob, length=3)

    await expect_error(alice.call("claim", match=mid), "conflict")  # bob is still connected
    await expect_error(carol.call("claim", match=mid), "forbidden")  # not carol's match
    await bob.close()
    await until_offline(alice, "bob")
    e = await expect_error(alice.call("claim", match=mid), "conflict")  # too early
    assert "bob" in e.message
    await asyncio.sleep(0.35)
    finished = await alice.call("claim", match=mid)
    expected = model.play("alice", "bob", 3)
    assert finished["how"] == "claim" and finished["winner"] == "alice"
    check_changes(finished["changes"], expected)
    await _check_finished_pushes({"alice": alice}, watcher, finished, expected, by=alice)
    await check_fibs_state(watcher, model)
    bob_info = await watcher.call("whois", name="bob")
    assert bob_info["matches"] == {"played": 1, "dropped": 1, "disputed": 0}
    assert bob_info["online"] is False and bob_info["status"] == "offline"
    assert (await watcher.call("whois", name="alice"))["matches"]["dropped"] == 0
    assert sql(harness.db, "SELECT dropped FROM players WHERE name = 'bob'") == [(1,)]


async def test_claim_is_refused_once_the_dropper_is_back(harness: LobbyServer) -> None:
    await harness.start(drop_timeout=0.2)
    alice, bob = await harness.player("alice"), await harness.player("bob")
    mid = await start_match(alice, bob)
    await bob.close()
    await until_offline(alice, "bob")
    await asyncio.sleep(0.25)
    bob2 = await harness.client()
    back = await bob2.login("bob", "pw-secret")
    assert back["match"]["match"] == mid  # the login reply names the live match
    await expect_error(alice.call("claim", match=mid), "conflict")


async def test_abort_by_agreement_is_unrated(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    mid = await start_match(alice, bob, length=5)
    asked = await alice.call("abort")
    assert asked == {"match": mid, "status": "abort_requested", "by": "alice"}
    assert (await bob.next_push("abort_requested"))["data"] == asked
    # asking again is still only a request
    assert (await alice.call("abort"))["status"] == "abort_requested"
    done = await bob.call("abort")
    assert done == {"match": mid, "status": "aborted", "rated": False}
    assert (await alice.next_push("match_aborted"))["data"] == done

    assert sql(lobby.db, "SELECT count(*) FROM ratings") == [(0,)]
    assert sql(lobby.db, "SELECT count(*) FROM history") == [(0,)]
    assert sql(lobby.db, "SELECT status, seq FROM matches WHERE id = ?", (mid,)) == [
        ("aborted", None)]
    assert (await alice.call("rating", name="alice"))["ratings"] == []
    assert (await alice.call("ladder", ladder="backgammon", all=True))["players"] == []
    assert (await alice.call("history", name="bob"))["entries"] == []
    who = await alice.call("whois", name="alice")
    assert who["matches"]["played"] == 0 and who["match"] is None
    await expect_error(alice.call("resign"), "conflict")  # no match any more
    # both are free to play again
    assert await start_match(bob, alice) != mid


async def test_unlimited_match_is_never_rated(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    mid = await start_match(alice, bob, length="unlimited")
    finished = await bob.call("resign")
    assert finished["match"] == mid and finished["length"] == "unlimited"
    assert finished["rated"] is False and finished["changes"] == []
    assert sql(lobby.db, "SELECT count(*) FROM ratings") == [(0,)]


async def test_one_match_at_a_time_and_invitations(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    carol = await lobby.player("carol")
    await expect_error(alice.call("invite", name="alice", ladder="backgammon"), "bad_request")
    await expect_error(alice.call("invite", name="bob", ladder="scrabble"), "bad_request")
    await expect_error(alice.call("invite", name="nobody", ladder="backgammon"), "not_found")
    await expect_error(alice.call("invite", name="bob", ladder="chess"), "not_found")
    await carol.call("invite", name="bob", ladder="backgammon")
    assert await bob.call("decline", name="carol") == {"declined": "carol"}
    assert (await carol.next_push("declined"))["data"] == {"by": "bob"}
    await expect_error(bob.call("join", name="carol"), "not_found")
    await start_match(alice, bob)
    await expect_error(carol.call("invite", name="bob", ladder="backgammon"), "conflict")
    await expect_error(alice.call("invite", name="carol", ladder="backgammon"), "conflict")


async def test_second_login_replaces_the_first_connection(lobby: LobbyServer) -> None:
    first = await lobby.player("alice")
    second = await lobby.client()
    await second.login("alice", "pw-secret")
    out = await first.next_push("logged_out")
    assert "another connection" in out["data"]["reason"]
    gone = await first.next_push("disconnected")
    assert gone["data"]["code"] == 4000
    assert not first.connected
    # the new connection is the one the lobby knows
    who = await second.call("who")
    assert [p["player"] for p in who["players"]] == ["alice"]
    assert (await second.call("whois", name="alice"))["online"] is True


async def test_reconnecting_clients_do_not_fight_over_one_account(lobby: LobbyServer) -> None:
    """A client replaced by a newer login must not log back in (and replace the other)."""
    first = await lobby.client(reconnect=True)
    await first.register("alice", "pw-secret")
    second = await lobby.client(reconnect=True)
    await second.login("alice", "pw-secret")
    await first.next_push("logged_out")
    await first.next_push("disconnected")
    await given_up(first)  # it will not come back to replace the second
    assert second.connected
    assert "logged_out" not in [p["event"] for p in await settle(second)]
    assert [p["player"] for p in (await second.call("who"))["players"]] == ["alice"]


async def test_each_reply_precedes_the_pushes_it_caused_under_concurrency(lobby: LobbyServer) -> None:
    """Many players resigning at once: each resigner's next frame is its own reply."""
    pairs = 12

    async def raw(name: str) -> Any:
        ws = await websockets.asyncio.client.connect(lobby.url, max_queue=None)
        assert json.loads(await ws.recv())["event"] == "hello"
        await ws.send(json.dumps({"id": "r", "cmd": "register",
                                  "args": {"name": name, "password": "pw-secret"}}))
        while json.loads(await ws.recv()).get("id") != "r":
            pass
        return ws

    async def reply_of(ws: Any, rid: str) -> dict[str, Any]:
        while True:
            msg = json.loads(await ws.recv())
            if msg.get("id") == rid:
                return dict(msg)

    resigners = [await raw(f"res{i}") for i in range(pairs)]
    winners = [await raw(f"win{i}") for i in range(pairs)]
    for i, (a, b) in enumerate(zip(resigners, winners, strict=True)):
        await a.send(json.dumps({"id": "i", "cmd": "invite",
                                 "args": {"name": f"win{i}", "ladder": "backgammon"}}))
        await reply_of(a, "i")
        await b.send(json.dumps({"id": "j", "cmd": "join", "args": {"name": f"res{i}"}}))
        await reply_of(b, "j")

    async def resign_and_read_next(ws: Any) -> dict[str, Any]:
        # skip the frames queued before the resign (match_started, ...): the server answers a
        # connection's frames in order, so they all come before the reply to this round trip
        await ws.send(json.dumps({"id": "p", "cmd": "help", "args": {"command": "help"}}))
        while (msg := json.loads(await ws.recv())).get("id") != "p":
            assert msg.get("event") != "match_finished", msg
        await ws.send(json.dumps({"id": "x", "cmd": "resign"}))
        while True:
            msg = json.loads(await ws.recv())
            # presence is sent in coalesced batches, so the join's "playing" may still come
            # late; anything the resign caused must follow its reply
            if msg.get("event") != "presence" or any(
                    p["status"] != "playing" for p in msg["data"]["players"]):
                return dict(msg)

    firsts = await asyncio.gather(*(resign_and_read_next(ws) for ws in resigners))
    assert all(f.get("id") == "x" and f.get("ok") for f in firsts), firsts
    for ws in resigners + winners:
        await ws.close()


async def test_ladder_names_are_typed_in_any_case(lobby: LobbyServer) -> None:
    """As players' names are: a command naming a ladder finds it whatever its case, and
    answers with the ladder's own spelling."""
    alice, bob = await lobby.players("alice", "bob")
    assert await alice.call("watch", ladder="BackGammon") == {"ladder": "backgammon",
                                                               "watching": True}
    await alice.call("invite", name="bob", ladder="BACKGAMMON", length=1)
    started = await bob.call("join", name="alice")
    assert started["ladder"] == "backgammon"
    await bob.call("resign")
    listed = await alice.call("ladder", ladder="Backgammon")
    assert listed["ladder"] == "backgammon" and {p["player"] for p in listed["players"]} == {
        "alice", "bob"}
    assert [r["ladder"] for r in (await alice.call("rating", ladder="BACKgammon"))["ratings"]
            ] == ["backgammon"]
    assert (await alice.call("history", name="bob", ladder="BackGammon"))["ladder"] == \
        "backgammon"
