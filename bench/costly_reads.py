"""Benchmark: costly reads from one address against a bystander's ``whois``.

A real ``matchlobby serve`` (SQLite by default, ``--postgres`` for a PostgreSQL cluster of
its own) holds two open ČAS events of ``--small`` and ``--big`` games among 400 players.

1. ``event show`` of each event, one at a time from an idle client: the median reply time of
   the first page (the standings of the whole event and 200 games).
2. The flood: ``--attackers`` connections from 127.0.0.2, each sending ``event show`` of the
   big event 19 times a second (under the 20 a connection may send) and reading the replies,
   for ``--seconds``. A bystander on 127.0.0.3 asks ``whois director`` every 50 ms before and
   during the flood: its median and 90th percentile, and the ratio of the medians. Then the
   attackers leave (their sockets closed at once, as a script that exits): the seconds until
   the server is idle (under a fifth of a core over 0.3 s), and what the attackers' requests
   got (``ok``, ``rate_limited``).

Run from the repository root:  .venv/bin/python bench/costly_reads.py [--attackers 63]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from websockets.asyncio.client import ClientConnection, connect  # noqa: E402
from websockets.asyncio.connection import broadcast  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402

from bench import _postgres  # noqa: E402
from bench._harness import (  # noqa: E402
    ADMIN,
    PASSWORD,
    Served,
    announce,
    bench_env,
    lobby_server,
    matchlobby_command,
    median,
    percentile,
    player_names,
    seed_players,
)

PLAYERS = 400
RATE = 19.0  # requests a second per attacker: under the 20 a connection may send
PAUSE = 0.05  # between two of the bystander's requests
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated\n"
IMPORT_ROWS = 1200  # a frame is at most 64 KiB


def config(postgres_url: str | None, budget: float | None) -> str:
    """Default limits (or ``budget`` read units a second); cheap password hashing (the accounts
    are made offline)."""
    text = "[password_hashing]\nn = 16\nr = 8\np = 1\n"
    if budget is not None:
        text += f"[limits]\nread_units_per_second = {budget}\n"
    if postgres_url:
        text = f'[server]\ndatabase = "{postgres_url}"\n' + text
    return text


class Client:
    """One connection: requests with ids, replies matched to them, times measured."""

    def __init__(self, ws: ClientConnection, light: bool = False) -> None:
        self.ws = ws
        self.light = light  # pages are counted unread (an attacker: its CPU is not the server's)
        self.n = 0
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.codes: Counter[str] = Counter()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, address: str, light: bool = False) -> Client:
        ws = await connect(url, max_size=None, open_timeout=30, ping_interval=None,
                           local_addr=(address, 0))
        assert json.loads(await ws.recv())["event"] == "hello"
        return cls(ws, light)

    async def _read(self) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in self.ws:
                if self.light and len(frame) > 4096:  # only a good reply is that long
                    self.codes["ok"] += 1
                    continue
                msg = json.loads(frame)
                if "event" in msg:
                    continue
                self.codes["ok" if msg["ok"] else msg["error"]["code"]] += 1
                fut = self.waiting.pop(msg.get("id"), None)
                if fut is not None:
                    fut.set_result(msg)

    def send(self, cmd: str, **args: Any) -> asyncio.Future[dict[str, Any]]:
        self.n += 1
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[self.n] = fut
        broadcast((self.ws,), json.dumps({"id": self.n, "cmd": cmd, "args": args}))  # no lock
        return fut

    async def call(self, cmd: str, timeout: float = 120.0, **args: Any) -> tuple[float, Any]:
        started = time.perf_counter()
        reply = await asyncio.wait_for(self.send(cmd, **args), timeout)
        assert reply["ok"], reply
        return time.perf_counter() - started, reply["data"]

    def leave(self) -> None:
        """Gone at once, as the process of a script that exits."""
        self.reader.cancel()
        self.ws.transport.abort()


async def build(url: str, small: int, big: int) -> list[int]:
    """Two open scrabble events of ``small`` and ``big`` games; their ids."""
    admin = await Client.open(url, "127.0.0.1")
    await admin.call("login", name=ADMIN, password=PASSWORD)
    names = player_names(PLAYERS)
    ids = []
    for games in (small, big):
        _, event = await admin.call("event create", name=f"Open {games}", ladder="scrabble")
        rows = [f"Open {games},2026-03-14,{names[g % PLAYERS]},{names[(g * 7 + 1 + g // PLAYERS) % PLAYERS]},"
                f"{300 + g % 97},{300 + g % 89},,\n" for g in range(games)]
        rows = [r for r in rows if r.split(",")[2] != r.split(",")[3]]
        for chunk in range(0, len(rows), IMPORT_ROWS):
            await admin.call("event import", new=True, event=event["id"],
                             csv=HEADER + "".join(rows[chunk:chunk + IMPORT_ROWS]))
        ids.append(event["id"])
    admin.leave()
    return ids


async def show_times(url: str, event: int, samples: int) -> float:
    client = await Client.open(url, "127.0.0.1")
    times = [(await client.call("event show", event=event))[0] for _ in range(samples)]
    client.leave()
    return median(times)


async def whois_times(client: Client, seconds: float) -> list[float]:
    times = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        times.append((await client.call("whois", name=ADMIN))[0])
        await asyncio.sleep(PAUSE)
    return times


async def attacker(client: Client, event: int, stop: asyncio.Event) -> int:
    loop = asyncio.get_running_loop()
    sent, started = 0, loop.time()
    while not stop.is_set():
        client.send("event show", event=event)
        sent += 1
        await asyncio.sleep(max(0.0, started + sent / RATE - loop.time()))
    return sent


async def idle_after(served: Served, timeout: float = 300.0) -> float:
    """Seconds until the server uses under a fifth of a core over 0.3 s."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        cpu = served.cpu()
        await asyncio.sleep(0.3)
        if served.cpu() - cpu < 0.3 / 5:
            return time.monotonic() - began - 0.3
    return float("inf")


