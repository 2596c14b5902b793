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
from clients.render import presence


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
