"""The library's own machinery: pushes by callback and by iterator, plain lines, raw frames,
refusals as :class:`LobbyError`, and what happens to a request when its connection goes."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from testkit.clients import Gate, expect_error, given_up, play, settle, start_match, told_presence
from testkit.constants import PASSWORD
from testkit.fibs import FibsModel, close, fibs_chance, fibs_changes
from testkit.server_loop import LobbyServer

from clients import LobbyClient, LobbyError
from clients.lobby_client import BANNED, REPLACED, Disconnected, Push
from clients.models import Invitation, Invitations, Invited, LoggedIn, Stake, StakeSide


async def test_callbacks_and_the_iterator_deliver_the_same_pushes(lobby: LobbyServer) -> None:
    alice = await lobby.player("alice")
    await alice.call("who")  # presence pushes from now on
    named: list[Push] = []
    every: list[Push] = []
    alice.on("invited", named.append)
    alice.on("*", every.append)
    iterated: list[Push] = []

    async def iterate() -> None:
        async for push in alice.pushes():
            iterated.append(push)
            if push["event"] == "match_finished":
                return

    reader = asyncio.create_task(iterate())
    bob, carol = await lobby.players("bob", "carol")
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await carol.call("invite", name="alice", ladder="backgammon")
    await settle(alice)
    await alice.call("join", name="bob")
    await bob.resign()  # alice hears match_finished (the resigner has it as its reply)
    await asyncio.wait_for(reader, 5)
    # presence pushes (bob and carol came) go at most once a second: among these, or later
    assert [p["event"] for p in iterated if p["event"] != "presence"] == [
        "invited", "invited", "match_finished"]
    assert every[:len(iterated)] == iterated  # the same objects, in the same order
    assert named == [p for p in iterated if p["event"] == "invited"]
    assert [p["data"]["from"] for p in named] == ["bob", "carol"]
    assert iterated[-1]["data"]["winner"] == "alice"


async def test_a_failing_callback_does_not_stop_the_others(
        lobby: LobbyServer, caplog: pytest.LogCaptureFixture) -> None:
    alice, bob = await lobby.players("alice", "bob")
    got: list[str] = []

    def broken(push: Push) -> None:
        raise RuntimeError("callback bug")

    alice.on("invited", broken)
    alice.on("invited", lambda p: got.append(p["data"]["from"]))
    with caplog.at_level(logging.ERROR, logger="clients.lobby_client"):
        await bob.call("invite", name="alice", ladder="backgammon")
        push = await alice.next_push("invited")
    assert got == ["bob"] and push["data"]["from"] == "bob"
    assert "push callback failed" in caplog.text
    assert (await alice.call("who"))["spectators"] == 0  # the connection carries on


async def test_next_push_filters_and_times_out(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    await bob.call("invite", name="alice", ladder="backgammon", length=1)
    await carol.call("invite", name="alice", ladder="backgammon", length=7)
    seven = await alice.next_push("invited", where=lambda p: p["data"]["length"] == 7)
    assert seven["data"]["from"] == "carol"
    with pytest.raises(TimeoutError):
        await alice.next_push("invited", timeout=0.2)  # bob's was passed over and dropped


async def test_plain_lines_and_json_requests(lobby: LobbyServer) -> None:
    alice = await lobby.client()
    registered = await alice.send_line("register alice pw-secret")
    assert registered == {"id": None, "ok": True, "cmd": "register",
                          "data": {"player": "alice", "role": "player",
                                   "session": registered["data"]["session"]}}
    # several lines in flight: replies are matched to them in order
    replies = await asyncio.gather(alice.send_line("whois alice"), alice.send_line("frobnicate"),
                                   alice.send_line("ladder scrabble"), alice.send_line("resign"))
    assert [(r["cmd"], r["ok"]) for r in replies] == [
        ("whois", True), ("frobnicate", False), ("ladder", True), ("resign", False)]
    assert replies[1]["error"]["code"] == "unknown_command"
    assert replies[3]["error"] == {"code": "conflict", "message": "You are not playing a match."}
    # request: the whole reply, refusals included, with the id it was sent with
    reply = await alice.request("whois", {"name": "nobody"})
    assert reply["ok"] is False and reply["error"]["code"] == "not_found"
    assert isinstance(reply["id"], str) and reply["cmd"] == "whois"
    chosen = await alice.request("ladders", request_id="mine-1")
    assert chosen["id"] == "mine-1" and chosen["ok"] is True


async def test_a_raw_frame_reaches_the_server_as_is(lobby: LobbyServer) -> None:
    raw = await lobby.client()
    watcher = await lobby.client()
    await watcher.call("who")
    registered = await raw.send_raw("register carol pw-secret")
    assert registered == {"id": None, "ok": True, "cmd": "register",
                          "data": {"player": "carol", "role": "player",
                                   "session": registered["data"]["session"]}}
    await told_presence(watcher, {"carol": "ready"})
    assert (await watcher.whois("carol")).online
    watched = await raw.send_raw(json.dumps({"id": 77, "cmd": "watch",
                                             "args": {"ladder": "scrabble"}}))
    assert (watched["id"], watched["data"]) == (77, {"ladder": "scrabble", "watching": True})
    assert (await raw.send_raw(b"whois carol"))["error"]["code"] == "bad_request"  # binary
    assert (await raw.send_raw("{not json"))["error"]["code"] == "bad_request"
    assert (await raw.call("whois", name="carol"))["player"] == "carol"


@pytest.mark.parametrize(("who", "cmd", "args", "code"), [
    ("spectator", "frobnicate", {}, "unknown_command"),
    ("spectator", "event", {}, "unknown_command"),
    ("spectator", "whois", {"name": "alice", "colour": "red"}, "bad_request"),
    ("spectator", "ladder", {"ladder": "backgammon", "count": "many"}, "bad_request"),
    ("spectator", "resign", {}, "not_logged_in"),
    ("player", "void", {"match": 1, "reason": "because"}, "forbidden"),
    ("player", "join", {"name": "nobody"}, "not_found"),
    ("player", "abort", {}, "conflict"),
    ("admin", "adjudicate", {"match": 12345, "winner": "alice"}, "not_found"),
])
async def test_refusals_raise_lobby_error(lobby: LobbyServer, who: str, cmd: str,
                                          args: dict[str, Any], code: str) -> None:
    client = {"spectator": lobby.client, "admin": lobby.admin}.get(who)
    c = await (client() if client else lobby.player("alice"))
    error = await expect_error(c.call(cmd, **args), code)
    assert isinstance(error, LobbyError) and str(error).startswith(code + ": ")
    assert error.reply["cmd"] in (cmd, None)
    # the connection is still good
    assert (await c.call("help", command="who"))["command"] == "who"


async def test_a_frame_over_the_limit_ends_the_connection(lobby: LobbyServer) -> None:
    c = await lobby.client()
    closed: list[Push] = []
    c.on("disconnected", closed.append)
    with pytest.raises(Disconnected):
        await c.call("whois", name="x" * 70_000)
    await asyncio.sleep(0)
    assert [p["data"]["code"] for p in closed] == [1009]
    assert not c.connected


async def test_a_newer_login_replaces_the_older_connection(lobby: LobbyServer) -> None:
    first = await lobby.client(reconnect=True)
    await first.register("alice", PASSWORD)
    second = await lobby.client()
    await second.login("alice", PASSWORD)
    told = await first.next_push("logged_out")
    assert "another connection" in told["data"]["reason"]
    gone = await first.next_push("disconnected")
    assert gone["data"]["code"] == REPLACED
    # the replaced client does not log in again (the two would take turns)
    await given_up(first)
    assert (first.connected, first.reconnects) == (False, 0)
    watcher = await lobby.client()
    assert (await watcher.whois("alice")).online
    assert await second.call("who") == {
        "players": [{"player": "alice", "status": "ready", "ratings": {}}], "spectators": 1}


async def test_a_banned_client_is_told_why_and_does_not_log_in_again(lobby: LobbyServer) -> None:
    banned = await lobby.client(reconnect=True)
    await banned.register("erin", PASSWORD)
    admin = await lobby.admin()
    try:
        await admin.call("ban", name="erin", reason="cheating")
        told = await banned.next_push("logged_out")
        assert told["data"]["cause"] == "banned" and "cheating" in told["data"]["reason"]
        assert (await banned.next_push("disconnected"))["data"]["code"] == BANNED
        await given_up(banned)  # its logins would be refused until the ban ends
        assert (banned.connected, banned.reconnects) == (False, 0)
    finally:
        await admin.call("unban", name="erin")


async def test_a_client_banned_while_away_is_told_why_when_it_comes_back(
        lobby: LobbyServer) -> None:
    """The ban lands while the connection is down (the server's watch held off, then the
    connection lost): the reconnect's ``resume`` is refused, and the client says so as the
    push ``logged_out`` and stops logging in, instead of a warning in its log."""
    server = lobby.server
    assert server is not None
    away = await lobby.client(reconnect=True)
    await away.register("fred", PASSWORD)
    admin = await lobby.admin()
    await server.lobby.account_watch.stop()
    try:
        await admin.call("ban", name="fred", until="2099-01-01", reason="cheating")
        ws = away._ws
        assert ws is not None
        await ws.close()  # the connection lost, not closed by the client's owner
        told = await away.next_push("logged_out", timeout=10)
        assert told["data"]["cause"] == "banned"
        assert "2099-01-01" in told["data"]["reason"] and "cheating" in told["data"]["reason"]
        assert (away.credentials, away.session) == (None, None)
        assert (await away.call("whois", name="fred"))["online"] is False
    finally:
        await server.lobby.account_watch.start()
        await admin.call("unban", name="fred")


async def test_a_request_in_flight_fails_with_disconnected_when_the_client_closes(
        lobby: LobbyServer, gate: Gate) -> None:
    c = await lobby.client()
    pending = asyncio.create_task(c.call("events"))
    line = asyncio.create_task(c.send_line("events"))
    await asyncio.wait_for(gate.entered.wait(), 5)
    await c.close()
    gate.release.set()
    for task in (pending, line):
        with pytest.raises(Disconnected):
            await asyncio.wait_for(task, 5)
    assert not c.connected


async def test_a_dead_client_refuses_requests_at_once(lobby: LobbyServer) -> None:
    c = await lobby.client()
    await c.close()
    with pytest.raises(Disconnected):
        await asyncio.wait_for(c.call("who"), 2)
    with pytest.raises(Disconnected):
        await asyncio.wait_for(c.send_line("who"), 2)


async def test_the_context_manager_connects_and_closes(lobby: LobbyServer) -> None:
    async with LobbyClient(lobby.url) as c:
        assert c.connected and c.hello is not None
        assert c.hello["server"] == "matchlobby"
        assert (await c.call("who"))["spectators"] == 1
    assert not c.connected


async def test_a_match_through_the_typed_helpers(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    mid = await start_match(alice, bob, length=3)
    await bob.call("report win", score_a=3, score_b=0)
    finished = await alice.confirm(mid)
    assert finished.winner == "bob" and finished.change_of("bob").change is not None
    rating = await alice.rating("bob", "backgammon")
    assert rating.in_ladder("backgammon") is not None
    assert rating.ratings[0].rating == finished.change_of("bob").after
    assert (await alice.ladder("backgammon")).players[0].player == "bob"
    await expect_error(alice.confirm(mid), "not_found")


async def test_stakes_invitations_and_sessions_typed(lobby: LobbyServer) -> None:
    """The calls for what a match puts at stake, invitations and session tokens, read into
    :mod:`clients.models`; the FIBS figures from RATINGS.md §1 (:mod:`testkit.fibs`)."""
    alice, bob = await lobby.players("alice", "bob")
    await play(alice, bob, length=1)
    fibs = FibsModel()
    fibs.play("alice", "bob", 1)
    a, b = fibs.get("alice"), fibs.get("bob")

    at_stake = await alice.stake("bob", "backgammon", 5)
    assert isinstance(at_stake, Stake)
    assert (at_stake.ladder, at_stake.length) == ("backgammon", 5)
    mine, theirs = at_stake.players
    assert isinstance(mine, StakeSide) and (mine.player, theirs.player) == ("alice", "bob")
    assert at_stake.of("BOB") == theirs
    win, other_loss = fibs_changes(a.rating, a.experience, b.rating, b.experience, 5, True)
    loss, other_win = fibs_changes(a.rating, a.experience, b.rating, b.experience, 5, False)
    for got, want in ((mine.rating, a.rating), (mine.chance, fibs_chance(a.rating, b.rating, 5)),
                      (mine.win, win), (mine.loss, loss), (theirs.rating, b.rating),
                      (theirs.win, other_win), (theirs.loss, other_loss)):
        assert close(got, want), (got, want)
    await expect_error(alice.stake("alice", "backgammon"), "bad_request")
    await expect_error(alice.stake("nobody", "backgammon"), "not_found")

    sent = await alice.invite("bob", "backgammon", 3)
    assert isinstance(sent, Invited)
    assert (sent.to, sent.ladder, sent.length, sent.replaced) == ("bob", "backgammon", 3, False)
    assert sent.expires_at is not None and sent.stake is not None
    assert close(sent.stake.of("alice").chance, fibs_chance(a.rating, b.rating, 3))
    again = await alice.invite("bob", "backgammon", "unlimited")
    assert (again.replaced, again.length, again.stake) == (True, "unlimited", None)
    listed = await bob.invitations()
    assert isinstance(listed, Invitations) and listed.sent == []
    (received,) = listed.received
    assert received == Invitation("alice", "bob", "backgammon", "unlimited", again.expires_at,
                                  None)
    assert (await alice.invitations()).sent == [
        Invitation("alice", "bob", "backgammon", "unlimited", again.expires_at)]
    assert await alice.uninvite("BOB") == "bob"
    assert (await bob.next_push("invitation_withdrawn"))["data"] == {
        "from": "alice", "ladder": "backgammon"}
    assert await bob.invitations() == Invitations([], [])
    await expect_error(alice.uninvite("bob"), "not_found")

    assert bob.session is not None and bob.player == "bob"
    fresh = await lobby.client()
    resumed = await fresh.resume(bob.session.token)
    assert resumed == LoggedIn("bob", "player", None, None)
    assert fresh.player == "bob"
    await expect_error((await lobby.client()).resume("not-a-token"), "forbidden")
