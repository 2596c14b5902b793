"""Two protocol rules through a real lobby: how a frame is read (JSON ``cmd`` in any case; a JSON
value that is not an object refused), and that a disputed match waits for an admin whatever its
players send (``abort`` included)."""

from __future__ import annotations

import json

import pytest
from testkit.clients import expect_error, start_match
from testkit.db import sql
from testkit.server_loop import LobbyServer

NOT_AN_OBJECT = "A JSON message must be an object with 'cmd' and optional 'id' and 'args'."


@pytest.mark.parametrize("frame", [
    '"whois alice"', '"who"', ' "who" ', '""', "5", "-3.5", "1e3", "null", "true", "false",
    " null\n", "[]", '[{"cmd": "who"}]', '["who"]',
])
async def test_a_json_value_that_is_not_an_object_is_refused(lobby: LobbyServer, frame: str) -> None:
    c = await lobby.player("alice")
    reply = await c.send_raw(frame)
    assert reply == {"id": None, "ok": False, "cmd": None,
                     "error": {"code": "bad_request", "message": NOT_AN_OBJECT}}
    assert (await c.call("whois", name="alice"))["online"] is True  # the connection carries on


async def test_command_names_are_read_in_any_case_plain_or_json(lobby: LobbyServer) -> None:
    c = await lobby.player("alice")
    admin = await lobby.admin()
    event = (await admin.call("event create", name="Cup", ladder="scrabble"))["id"]
    for frame in ("WHOIS alice", "WhoIs alice", '"whois" alice', "'WHOIS' alice",
                  json.dumps({"cmd": "WHOIS", "args": {"name": "alice"}}),
                  json.dumps({"id": 9, "cmd": " WhoIs ", "args": {"name": "alice"}})):
        reply = await c.send_raw(frame)
        assert reply["ok"] is True and reply["cmd"] == "whois", (frame, reply)
        assert reply["data"]["player"] == "alice"
    for frame in (f"EVENT SHOW {event}", f"Event show {event}",
                  json.dumps({"cmd": "EVENT   Show", "args": {"event": event}})):
        reply = await c.send_raw(frame)
        assert reply["ok"] is True and reply["cmd"] == "event show", (frame, reply)
    # a ladder's name, like a player's, is found in any case; the reply spells it its way
    reply = await c.send_raw(json.dumps({"cmd": "LADDER", "args": {"ladder": "Scrabble"}}))
    assert reply["cmd"] == "ladder" and reply["data"]["ladder"] == "scrabble", reply
    reply = await c.send_raw(json.dumps({"cmd": "LADDER", "args": {"ladder": "Scrabbles"}}))
    assert reply["error"]["code"] == "not_found"


async def disputed(lobby: LobbyServer) -> tuple[int, list[object]]:
    alice, bob = await lobby.players("alice", "bob")
    admin = await lobby.admin()
    mid = await start_match(alice, bob, length=3)
    await alice.call("abort")  # a proposal made before the dispute does not survive it
    await bob.next_push("abort_requested")
    await bob.call("report win", score_a=3, score_b=1)
    await alice.next_push("result_claimed")
    data = await alice.call("dispute", match=mid)
    expected = {"match": mid, "status": "disputed", "by": "alice", "since": data["since"]}
    assert data == expected
    for who in (alice, bob, admin):  # both players see it, and the admins online
        assert (await who.next_push("result_disputed"))["data"] == expected
    return mid, [alice, bob, admin]


async def test_a_disputed_match_cannot_be_aborted_resigned_or_claimed(lobby: LobbyServer) -> None:
    mid, (alice, bob, admin) = await disputed(lobby)
    before = sql(lobby.db, "SELECT status, winner, finished_at FROM matches WHERE id = ?", (mid,))
    assert before == [("disputed", None, None)]
    for player in (bob, alice, bob):  # either, agreeing or proposing: refused alike
        e = await expect_error(player.call("abort"), "conflict")
        assert e.message.startswith(f"Match {mid} is disputed; an admin will decide it.")
    for player in (alice, bob):
        e = await expect_error(player.call("resign"), "conflict")
        assert "disputed" in e.message
        await expect_error(player.call("claim", match=mid), "conflict")
    assert sql(lobby.db, "SELECT status, winner, finished_at FROM matches WHERE id = ?",
               (mid,)) == before
    for player in (alice, bob):  # it waits for an admin; they are free meanwhile
        info = await player.call("whois", name="alice")
        assert info["match"] is None and info["disputes"][0]["status"] == "disputed"
    # the admin decides it
    decided = await admin.call("adjudicate", match=mid, winner="bob")
    assert (decided["winner"], decided["how"]) == ("bob", "adjudicate")
    assert (await alice.next_push("match_finished"))["data"] == decided


async def test_an_admin_may_void_a_disputed_match(lobby: LobbyServer) -> None:
    mid, (alice, bob, admin) = await disputed(lobby)
    voided = await admin.call("void", match=mid, reason="no agreement")
    assert (voided["status"], voided["recomputed"]) == ("voided", False)
    for player in (alice, bob):
        assert (await player.next_push("match_corrected"))["data"]["status"] == "voided"
        assert (await player.call("whois", name="bob"))["disputes"] == []
    await expect_error(alice.call("abort"), "conflict")  # nothing left to abort


async def test_an_undisputed_match_is_still_aborted_by_agreement(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    mid = await start_match(alice, bob)
    assert (await alice.call("abort"))["status"] == "abort_requested"
    assert await bob.call("abort") == {"match": mid, "status": "aborted", "rated": False}
    assert sql(lobby.db, "SELECT status FROM matches WHERE id = ?", (mid,)) == [("aborted",)]


async def test_disputes_lists_every_disputed_match_for_an_admin_who_comes_later(
        lobby: LobbyServer) -> None:
    """Both players gone and no admin online when it happened: ``disputes`` still finds it,
    after a restart too, and a decided match leaves the list."""
    mid, (alice, bob, admin) = await disputed(lobby)
    carol, dave = await lobby.players("carol", "dave")
    second = await start_match(carol, dave, length="unlimited")
    await dave.call("report win")
    await carol.call("dispute", match=second)
    playing = await start_match(*await lobby.players("erin", "frank"))
    for c in (alice, bob, admin, carol, dave):
        await c.close()
    await lobby.restart()
    late = await lobby.admin()
    expected = [
        {"match": mid, "ladder": "backgammon", "length": 3, "a": "alice", "b": "bob",
         "status": "disputed", "claimant": "bob", "by": "alice", "scores": [3, 1]},
        {"match": second, "ladder": "backgammon", "length": "unlimited", "a": "carol",
         "b": "dave", "status": "disputed", "claimant": "dave", "by": "carol", "scores": None}]

    async def listed() -> list[dict[str, object]]:
        """``disputes``, without each dispute's time and age (test_disputes_free.py)."""
        got = (await late.call("disputes"))["disputes"]
        for d in got:
            assert isinstance(d.pop("since"), str) and isinstance(d.pop("age"), int)
        return got

    assert await listed() == expected
    assert playing not in [d["match"] for d in expected]
    e = await expect_error((await lobby.login("erin")).call("disputes"), "forbidden")
    assert "admin" in e.message
    await late.call("adjudicate", match=mid, winner="alice")
    assert await listed() == expected[1:]
    await late.call("void", match=second, reason="no agreement")
    assert await late.call("disputes") == {"disputes": []}
