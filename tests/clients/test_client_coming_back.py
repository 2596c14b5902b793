"""The terminal client tells a player who logs in how their matches ended while they were
away, and when they may claim a match whose opponent left: a real server, a real
``matchlobby client --batch`` process, the numbers from the claim's own reply."""

from __future__ import annotations

import asyncio
from typing import Any

from testkit.cli import run_batch
from testkit.clients import start_match, until_offline
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

from clients import LobbyError
from clients.render import presence, render_push


async def claim_when_due(c: Any, match: int) -> dict[str, Any]:
    while True:
        try:
            data: dict[str, Any] = await c.call("claim", match=match)
            return data
        except LobbyError as e:  # until the drop timeout has passed
            assert "you can claim after" in e.message
            await asyncio.sleep(0.1)


async def test_a_login_tells_what_ended_while_away_and_when_a_claim_opens(
        harness: LobbyServer) -> None:
    await harness.start(drop_timeout=0.3)
    alice, bob = await harness.players("alice", "bob")
    carol, dave = await harness.players("carol", "dave")
    first = await start_match(alice, bob, length=3)
    await bob.close()
    await until_offline(alice, "bob")
    claimed = await claim_when_due(alice, first)
    own = next(c for c in claimed["changes"] if c["player"] == "bob")
    second = await start_match(carol, dave)
    await dave.close()
    await until_offline(carol, "dave")
    await asyncio.sleep(0.4)

    done = await run_batch(harness.url, [f"login bob {PASSWORD}", f"login carol {PASSWORD}"])
    lines = done.stdout.splitlines()
    assert "While you were away:" in lines
    assert (f"  Match {first} (backgammon, 3 points): alice claimed it after you left. Your "
            f"rating: {own['before']:.2f} -> {own['after']:.2f} (-{-own['change']:.2f}).") in lines
    assert (f"dave left match {second}; 'claim {second}' wins it now if they do not come "
            "back.") in lines

    # the push says it too, with the seconds left
    assert presence({"players": [{"player": "dave", "status": "offline", "match": second,
                                  "claim_in": 598}]}) == (
        f"dave left match {second}; 'claim {second}' wins it in 598 s if they do not come back.")


async def test_a_client_that_reconnects_by_itself_is_told_too(harness: LobbyServer) -> None:
    """bob's connection drops and his client comes back by itself a second later, after alice
    has claimed: the reply of its login again (which no caller sees) arrives as the local push
    ``while_away``, which the terminal prints."""
    await harness.start(drop_timeout=0.3)
    alice = await harness.player("alice")
    bob = await harness.client(reconnect=True, backoff=(1.0, 1.0))
    await bob.register("bob", PASSWORD)
    mid = await start_match(alice, bob)
    assert harness.server is not None
    session = harness.server.lobby.session_of("bob")
    assert session is not None
    session.close(1011, "a test cuts the connection")
    await until_offline(alice, "bob")
    claimed = await claim_when_due(alice, mid)
    told = await bob.next_push("while_away", timeout=10)
    assert told["data"]["player"] == "bob"
    [ended] = told["data"]["matches"]
    own = next(c for c in claimed["changes"] if c["player"] == "bob")
    assert (ended["match"], ended["how"], ended["rating"]["after"]) == (mid, "claim", own["after"])
    assert render_push(told).splitlines() == [
        "** While you were away:",
        f"  Match {mid} (backgammon, 1 point): alice claimed it after you left. Your rating: "
        f"{own['before']:.2f} -> {own['after']:.2f} (-{-own['change']:.2f}).",
    ]
