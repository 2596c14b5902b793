"""A player who drops is not left in the dark: their opponent is told when a claim opens,
and a player whose match ended while they were connected nowhere (claimed, decided or voided
by an admin) is told at their next login how it ended and what it did to their rating, on
whichever server they come back to."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from testkit.clients import expect_error, play, settle, start_match, told_presence, until_offline
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

from clients import LobbyClient


def change_of(changes: list[dict[str, Any]], player: str) -> dict[str, Any]:
    own = next(c for c in changes if c["player"] == player)
    return {"before": own["before"], "after": own["after"], "change": own["change"]}


async def rating(c: LobbyClient, player: str) -> float:
    found = await c.call("rating", name=player, ladder="backgammon")
    return float(found["ratings"][0]["rating"])


async def back(server: LobbyServer, name: str) -> tuple[LobbyClient, dict[str, Any]]:
    """``name`` logs in again on a new connection: the client and the login's reply."""
    c = await server.client()
    return c, await c.login(name, PASSWORD)


async def offline_entry(c: LobbyClient, name: str) -> dict[str, Any]:
    """The ``presence`` entry that tells ``c`` that ``name`` left."""
    while True:
        push = await c.next_push("presence", timeout=10)
        for entry in push["data"]["players"]:
            if entry["player"] == name and entry["status"] == "offline":
                return dict(entry)


async def test_the_opponent_is_told_when_a_claim_opens_and_when_the_player_is_back(
        harness: LobbyServer) -> None:
    await harness.start(drop_timeout=30)
    alice, bob, carol = await harness.players("alice", "bob", "carol")
    await alice.call("who")  # a listener of presence, as the web page is
    await carol.call("who")
    mid = await start_match(alice, bob)
    await settle(alice)
    await settle(carol)
    await bob.close()

    entry = await offline_entry(alice, "bob")
    assert entry["match"] == mid and 0 < entry["claim_in"] <= 30
    assert await offline_entry(carol, "bob") == {"player": "bob", "status": "offline"}
    e = await expect_error(alice.call("claim", match=mid), "conflict")
    assert "30 s" in e.message
    # a reconnecting page learns it from the login reply
    again, reply = await back(harness, "alice")
    assert reply["match"]["match"] == mid and 0 < reply["match"]["claim_in"] <= 30
    await again.call("who")
    # the player comes back: the entry about them has no claim any more
    bob, reply = await back(harness, "bob")
    assert reply["match"]["claim_in"] is None
    read = await told_presence(again, {"bob": "playing"})
    assert read[-1] == {"player": "bob", "status": "playing"}


async def test_an_opponent_not_listing_who_is_told_the_claim_too(harness: LobbyServer) -> None:
    await harness.start(drop_timeout=0.3)
    alice, bob = await harness.players("alice", "bob")
    mid = await start_match(alice, bob)
    await bob.close()
    entry = await offline_entry(alice, "bob")
    assert entry["match"] == mid and 0 <= entry["claim_in"] <= 1


async def test_a_claim_is_told_at_the_next_login_with_the_rating_change(
        harness: LobbyServer) -> None:
    await harness.start(drop_timeout=0.3)
    alice, bob = await harness.players("alice", "bob")
    mid = await start_match(alice, bob, length=3)
    await bob.close()
    await until_offline(alice, "bob")
    await asyncio.sleep(0.35)
    finished = await alice.call("claim", match=mid)

    bob, told = await back(harness, "bob")
    [ended] = told["while_away"]["matches"]
    assert told["while_away"]["more"] == 0
    assert ended == {"match": mid, "ladder": "backgammon", "length": 3, "a": "alice", "b": "bob",
                     "how": "claim", "status": "finished", "winner": "alice", "reason": None,
                     "rated": True, "at": ended["at"],
                     "rating": change_of(finished["changes"], "bob")}
    # what the ratings say now, and the history's entry for that match
    assert ended["rating"]["after"] == await rating(bob, "bob")
    history = await bob.call("history", name="bob", ladder="backgammon")
    [entry] = [e for e in history["entries"] if e["cause"] == {"match": mid}]
    assert (entry["before"], entry["after"]) == (ended["rating"]["before"],
                                                 ended["rating"]["after"])
    # told once; and alice, who was there, is told nothing
    assert (await back(harness, "bob"))[1]["while_away"] is None
    assert (await back(harness, "alice"))[1]["while_away"] is None


