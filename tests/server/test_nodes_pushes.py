"""Two lobby nodes on one PostgreSQL database: what a command on one node pushes reaches the
connections of the other (through the ``pushes`` table and ``NOTIFY``), once each, and the
node that caused it delivers it once, itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit.clients import play, settle
from testkit.server_loop import LobbyServer

from clients import LobbyClient

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]


@pytest.fixture
async def nodes(db_path: Path, backend: str) -> AsyncIterator[tuple[LobbyServer, LobbyServer]]:
    if backend != "postgresql":
        pytest.skip("several nodes share a PostgreSQL database; SQLite has one process")
    a = LobbyServer(db_path, configure=lambda c: replace(c, node="node-a"))
    b = LobbyServer(db_path, configure=lambda c: replace(c, node="node-b"))
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


async def heard(c: LobbyClient, **counts: int) -> dict[str, list[dict[str, Any]]]:
    """What ``c`` was pushed, by event, once it has at least ``counts`` of those events; then
    after a pause and a round trip (:func:`settle`), so that a double would be there too."""
    got: dict[str, list[dict[str, Any]]] = {}

    def take() -> None:
        for push in c.drain_pushes():
            got.setdefault(push["event"], []).append(dict(push["data"]))

    async def enough() -> None:
        while any(len(got.get(event, ())) < n for event, n in counts.items()):
            take()
            await asyncio.sleep(0.02)

    await asyncio.wait_for(enough(), 10)
    await asyncio.sleep(0.3)
    for push in await settle(c):
        got.setdefault(push["event"], []).append(dict(push["data"]))
    return got


async def test_a_push_caused_on_one_node_reaches_the_other_nodes_connections(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    alice, bob = await a.players("alice", "bob")
    await a.player("carol")
    await b.start()  # loads the players registered on a
    carol = await b.login("carol")
    watcher_b = await b.client()
    await watcher_b.watch("backgammon")
    watcher_a = await a.client()
    await watcher_a.watch("backgammon")

    await alice.call("invite", name="carol", ladder="backgammon", length=3)
    to_carol = await heard(carol, invited=1)
    assert [(i["from"], i["length"]) for i in to_carol["invited"]] == [("alice", 3)]

    finished = await play(alice, bob)  # on node a; watched on both nodes
    on_b = await heard(watcher_b, match_finished=1, rating_changed=2)
    on_a = await heard(watcher_a, match_finished=1, rating_changed=2)
    for seen in (on_a, on_b):  # each once, the same on both nodes
        assert sorted(seen) == ["match_finished", "rating_changed"]
        assert [m["match"] for m in seen["match_finished"]] == [finished["match"]]
        assert sorted(c["player"] for c in seen["rating_changed"]) == ["alice", "bob"]
    assert on_a == on_b
    assert b.server is not None and b.server.lobby.sharing is not None
    assert b.server.lobby.sharing.heard >= 5  # invited, match_finished, rating_changed x2, ...
