"""PostgreSQL itself stopped at once (``pg_ctl stop -m immediate``, as a crash) under load.

Two pairs of players play live matches as fast as they can while the database
server goes away: every write is refused with a clear error (nothing is
acknowledged that was not committed), what the lobby holds in memory is still
served, and once PostgreSQL is back the lobby goes on by itself. At the end
every acknowledged result is in the database exactly once, with its rating
change, and ``matchlobby replay --check`` agrees with the log.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from testkit.cli import replay_check
from testkit.clients import name_of
from testkit.db import integrity, sql
from testkit.own_cluster import database_on_its_own_cluster
from testkit.server_loop import LobbyServer

from clients.lobby_client import LobbyClient, LobbyError

pytestmark = pytest.mark.postgresql
WAIT = 60.0  # seconds: a generous bound that only a stuck lobby would miss


async def _until(aw: object, what: str) -> None:
    try:
        await asyncio.wait_for(aw, WAIT)  # type: ignore[arg-type]
    except TimeoutError:
        raise AssertionError(f"the lobby did not {what} within {WAIT} s") from None


async def _retrying(call: object, refused: list[LobbyError]) -> dict:
    """``call()`` again until it is done, keeping every refusal."""
    while True:
        try:
            return await call()  # type: ignore[operator, no-any-return]
        except LobbyError as e:
            refused.append(e)
            await asyncio.sleep(0.05)


async def _churn(a: LobbyClient, b: LobbyClient, acked: list[int], refused: list[LobbyError],
                 stop: asyncio.Event) -> None:
    """``a`` invites ``b``, ``b`` joins and resigns, again and again; each match whose resign
    was acknowledged goes into ``acked``."""
    a_name, b_name = name_of(a), name_of(b)
    while not stop.is_set():
        await _retrying(lambda: a.call("invite", name=b_name, ladder="backgammon", length=1),
                        refused)
        await b.next_push("invited", where=lambda p: p["data"]["from"] == a_name)
        started = await _retrying(lambda: b.call("join", name=a_name), refused)
        await a.next_push("match_started")
        await _retrying(lambda: b.call("resign"), refused)
        acked.append(int(started["match"]))


async def test_postgresql_stopped_mid_load_refuses_writes_serves_memory_and_recovers(
        tmp_path: Path, fast_config: Path) -> None:
    async with database_on_its_own_cluster(tmp_path, fast_config) as (cluster, db):
        lobby = LobbyServer(db)  # type: ignore[arg-type]
        await lobby.start()
        try:
            a1, b1, a2, b2 = await lobby.players("alice", "bob", "carol", "dave")
            watcher = await lobby.player("erin")
            acked: list[int] = []
            refused: list[LobbyError] = []
            stop = asyncio.Event()
            tasks = [asyncio.create_task(_churn(a1, b1, acked, refused, stop)),
                     asyncio.create_task(_churn(a2, b2, acked, refused, stop))]

            async def acks(n: int) -> None:
                while len(acked) < n:
                    await asyncio.sleep(0.01)

            await _until(acks(6), "play its first matches")
            await asyncio.to_thread(cluster.kill)

            async def some_refused() -> None:
                while not refused:
                    await asyncio.sleep(0.01)

            await _until(some_refused(), "refuse a write while the database is down")
            during = len(acked)
            # What the lobby holds in memory is served meanwhile.
            who = await watcher.call("who")
            assert {"alice", "bob", "carol", "dave", "erin"} <= {p["player"] for p in who["players"]}
            await asyncio.sleep(0.3)
            assert len(acked) <= during + 2, "results acknowledged while the database was down"
            await asyncio.to_thread(cluster.start)
            await _until(acks(len(acked) + 6), "go on by itself once the database is back")
            stop.set()
            await _until(asyncio.gather(*tasks), "finish the matches in hand")
        finally:
            await lobby.aclose()
        assert refused
        for e in refused:
            assert e.code == "internal" and "unavailable" in e.message, (e.code, e.message)
        finished = sql(db, "SELECT id FROM matches WHERE status = 'finished' ORDER BY id")  # type: ignore[arg-type]
        assert sorted(acked) == [r[0] for r in finished if r[0] in set(acked)]
        assert len(set(acked)) == len(acked)
        for mid in acked:
            assert sql(db, "SELECT count(*) FROM history WHERE match_id = ?", (mid,)) == [(2,)]  # type: ignore[arg-type]
        assert integrity(db) == "ok"  # type: ignore[arg-type]
        code, out = await replay_check(db, fast_config)  # type: ignore[arg-type]
        assert code == 0, out