async def flood(served: Served, event: int, attackers: int, seconds: float) -> dict[str, Any]:
    bystander = await Client.open(served.url, "127.0.0.3")
    await whois_times(bystander, 1.0)  # warm up
    idle = await whois_times(bystander, 3.0)
    clients = [await Client.open(served.url, "127.0.0.2", light=True) for _ in range(attackers)]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(attacker(c, event, stop)) for c in clients]
    await asyncio.sleep(1.0)
    busy = await whois_times(bystander, seconds)
    stop.set()
    sent = sum(await asyncio.gather(*tasks))
    codes: Counter[str] = Counter()
    for c in clients:
        codes += c.codes
        c.leave()
    after = await idle_after(served)
    bystander.leave()
    return {"idle": idle, "busy": busy, "sent": sent, "codes": codes, "after": after}


@contextlib.asynccontextmanager
async def database(tmp: Path, postgres: bool) -> AsyncIterator[tuple[Path, str | None]]:
    """The seeded SQLite file, and with ``postgres`` a copy of it in a cluster of our own."""
    db = tmp / "lobby.db"
    await seed_players(db, player_names(PLAYERS))
    if not postgres:
        yield db, None
        return
    cluster = _postgres.cluster()
    if cluster is None:
        raise SystemExit("PostgreSQL is not installed")
    try:
        url = _postgres.new_database(cluster.url)
        done = subprocess.run([*matchlobby_command(), "copy", "--from", f"sqlite:///{db}",
                               "--to", url], cwd=tmp, env=bench_env(), capture_output=True,
                              text=True, check=False)
        if done.returncode:
            raise SystemExit(f"matchlobby copy failed: {done.stderr[-2000:]}")
        yield db, url
    finally:
        cluster.stop()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=3000)
    parser.add_argument("--big", type=int, default=10000)
    parser.add_argument("--attackers", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--postgres", action="store_true", help="on a PostgreSQL cluster")
    parser.add_argument("--budget", type=float, default=None,
                        help="[limits] read_units_per_second (0: no read budget; default: the "
                             "server's default)")
    args = parser.parse_args()
    announce()
    with tempfile.TemporaryDirectory(prefix="bench-costly-") as folder:
        tmp = Path(folder)
        async with database(tmp, args.postgres) as (db, url):
            conf = tmp / "matchlobby.toml"
            conf.write_text(config(url, args.budget), encoding="utf-8")
            async with lobby_server(tmp, db, conf) as served:
                small, big = await build(served.url, args.small, args.big)
                backend = "PostgreSQL" if url else "SQLite"
                for event, games in ((small, args.small), (big, args.big)):
                    took = await show_times(served.url, event, args.samples)
                    print(f"event show, {games:,} games ({backend}): median {took * 1000:.1f} ms "
                          f"({args.samples} requests)")
                f = await flood(served, big, args.attackers, args.seconds)
                ratio = median(f["busy"]) / median(f["idle"])
                print(f"bystander whois ({backend}): idle median {median(f['idle']) * 1000:.2f} ms, "
                      f"p90 {percentile(f['idle'], 0.9) * 1000:.2f} ms; during {args.attackers} "
                      f"connections × {RATE:g}/s of 'event show' ({args.big:,} games) from one "
                      f"address: median {median(f['busy']) * 1000:.2f} ms, p90 "
                      f"{percentile(f['busy'], 0.9) * 1000:.2f} ms; ratio {ratio:.1f}x")
                print(f"attackers: {f['sent']} requests sent, replies {dict(f['codes'])}; "
                      f"server idle {f['after']:.1f} s after they left")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