async def test_an_admins_decision_and_void_are_told_to_whoever_was_away(
        harness: LobbyServer) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    admin = await harness.admin()
    await play(alice, bob)  # rated before: the void below moves both ratings back to this
    mid = await start_match(alice, bob, length=3)
    await bob.call("report win", score_a=3, score_b=1)
    await alice.call("dispute", match=mid)
    assert bob.session is not None
    token = bob.session.token
    await alice.close()
    await bob.close()
    await until_offline(admin, "alice")
    await until_offline(admin, "bob")
    decided = await admin.call("adjudicate", match=mid, winner="bob")

    # alice comes back (by her session token, as the web page does); bob stays away
    alice, told = await back(harness, "alice")
    [ended] = told["while_away"]["matches"]
    assert (ended["how"], ended["status"], ended["winner"]) == ("adjudicate", "finished", "bob")
    assert ended["rating"] == change_of(decided["changes"], "alice")

    # then the admin voids it: alice is here and hears it at once; bob is away
    before = await rating(alice, "bob")
    voided = await admin.call("void", match=mid, reason="they played the wrong length")
    assert (await alice.next_push("match_corrected"))["data"]["status"] == "voided"
    resumed = await harness.client()
    reply = await resumed.call("resume", token=token)
    first, second = reply["while_away"]["matches"]
    assert (first["how"], first["winner"]) == ("adjudicate", "bob")
    assert first["rating"] == change_of(decided["changes"], "bob")
    assert (second["how"], second["status"], second["winner"], second["reason"]) == (
        "void", "voided", None, "they played the wrong length")
    assert second["rating"] == change_of(voided["changes"], "bob")
    assert second["rating"]["before"] == before
    assert second["rating"]["after"] == await rating(resumed, "bob")
    assert (await back(harness, "alice"))[1]["while_away"] is None


async def test_what_is_told_is_capped_and_counted(harness: LobbyServer) -> None:
    from server.handlers.coming_back import SHOWN

    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    admin = await harness.admin()
    played = []
    for _ in range(SHOWN + 2):
        await start_match(alice, bob)
        played.append((await alice.call("resign"))["match"])
    await bob.close()
    await until_offline(admin, "bob")
    for mid in played:
        await admin.call("void", match=mid, reason="a test of many")
    _, told = await back(harness, "bob")
    assert told["while_away"]["more"] == 2
    assert [m["match"] for m in told["while_away"]["matches"]] == played[2:]


@pytest.mark.postgresql
@pytest.mark.both_backends
async def test_coming_back_through_another_server(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """bob plays on node b against alice on node a and drops: alice, on node a, is told when
    she may claim; she claims there; bob comes back through node a and is told."""
    a, b = nodes
    await a.start(drop_timeout=0.5)
    await b.start(drop_timeout=0.5)
    alice = await a.player("alice")
    first = await a.player("bob")
    bob = await b.login("bob")
    await first.next_push("logged_out", timeout=10)  # the login on node a has ended
    await alice.call("who")
    mid = await start_match(alice, bob, length=3)
    await settle(alice)
    await bob.close()
    entry = await offline_entry(alice, "bob")
    assert entry["match"] == mid and 0 <= entry["claim_in"] <= 1
    await asyncio.sleep(0.6)
    finished = await alice.call("claim", match=mid)
    _, told = await back(a, "bob")
    [ended] = told["while_away"]["matches"]
    assert (ended["match"], ended["how"], ended["winner"]) == (mid, "claim", "alice")
    assert ended["rating"] == change_of(finished["changes"], "bob")
