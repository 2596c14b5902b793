"""A server of several on one PostgreSQL database drained and stopped behind HAProxy
(``docs/haproxy.cfg``, whose check asks ``/readyz``): its player is told ``server_shutdown``,
reconnects to the same address, lands on another server, resumes, and plays on the live
match whose other side never left."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from testkit import balancer, postgres
from testkit.balancer import Balancer
from testkit.constants import PASSWORD
from testkit.probes import wait_until
from testkit.server_loop import LobbyServer

from clients import LobbyClient

pytestmark = pytest.mark.postgresql


def node_of(db: Path, name: str) -> str | None:
    rows = postgres.query(str(db), "SELECT node FROM online WHERE name = ?", (name,))
    return str(rows[0][0]) if rows else None


async def test_a_drained_servers_player_comes_back_through_the_balancer_on_another(
        db_path: Path, tmp_path: Path, backend: str) -> None:
    if backend != "postgresql":
        pytest.skip("several servers share a PostgreSQL database; SQLite has one process")
    if not balancer.installed():
        pytest.skip(balancer.MISSING)
    servers = [LobbyServer(db_path, configure=lambda c, i=i: replace(c, node=f"node-{i}"))
               for i in range(3)]
    players: list[LobbyClient] = []
    lb: Balancer | None = None
    try:
        for s in servers:
            await s.start()
        lb = Balancer([s.port for s in servers if s.port is not None],
                      tmp_path / "haproxy.log").start()
        await lb.ready()
        for name in ("alice", "bob"):
            c = LobbyClient(lb.url, reconnect=True, backoff=(0.05, 0.5))
            players.append(c)
            await c.connect()
            await c.register(name, PASSWORD)
        alice, bob = players
        await wait_until(lambda: node_of(db_path, "alice") is not None, 20, "alice online")
        await wait_until(lambda: node_of(db_path, "bob") is not None, 20, "bob online")
        first = node_of(db_path, "alice")
        assert node_of(db_path, "bob") != first  # the balancer takes turns

        async def invited() -> bool:  # bob's account reaches alice's server within moments
            reply = await alice.request("invite", {"name": "bob", "ladder": "backgammon",
                                                   "length": 3})
            return bool(reply["ok"])

        await wait_until(invited, 20, "alice's invitation to bob")
        await bob.next_push("invited")
        match = (await bob.call("join", name="alice"))["match"]

        victim = next(s for s in servers if f"node-{servers.index(s)}" == first)
        assert victim.server is not None
        await victim.server.drain()
        assert (await alice.next_push("server_shutdown"))["data"]["reconnect_after"] >= 1
        assert (await alice.next_push("disconnected"))["data"]["code"] == 1001
        await victim.stop()

        await alice.next_push("reconnected", timeout=30)
        await wait_until(lambda: node_of(db_path, "alice") not in (None, first), 30,
                         "alice back on another server")

        async def resumed() -> bool:
            return bool((await alice.request("invitations"))["ok"])

        await wait_until(resumed, 30, "alice logged in again")
        done = await alice.call("resign", retry=True)  # the live match went on
        assert (done["match"], done["winner"]) == (match, "bob")
    finally:
        for c in players:
            await c.close()
        if lb is not None:
            lb.stop()
        for s in servers:
            await s.aclose()
