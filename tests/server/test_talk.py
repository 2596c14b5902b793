"""Talk through a real lobby: tell, say, shout and the shouts kept; block and unblock; an
admin's mute; the limits; and the rules for the text itself."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from testkit.clients import expect_error, settle, start_match
from testkit.constants import PLAY_FREELY
from testkit.db import execute, sql
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from server.config import Limits


def pushed(pushes: list[Any], event: str) -> list[dict[str, Any]]:
    return [dict(p["data"]) for p in pushes if p["event"] == event]


async def quiet(c: LobbyClient, *events: str) -> None:
    """Nothing of ``events`` has reached ``c`` (every push caused so far has arrived)."""
    got = await settle(c)
    assert [p for p in got if p["event"] in events] == []


async def test_a_tell_reaches_one_player_on_another_connection(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    assert await alice.call("tell", name="BOB", text="hi bob") == {"to": "bob", "text": "hi bob"}
    told = await bob.next_push("told")
    assert told["data"] == {"from": "alice", "text": "hi bob"}
    await quiet(carol, "told")
    await quiet(alice, "told")
    # a plain line: the message is the rest of the line as typed, quotes and all
    line = await bob.send_line('tell alice don\'t  say "never" \\o/')
    assert line["ok"] and line["data"]["text"] == 'don\'t  say "never" \\o/', line
    assert (await alice.next_push("told"))["data"]["text"] == 'don\'t  say "never" \\o/'


async def test_a_tell_to_nobody_online_is_refused(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    await bob.call("logout")
    refused = await expect_error(alice.call("tell", name="bob", text="hello?"), "not_found")
    assert "bob is not online" in refused.message
    await expect_error(alice.call("tell", name="nobody", text="hello?"), "not_found")
    await expect_error(alice.call("tell", name="alice", text="me"), "bad_request")
    await expect_error(alice.call("tell", name="bob"), "bad_request")  # no TEXT
    guest = await lobby.client()
    await expect_error(guest.call("tell", name="alice", text="hi"), "not_logged_in")


async def test_say_reaches_the_opponent_of_a_live_match_only(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    refused = await expect_error(alice.call("say", text="gl"), "conflict")
    assert "not playing a match" in refused.message
    await start_match(alice, bob, length=3)
    reply = await alice.call("say", text="good luck")
    said = await bob.next_push("said")
    assert said["data"] == {"from": "alice", "text": "good luck", "match": reply["match"]}
    assert reply == {"to": "bob", "text": "good luck", "match": reply["match"]}
    await bob.send_line("say you too")
    assert (await alice.next_push("said"))["data"]["text"] == "you too"
    await quiet(carol, "said")


async def test_a_shout_reaches_everyone_and_a_newcomer_reads_the_latest(
        lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    guest = await lobby.client()
    shout = await alice.call("shout", text="anyone for a 5-pointer?")
    assert shout["from"] == "alice" and shout["text"] == "anyone for a 5-pointer?"
    for listener in (bob, guest):
        assert (await listener.next_push("shouted"))["data"] == shout
    await quiet(alice, "shouted")  # the reply told the shouter
    await bob.call("shout", text="me!")
    newcomer = await lobby.client()  # not logged in: reads the shouts all the same
    latest = (await newcomer.call("shouts"))["shouts"]
    assert [(s["from"], s["text"]) for s in latest] == [("alice", "anyone for a 5-pointer?"),
                                                        ("bob", "me!")]
    assert [s["text"] for s in (await newcomer.call("shouts", count=1))["shouts"]] == ["me!"]
    assert (await newcomer.call("shouts", count=0))["shouts"] == []


async def test_the_database_keeps_the_last_hundred_shouts(harness: LobbyServer) -> None:
    harness.limits = Limits(**PLAY_FREELY, shouts_per_minute=0, shouts_address_per_minute=0,
                            messages_per_second=1e6, burst=1_000_000)
    await harness.start()
    alice = await harness.player("alice")
    for n in range(1, 106):
        await alice.call("shout", text=f"shout {n}")
    kept = (await alice.call("shouts", count=1000))["shouts"]
    assert [s["text"] for s in kept] == [f"shout {n}" for n in range(6, 106)]
    rows = sql(harness.db, "SELECT count(*), min(id) FROM shouts")
    assert rows[0][0] == 100  # the rows themselves, not only the reply
    await harness.restart()
    again = await harness.client()
    assert [s["text"] for s in (await again.call("shouts", count=100))["shouts"]][:1] == [
        "shout 6"]


async def test_a_blocked_player_reaches_nobody_and_is_not_told(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    assert await bob.call("block") == {"blocking": []}
    assert await bob.call("block", name="ALICE") == {"player": "alice", "blocked": True}
    assert await bob.call("block") == {"blocking": ["alice"]}
    await quiet(alice, "told", "blocked")  # alice is not told

    # her tell, say and invitation look sent; none reaches bob
    assert await alice.call("tell", name="bob", text="psst") == {"to": "bob", "text": "psst"}
    invite = await alice.call("invite", name="bob", ladder="backgammon", length=3)
    assert invite["to"] == "bob" and invite["expires_at"]
    await quiet(bob, "told", "invited")
    assert (await bob.call("invitations"))["received"] == []
    await expect_error(bob.call("join", name="alice"), "not_found")

    # in a match bob starts, her says do not reach him either; his reach her
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await alice.call("join", name="bob")
    await alice.call("say", text="hello?")
    await bob.call("say", text="gl")
    assert (await alice.next_push("said"))["data"]["text"] == "gl"
    await quiet(bob, "said")
    await alice.call("resign")

    assert await bob.call("unblock", name="alice") == {"player": "alice", "blocked": False}
    await alice.call("tell", name="bob", text="again")
    assert (await bob.next_push("told"))["data"] == {"from": "alice", "text": "again"}
    assert await bob.call("unblock", name="alice") == {"player": "alice", "blocked": False}
    await expect_error(bob.call("block", name="bob"), "bad_request")
    await expect_error(bob.call("block", name="nobody"), "not_found")


async def test_a_block_holds_after_a_restart(harness: LobbyServer) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    await bob.call("block", name="alice")
    await harness.restart()
    alice, bob = await harness.login("alice"), await harness.login("bob")
    await alice.call("tell", name="bob", text="still there?")
    await quiet(bob, "told")
    assert await bob.call("block") == {"blocking": ["alice"]}


async def test_an_admin_mutes_and_unmutes_a_player(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    admin = await lobby.admin()
    await expect_error(bob.call("mute", name="alice"), "forbidden")  # admins only
    muted = await admin.call("mute", name="alice", minutes=30)
    assert muted["player"] == "alice" and muted["muted"] and muted["until"]
    told = await alice.next_push("muted")
    assert told["data"] == {"muted": True, "until": muted["until"], "by": lobby.admin_name}
    for cmd, args in (("tell", {"name": "bob", "text": "hi"}), ("shout", {"text": "hi"})):
        refused = await expect_error(alice.call(cmd, **args), "forbidden")
        until = muted["until"]
        assert f"until {until[:10]} {until[11:16]} UTC" in refused.message, refused.message
    await start_match(bob, alice)
    await expect_error(alice.call("say", text="hi"), "forbidden")
    await quiet(bob, "told", "said", "shouted")

    await admin.call("unmute", name="alice")
    assert (await alice.next_push("muted"))["data"]["muted"] is False
    await alice.call("say", text="back")
    assert (await bob.next_push("said"))["data"]["text"] == "back"
    await admin.call("unmute", name="alice")  # not muted: nothing to do, nobody told
    await quiet(alice, "muted")

    # without MINUTES: until unmuted
    assert (await admin.call("mute", name="alice"))["until"] is None
    refused = await expect_error(alice.call("say", text="hi"), "forbidden")
    assert "until an admin unmutes you" in refused.message
    await expect_error(admin.call("mute", name="alice", minutes=0), "bad_request")
    await expect_error(admin.call("mute", name="nobody"), "not_found")


async def test_a_mute_that_has_ended_lets_the_player_talk(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    admin = await lobby.admin()
    await admin.call("mute", name="alice", minutes=5)
    await expect_error(alice.call("tell", name="bob", text="hi"), "forbidden")
    execute(lobby.db, "UPDATE mutes SET until = ?", ("2000-01-01T00:00:00Z",))
    await alice.call("tell", name="bob", text="hi")
    assert (await bob.next_push("told"))["data"]["text"] == "hi"


async def test_talk_is_limited_per_player_and_per_address(harness: LobbyServer) -> None:
    harness.limits = Limits(**PLAY_FREELY, talk_per_minute=3, talk_address_per_minute=5,
                            shouts_per_minute=1, shouts_address_per_minute=0)
    await harness.start()
    alice, bob, carol = await harness.players("alice", "bob", "carol")
    for n in range(3):
        await alice.call("tell", name="bob", text=f"{n}")
    refused = await expect_error(alice.call("tell", name="bob", text="again"), "rate_limited")
    assert "too fast" in refused.message and "try again in" in refused.message
    await expect_error(alice.call("tell", name="carol", text="you?"), "rate_limited")
    # the address's allowance (every test client comes from 127.0.0.1): two more, by anyone
    await bob.call("tell", name="alice", text="1")
    await carol.call("tell", name="alice", text="2")
    await expect_error(bob.call("tell", name="alice", text="3"), "rate_limited")
    # shouts count apart
    await bob.call("shout", text="hello all")
    await expect_error(bob.call("shout", text="hello again"), "rate_limited")
    got = pushed(await settle(alice), "told")
    assert [t["text"] for t in got] == ["1", "2"]


BAD_TEXTS = {
    "a control character": "bell\u0007",
    "a line break": "two\nlines",
    "a zero-width space": "hid\u200bden",
    "a right-to-left override": "abc\u202edef",
    "a blank braille cell": "\u2800",
    "nothing but spaces": "   ",
    "201 characters": "x" * 201,
}


async def test_talk_text_follows_the_free_text_rule(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    for why, text in BAD_TEXTS.items():
        for cmd, args in (("tell", {"name": "bob"}), ("shout", {})):
            refused = await expect_error(alice.call(cmd, **args, text=text), "bad_request")
            assert "TEXT" in refused.message, (why, refused.message)
    await quiet(bob, "told", "shouted")
    assert (await bob.call("shouts"))["shouts"] == []
    # NFC, trimmed; 200 characters are fine
    decomposed = unicodedata.normalize("NFD", " Dvořák ")
    assert (await alice.call("tell", name="bob", text=decomposed))["text"] == "Dvořák"
    assert (await bob.next_push("told"))["data"]["text"] == "Dvořák"
    await alice.call("tell", name="bob", text="y" * 200)
    # markup is text like any other: sent on as typed, for clients to show as text
    markup = '<img src=x onerror="alert(1)"><b>bold</b>'
    await alice.call("shout", text=markup)
    assert (await bob.next_push("shouted"))["data"]["text"] == markup


async def test_a_shout_sent_again_with_its_id_is_not_shouted_twice(lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    first = await alice.request("shout", {"text": "once"}, request_id="s1")
    again = await alice.request("shout", {"text": "once"}, request_id="s1")
    assert again["replayed"] and again["data"] == first["data"]
    assert pushed(await settle(bob), "shouted") == [first["data"]]
    assert [s["text"] for s in (await bob.call("shouts"))["shouts"]] == ["once"]
    # a tell is not kept: sent again, it is told again
    for _ in range(2):
        assert (await alice.request("tell", {"name": "bob", "text": "hi"}, request_id="t1"))["ok"]
    assert [t["text"] for t in pushed(await settle(bob), "told")] == ["hi", "hi"]


@pytest.mark.parametrize("how", ["blocked", "muted"])
async def test_a_name_entered_by_mistake_is_removed_with_its_blocks_and_mute(
        lobby: LobbyServer, how: str) -> None:
    """zed, a typo entered with a result, was blocked by alice or muted by an admin before the
    result was voided: removing zed removes the block and the mute with it."""
    alice = await lobby.player("alice")
    admin = await lobby.admin()
    event = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
    entered = await admin.call("event result", event=event, side_a="alice", side_b="zed",
                               score_a=400, score_b=300, new=True)
    if how == "blocked":
        await alice.call("block", name="zed")
    else:
        await admin.call("mute", name="zed")
    await admin.call("void", match=entered["match"], reason="typo")
    assert (await admin.call("player remove", name="zed"))["removed"] is True
    assert (await alice.call("block"))["blocking"] == []
