"""Invitations through a real lobby: listed, withdrawn, replaced, and expired after a timeout."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from testkit.clients import expect_error, settle
from testkit.server_loop import LobbyServer

from server.config import Config, ConfigError, Limits, load_config
from server.lobby.invitation_limit import InvitationLimit, Refusal


async def start(harness: LobbyServer, invitation_timeout: float) -> None:
    harness.configure = lambda config: replace(config, invitation_timeout=invitation_timeout)
    await harness.start()


def moment(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()


async def test_invitations_are_listed_both_ways(harness: LobbyServer) -> None:
    await start(harness, 300)
    alice, bob, carol = await harness.players("alice", "bob", "carol")
    assert await alice.call("invitations") == {"sent": [], "received": []}
    before = time.time()
    to_bob = await alice.call("invite", name="bob", ladder="backgammon", length=5)
    after = time.time()
    to_carol = await alice.call("invite", name="carol", ladder="backgammon", length="unlimited")
    from_carol = await carol.call("invite", name="alice", ladder="backgammon")
    # expires_at: the timeout after the invitation, to the second
    assert int(before) + 300 <= moment(to_bob["expires_at"]) <= int(after) + 301
    mine = await alice.call("invitations")
    assert sorted(mine["sent"], key=lambda x: x["to"]) == [
        {"to": "bob", "ladder": "backgammon", "length": 5, "expires_at": to_bob["expires_at"]},
        {"to": "carol", "ladder": "backgammon", "length": "unlimited",
         "expires_at": to_carol["expires_at"]}]
    assert mine["received"] == [{"from": "carol", "ladder": "backgammon", "length": 1,
                                 "expires_at": from_carol["expires_at"],
                                 "stake": from_carol["stake"]}]
    assert (await bob.call("invitations"))["received"] == [
        {"from": "alice", "ladder": "backgammon", "length": 5, "expires_at": to_bob["expires_at"],
         "stake": to_bob["stake"]}]
    # an answered invitation is no longer listed, on either side
    await bob.call("decline", name="alice")
    assert [x["to"] for x in (await alice.call("invitations"))["sent"]] == ["carol"]
    assert (await bob.call("invitations"))["received"] == []
    # a player who logs out takes their invitations with them
    await carol.call("logout")
    assert await alice.call("invitations") == {"sent": [], "received": []}


async def test_an_invitation_is_withdrawn(harness: LobbyServer) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    await expect_error(alice.call("uninvite", name="bob"), "not_found")
    await alice.call("invite", name="bob", ladder="backgammon", length=3)
    await bob.next_push("invited")
    assert await alice.call("uninvite", name="BOB") == {"withdrawn": "bob"}
    push = await bob.next_push("invitation_withdrawn")
    assert push["data"] == {"from": "alice", "ladder": "backgammon"}
    e = await expect_error(bob.call("join", name="alice"), "not_found")
    assert "has not invited you" in e.message
    await expect_error(bob.call("decline", name="alice"), "not_found")
    await expect_error(alice.call("uninvite", name="bob"), "not_found")
    assert await alice.call("invitations") == {"sent": [], "received": []}
    await expect_error(alice.call("uninvite", name="nobody"), "not_found")
    await expect_error(alice.call("uninvite", name="bad name!"), "bad_request")
    # invited again, the match can start
    await alice.call("invite", name="bob", ladder="backgammon", length=3)
    assert (await bob.call("join", name="alice"))["length"] == 3


async def test_a_second_invitation_replaces_the_first(harness: LobbyServer) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    first = await alice.call("invite", name="bob", ladder="backgammon", length=3)
    assert first["replaced"] is False
    assert (await bob.next_push("invited"))["data"]["length"] == 3
    second = await alice.call("invite", name="bob", ladder="backgammon", length=7)
    assert second["replaced"] is True
    assert (await bob.next_push("invited"))["data"]["length"] == 7  # told again
    assert [x["length"] for x in (await bob.call("invitations"))["received"]] == [7]
    assert [x["length"] for x in (await alice.call("invitations"))["sent"]] == [7]
    started = await bob.call("join", name="alice")
    assert started["length"] == 7
    await expect_error(bob.call("join", name="alice"), "not_found")  # one invitation, one match


async def test_an_unanswered_invitation_expires(harness: LobbyServer) -> None:
    await start(harness, 0.3)
    alice, bob, carol = await harness.players("alice", "bob", "carol")
    invited = await alice.call("invite", name="bob", ladder="backgammon", length=5)
    assert invited["expires_at"] is not None
    await bob.next_push("invited")
    expected = {"from": "alice", "to": "bob", "ladder": "backgammon"}
    assert (await alice.next_push("invitation_expired"))["data"] == expected
    assert (await bob.next_push("invitation_expired"))["data"] == expected
    assert await alice.call("invitations") == {"sent": [], "received": []}
    assert await bob.call("invitations") == {"sent": [], "received": []}
    e = await expect_error(bob.call("join", name="alice"), "not_found")
    assert "has expired" in e.message
    assert (await carol.call("whois", name="bob"))["match"] is None
    # answering it once was enough: now there is none at all
    e = await expect_error(bob.call("join", name="alice"), "not_found")
    assert "has not invited you" in e.message
    # declined or withdrawn after it expired: said so too
    await alice.call("invite", name="bob", ladder="backgammon")
    await alice.call("invite", name="carol", ladder="backgammon")
    await bob.next_push("invitation_expired")
    await carol.next_push("invitation_expired")
    assert "has expired" in (await expect_error(bob.call("decline", name="alice"),
                                                "not_found")).message
    assert "has expired" in (await expect_error(alice.call("uninvite", name="carol"),
                                                "not_found")).message
    # a new invitation after one expired replaces nothing
    again = await alice.call("invite", name="bob", ladder="backgammon", length=3)
    assert again["replaced"] is False


async def test_an_answered_or_replaced_invitation_does_not_expire_later(harness: LobbyServer
                                                                        ) -> None:
    """The declined and the replaced invitations' timers would fire before the last one's
    (they were set earlier, for the same time) and bob's pushes come in order: so once the last
    one's expiry has come, with nothing before it, none of theirs ever will."""
    timeout = 1.0
    await start(harness, timeout)
    alice, bob = await harness.players("alice", "bob")
    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.call("decline", name="alice")
    await alice.call("invite", name="bob", ladder="backgammon", length=3)
    await asyncio.sleep(timeout / 2)  # time passes: the replacement must start a clock of its own
    loop = asyncio.get_running_loop()
    sent = loop.time()  # the server runs in this loop, on this clock
    await alice.call("invite", name="bob", ladder="backgammon", length=5)
    pushes = [await bob.next_push()]
    while pushes[-1]["event"] != "invitation_expired":
        pushes.append(await bob.next_push())
    assert loop.time() - sent >= timeout - 0.01  # the last one's timeout, not the first ones'
    assert [p["event"] for p in pushes] == ["invited", "invited", "invited", "invitation_expired"]
    assert pushes[-1]["data"] == {"from": "alice", "to": "bob", "ladder": "backgammon"}
    assert (await bob.call("invitations"))["received"] == []
    assert [p["event"] for p in await settle(bob)] == []  # it expired once


