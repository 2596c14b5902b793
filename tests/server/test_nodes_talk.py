"""Talk across two lobby nodes on one PostgreSQL database: a tell and a shout reach a player
on the other node, and a block or a mute made on one node holds on the other."""

from __future__ import annotations

import asyncio

import pytest
from testkit.clients import expect_error, settle
from testkit.server_loop import LobbyServer

from clients import LobbyClient

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]


async def online(c: LobbyClient, name: str) -> None:
    """``c``'s node knows ``name`` is online (told by the other node)."""
    async def known() -> None:
        while name not in {p["player"] for p in (await c.call("who"))["players"]}:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(known(), 10)


async def test_talk_crosses_nodes_and_a_block_made_on_one_holds_on_the_other(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    await b.start()
    alice, bob = await a.player("alice"), await b.player("bob")
    guest_b = await b.client()
    await online(alice, "bob")

    await alice.call("tell", name="bob", text="hi from a")
    assert (await bob.next_push("told", timeout=10))["data"] == {"from": "alice",
                                                                  "text": "hi from a"}
    shout = await alice.call("shout", text="anyone on b?")
    for listener in (bob, guest_b):
        assert (await listener.next_push("shouted", timeout=10))["data"] == shout
    assert [s["text"] for s in (await guest_b.call("shouts"))["shouts"]] == ["anyone on b?"]

    # bob blocks alice on node b: node a lets nothing of hers through to him
    await bob.call("block", name="alice")
    await alice.call("tell", name="bob", text="psst")
    await alice.call("invite", name="bob", ladder="backgammon")
    await asyncio.sleep(0.5)  # time enough for a push to cross over, were one sent
    assert [p["event"] for p in await settle(bob) if p["event"] in ("told", "invited")] == []
    await bob.call("unblock", name="alice")
    await alice.call("tell", name="bob", text="again")
    assert (await bob.next_push("told", timeout=10))["data"]["text"] == "again"

    # an admin on node a mutes bob, who is on node b
    admin = await a.admin()
    await admin.call("mute", name="bob", minutes=10)
    assert (await bob.next_push("muted", timeout=10))["data"]["muted"] is True
    await expect_error(bob.call("tell", name="alice", text="hey"), "forbidden")
