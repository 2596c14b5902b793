"""``evaluate LADDER`` on two nodes of one PostgreSQL database: each node keeps its own report,
and a match or a void made through the other node shows in it at the next ask."""

from __future__ import annotations

import pytest
from testkit.clients import play, start_match
from testkit.server_loop import LobbyServer

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]


async def test_each_node_reports_what_the_other_wrote(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    await b.start()
    alice, bob = await a.players("alice", "bob")
    on_a, on_b = await a.client(), await b.client()
    await play(alice, bob, 3)
    await play(bob, alice, 5)
    first = await on_a.call("evaluate", ladder="backgammon")
    assert first == await on_b.call("evaluate", ladder="backgammon")
    assert first["systems"][0]["games"] == 2

    carol = await b.player("carol")
    dave = await b.player("dave")
    await play(carol, dave, 7)  # through node b: node a's kept report is stale
    second = await on_a.call("evaluate", ladder="backgammon")
    assert second["systems"][0]["games"] == 3
    assert second == await on_b.call("evaluate", ladder="backgammon")

    mid = await start_match(dave, carol, 1)
    await carol.call("resign")
    assert (await on_a.call("evaluate", ladder="backgammon"))["systems"][0]["games"] == 4
    admin = await b.admin()
    await admin.call("void", match=mid, reason="wrong players")  # a correction, no new unit
    assert (await on_a.call("evaluate", ladder="backgammon")) == second