async def test_a_timeout_of_0_keeps_invitations_until_answered(harness: LobbyServer) -> None:
    await start(harness, 0)
    alice, bob = await harness.players("alice", "bob")
    invited = await alice.call("invite", name="bob", ladder="backgammon")
    assert invited["expires_at"] is None
    assert (await bob.next_push("invited"))["data"]["expires_at"] is None
    assert (await alice.call("invitations"))["sent"][0]["expires_at"] is None
    assert (await bob.call("join", name="alice"))["status"] == "playing"


def test_the_timeouts_in_the_configuration(tmp_path: Path) -> None:
    path = tmp_path / "matchlobby.toml"
    assert (Config().invitation_timeout, Config().session_days) == (300.0, 30.0)
    path.write_text("[server]\ninvitation_timeout = 45\nsession_days = 0.5\n")
    assert replace(load_config(path)) == Config(invitation_timeout=45.0, session_days=0.5)
    path.write_text("[server]\ninvitation_timeout = 0\n")
    assert load_config(path).invitation_timeout == 0
    for bad in ("invitation_timeout = -1", 'invitation_timeout = "soon"', "session_days = 0",
                "session_days = -3", "session_days = true", "session_days = nan"):
        path.write_text(f"[server]\n{bad}\n")
        with pytest.raises(ConfigError, match=bad.split()[0]):
            load_config(path)


