"""Three ``matchlobby serve`` processes on one PostgreSQL database behind HAProxy, started
from ``docs/haproxy.cfg``: players connect through the balancer (each lands on whichever
server it picks) and play matches whose two sides are on different servers; one server is
SIGKILLed with matches live, its players reconnect through the balancer to the others,
``resume`` and finish those matches; the others find it dead within the stated bound, and
nothing acknowledged is lost or doubled."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from testkit import balancer, postgres
from testkit.balancer import Balancer
from testkit.cli import replay_check
from testkit.constants import open_config
from testkit.server_process import ServerProcess

from clients import LobbyClient
from server.store.pg import nodes as pg_nodes

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends, pytest.mark.slow]

PASSWORD = "balanced-pw"
DEATH_BOUND = 15.0  # seconds: the README's bound for a dead server to be noticed


async def through(lb: Balancer, name: str) -> LobbyClient:
    """A player registered through the balancer, reconnecting (and resuming) through it."""
    c = LobbyClient(lb.url, reconnect=True, backoff=(0.05, 0.5))
    await c.connect()
    await c.register(name, PASSWORD)
    return c


def where(db: Path) -> dict[str, str]:
    """Which server each online player is on, as the ``online`` table says."""
    return dict(postgres.query(str(db), "SELECT name, node FROM online"))


async def until(check: Any, what: str, timeout: float = 20.0) -> Any:
    began = time.monotonic()
    while not (found := check()):
        if time.monotonic() - began > timeout:
            raise AssertionError(f"{what}: not within {timeout} s")
        await asyncio.sleep(0.05)
    return found


async def live_match(inviter: LobbyClient, invitee: LobbyClient, name: str, other: str) -> int:
    await inviter.call("invite", name=other, ladder="backgammon", length=3)
    await invitee.next_push("invited", timeout=10, where=lambda p: p["data"]["from"] == name)
    started = await invitee.call("join", name=name)
    return int(started["match"])


async def test_three_servers_behind_haproxy_play_on_when_one_is_killed(
        db_path: Path, tmp_path: Path, backend: str, figures: dict[str, Any]) -> None:
    if backend != "postgresql":
        pytest.skip("several servers share a PostgreSQL database; SQLite has one process")
    if not balancer.installed():
        pytest.skip(balancer.MISSING)
    config = tmp_path / "open.toml"
    config.write_text(open_config(drop_timeout=3.0))
    servers = [ServerProcess(db_path, config, log=tmp_path / f"server{i}.log").start()
               for i in range(3)]
    lb: Balancer | None = None
    players: list[LobbyClient] = []
    try:
        for s in servers:
            await s.ready()
        lb = Balancer([s.port for s in servers], tmp_path / "haproxy.log").start()
        await lb.ready()
        names = [f"p{i}" for i in range(6)]
        for name in names:
            players.append(await through(lb, name))
        def all_online() -> dict[str, str] | None:
            online = where(db_path)
            return online if len(online) == 6 else None

        placed = await until(all_online, "every player online")
        assert len(set(placed.values())) == 3, placed  # spread over the three servers
        pairs = [(0, 1), (2, 3), (4, 5)]
        assert all(placed[names[i]] != placed[names[j]] for i, j in pairs), placed

        acked: list[int] = []
        for i, j in pairs:  # a claimed win confirmed across servers
            match = await live_match(players[i], players[j], names[i], names[j])
            await players[i].call("report win", score_a=3, score_b=0)
            await players[j].next_push("result_claimed", timeout=10)
            done = await players[j].call("confirm", match=match)
            assert done["winner"] == names[i]
            acked.append(match)

        live = [await live_match(players[i], players[j], names[i], names[j]) for i, j in pairs]
        victim_node = placed[names[0]]
        victim = next(s for s in servers if victim_node.endswith(f"-{s.pid}"))
        survivor = next(s for s in servers if s is not victim)
        watcher = LobbyClient(survivor.url, reconnect=False)
        await watcher.connect()
        victim.kill()
        killed_at = time.monotonic()
        cut = [names[k] for k in range(6) if placed[names[k]] == victim_node]
        for k, name in enumerate(names):  # every loser resigns, wherever it is now
            if k % 2 == 1:
                done = (await players[k].request("resign", retry=True))
                assert done["ok"], (name, done)
                assert done["data"]["match"] == live[k // 2]
                acked.append(live[k // 2])
        told = await watcher.next_push("refresh", timeout=DEATH_BOUND + 5)
        noticed = time.monotonic() - killed_at
        assert "stopped" in told["data"]["reason"]
        assert noticed <= DEATH_BOUND, noticed
        def back_elsewhere() -> dict[str, str] | None:
            online = where(db_path)
            return online if all(online.get(n, victim_node) != victim_node for n in cut) \
                else None

        moved = await until(back_elsewhere, "the cut players back on the other servers")
        assert set(moved) == set(names)

        rows = postgres.query(str(db_path), "SELECT id, status FROM matches ORDER BY id")
        assert rows == [(m, "finished") for m in sorted(acked)], rows
        assert await replay_check(db_path) == (
            0, "replay --check: every rating agrees with the match log\n")
        figures["a killed server noticed by the others (one host: its process gone, at the "
                f"next beat; from another host, dead after {pg_nodes.DEAD_AFTER:.0f} s)"] = (
            f"{noticed:.1f} s")
        figures["players cut off by the kill, back through the balancer"] = (
            f"{len(cut)} of 6, {sum(p.reconnects for p in players)} reconnections")
        await watcher.close()
    finally:
        for c in players:
            await c.close()
        if lb is not None:
            lb.stop()
        for s in servers:
            s.stop()
