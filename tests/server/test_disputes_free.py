"""A dispute holds neither player: the disputed match waits for an admin while both play
others (or each other) again; the commands that act on "my match" act on the match being
played, never the disputed one; the admins online are told with the dispute's time, and
``disputes`` lists each with its age. The same across two nodes of one database."""

from __future__ import annotations

from datetime import UTC, datetime

from testkit.clients import expect_error, start_match, told_presence
from testkit.constants import PASSWORD
from testkit.db import sql
from testkit.server_loop import LobbyServer

from clients import LobbyClient


async def dispute(claimant: LobbyClient, other: LobbyClient, match: int,
                  admin: LobbyClient | None = None) -> dict[str, object]:
    """``claimant`` reports a win (3–1), ``other`` disputes it; the dispute's reply."""
    await claimant.call("report win", score_a=3, score_b=1)
    await other.next_push("result_claimed")
    data: dict[str, object] = await other.call("dispute", match=match)
    if admin is not None:
        assert (await admin.next_push("result_disputed"))["data"] == data
    return data


def recent(stamp: object) -> bool:
    """``stamp`` is a UTC time of the last minute, as the log writes them."""
    assert isinstance(stamp, str) and stamp.endswith("Z"), stamp
    at = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return abs((datetime.now(UTC) - at).total_seconds()) < 60


async def test_a_disputed_match_frees_both_players_until_an_admin_decides_it(
        lobby: LobbyServer) -> None:
    alice, bob, carol, watcher = await lobby.players("alice", "bob", "carol", "watcher")
    admin = await lobby.admin()
    await watcher.call("who")
    old = await start_match(alice, bob, length=3)
    await told_presence(watcher, {"alice": "playing", "bob": "playing"})
    data = await dispute(bob, alice, old, admin)
    assert data["match"] == old and data["status"] == "disputed" and data["by"] == "alice"
    assert recent(data["since"])
    # both shown free again, to who lists and to whois
    await told_presence(watcher, {"alice": "ready", "bob": "ready"})
    rows = {r["player"]: r["status"] for r in (await watcher.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "ready"
    info = await watcher.call("whois", name="alice")
    assert info["status"] == "ready" and info["match"] is None
    assert [(d["match"], d["status"], d["since"]) for d in info["disputes"]] == [
        (old, "disputed", data["since"])]
    # nothing of their own to resign, report or abort: the disputed match waits for an admin
    for player in (alice, bob):
        for cmd in ("resign", "abort", "report win"):
            e = await expect_error(player.call(cmd), "conflict")
            assert e.message.startswith(f"Match {old} is disputed; an admin will decide it."), e
    # alice plays carol, bob and alice play each other again: invite and join work
    new = await start_match(alice, carol)
    await expect_error(bob.call("invite", name="alice", ladder="backgammon"), "conflict")
    assert (await alice.call("resign"))["match"] == new  # the new match, not the disputed one
    again = await start_match(bob, alice, length=5)
    assert (await watcher.call("whois", name="bob"))["match"]["match"] == again
    claimed = await alice.call("report win", score_a=5, score_b=0)
    assert claimed["match"] == again
    await bob.next_push("result_claimed")
    assert (await bob.call("confirm", match=again))["winner"] == "alice"
    # the admin decides the old one, still as it was claimed
    listed = (await admin.call("disputes"))["disputes"]
    assert [(d["match"], d["claimant"], d["by"], d["scores"], d["since"]) for d in listed] == [
        (old, "bob", "alice", [3, 1], data["since"])]
    assert isinstance(listed[0]["age"], int) and 0 <= listed[0]["age"] < 60
    decided = await admin.call("adjudicate", match=old, winner="bob")
    assert (decided["match"], decided["winner"]) == (old, "bob")
    for player in (alice, bob):
        assert (await player.next_push("match_finished", where=lambda p: p["data"]["match"] == old))
    assert sql(lobby.db, "SELECT id, status, winner FROM matches ORDER BY id") == [
        (old, "finished", "b"), (new, "finished", "b"), (again, "finished", "b")]
    assert (await admin.call("disputes"))["disputes"] == []


async def test_a_player_disputed_while_playing_another_match_plays_on(
        lobby: LobbyServer) -> None:
    """A dispute answered by a player who has meanwhile started another match: both of the
    claimant's matches exist at once; the commands act on the live one."""
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    first = await start_match(alice, bob, length=3)
    await dispute(alice, bob, first)
    second = await start_match(bob, carol)
    third = await start_match(alice, dave, length=3)
    await dispute(dave, alice, third)
    fourth = await start_match(alice, dave)  # their match is disputed: they play again
    assert (await alice.call("abort"))["match"] == fourth
    assert (await bob.call("abort"))["match"] == second  # bob's match with carol
    assert (await carol.call("abort"))["status"] == "aborted"
    assert (await dave.call("abort")) == {"match": fourth, "status": "aborted", "rated": False}
    info = await alice.call("whois", name="alice")
    assert info["match"] is None
    assert [d["match"] for d in info["disputes"]] == [first, third]
    assert sql(lobby.db, "SELECT id, status FROM matches ORDER BY id") == [
        (first, "disputed"), (second, "aborted"), (third, "disputed"), (fourth, "aborted")]


async def test_after_a_restart_a_disputed_match_holds_nobody(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    old = await start_match(alice, bob, length=3)
    data = await dispute(bob, alice, old)
    await alice.close()
    await bob.close()
    await lobby.restart()
    alice = await lobby.login("alice")
    back = await alice.call("whois", name="alice")
    assert back["match"] is None and [d["match"] for d in back["disputes"]] == [old]
    assert (await (await lobby.client()).login("bob", PASSWORD))["disputes"] == [
        {"match": old, "ladder": "backgammon", "length": 3, "a": "alice", "b": "bob",
         "status": "disputed", "since": data["since"]}]


async def test_a_dispute_frees_its_players_on_every_node(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """alice on node a, bob on node b: alice disputes on a; b shows bob free at once, bob
    plays carol there, and the admin on node b lists the dispute and decides it."""
    a, b = nodes
    await a.start()
    await b.start()
    alice, = await a.players("alice")
    bob, carol, watcher = await b.players("bob", "carol", "watcher")
    admin = await b.admin()
    await watcher.call("who")
    old = await start_match(alice, bob, length=3)
    await told_presence(watcher, {"alice": "playing", "bob": "playing"}, timeout=10)
    await bob.call("report win", score_a=3, score_b=0)
    await alice.next_push("result_claimed", timeout=10)
    data = await alice.call("dispute", match=old)
    assert (await admin.next_push("result_disputed", timeout=10))["data"] == data
    await told_presence(watcher, {"alice": "ready", "bob": "ready"}, timeout=10)
    new = await start_match(bob, carol)
    assert (await bob.call("resign"))["match"] == new
    again = await start_match(carol, alice)  # across the nodes, alice on a is free too
    assert (await alice.call("resign"))["match"] == again
    listed = (await admin.call("disputes"))["disputes"]
    assert [(d["match"], d["since"]) for d in listed] == [(old, data["since"])]
    assert (await admin.call("adjudicate", match=old, winner="bob"))["winner"] == "bob"