# ---- how fast invitations may be sent ---------------------------------------------------


async def test_invitation_spam_is_limited_per_inviter_pair_and_target(harness: LobbyServer) -> None:
    """The default limits: 3 a minute from one player to the same one, 10 a minute from one
    player to anyone, 20 a minute to one player from anyone. A refused invitation pushes
    nothing and counts for nothing."""
    harness.limits = Limits(registrations_per_hour=0)
    await harness.start()
    alice, bob, carol, dave, erin = await harness.players("alice", "bob", "carol", "dave", "erin")
    # one account ringing another flat out (the web page plays a tone at each `invited`)
    replies = [await alice.request("invite", {"name": "bob", "ladder": "backgammon"})
               for _ in range(50)]
    assert [r["ok"] for r in replies[:3]] == [True] * 3
    for r in replies[3:]:
        assert r["error"]["code"] == "rate_limited", r
    assert re.fullmatch(r"You have invited bob too often \(at most 3 times a minute\); "
                        r"try again in (1[0-9]|20) s\.", replies[3]["error"]["message"])
    pushed = await settle(bob)
    assert [p["event"] for p in pushed] == ["invited"] * 3
    assert [i["from"] for i in (await bob.call("invitations"))["received"]] == ["alice"]
    # one account ringing everyone: 10 a minute in all (3 are spent on bob)
    for invitee, times in ((carol, 3), (dave, 3), (erin, 1)):
        for _ in range(times):
            await alice.call("invite", name=invitee.name, ladder="backgammon")
    e = await expect_error(alice.call("invite", name="erin", ladder="backgammon"), "rate_limited")
    assert e.message.startswith("You are sending invitations too fast (at most 10 a minute); "
                                "try again in "), e.message
    for invitee, times in ((carol, 3), (dave, 3), (erin, 1)):
        assert [p["event"] for p in await settle(invitee)] == ["invited"] * times
    # many accounts ringing one: 20 a minute to bob from anyone (3 are alice's)
    others = await harness.players(*(f"p{i:02d}" for i in range(9)))
    answers = [await o.request("invite", {"name": "bob", "ladder": "backgammon"})
               for o in others for _ in range(2)]
    assert [a["ok"] for a in answers] == [True] * 17 + [False]
    assert answers[-1]["error"]["code"] == "rate_limited"
    assert answers[-1]["error"]["message"].startswith(
        "bob is being invited too often (at most 20 invitations a minute); try again in ")
    assert len([p for p in await settle(bob) if p["event"] == "invited"]) == 17
    # the refused ones took nothing from their senders: p08 may still invite someone else
    assert (await others[-1].call("invite", name="carol", ladder="backgammon"))["to"] == "carol"


def test_an_invitation_takes_from_every_limit_or_none_and_tokens_come_back() -> None:
    limit = InvitationLimit(sent=2, pair=1, received=3)
    assert limit.take("a", "b", now=0.0) is None
    assert limit.take("a", "b", now=0.0) == Refusal("pair", 1, 60.0)
    assert limit.take("a", "c", now=0.0) is None
    assert limit.take("a", "d", now=0.0) == Refusal("sent", 2, 30.0)
    assert limit.take("x", "d", now=0.0) is None  # a's refusals counted nothing for d
    assert limit.take("y", "d", now=0.0) is None
    assert limit.take("z", "d", now=0.0) is None
    refused = limit.take("w", "d", now=0.0)
    assert refused is not None and refused.limit == "received"
    assert limit.take("w", "e", now=0.0) is None  # w's sent and pair tokens were given back
    assert limit.take("a", "b", now=30.0) == Refusal("pair", 1, 30.0)
    assert limit.take("a", "b", now=60.0) is None  # a minute: the pair's token is back
    unlimited = InvitationLimit(sent=0, pair=0, received=0)
    assert all(unlimited.take("a", "b", now=0.0) is None for _ in range(1000))
