"""Presence floods: one connection resuming two accounts in turn, and logins that succeed.

First the limits on logins that succeed (a right password or token): per account and per
address, counted only when the login succeeds and checked before a password is hashed.

Then a real ``matchlobby serve`` process with :data:`LISTENERS` anonymous connections that
listed ``who`` (as the web page does) and read everything they are sent, in a process of
their own. One connection alternates ``resume TOKEN_A`` / ``resume TOKEN_B`` :data:`RESUMES`
times, at most at the per-connection message limit (the login limits lifted: what is under
test is the presence fan-out).
Each resume logs one account out and the other in; every listener used to get two pushes for
it. Now each listener gets at most one ``presence`` push a second (the first at once, then
one at the end of each second) listing each account once; and a bystander's ``whois`` stays
within :data:`SLOWDOWN` times its median before the flood, measured in the same run.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import admin_template
from testkit.constants import ADMIN, FAST_CONFIG, LIVENESS, PASSWORD, ROOT
from testkit.figures import group
from testkit.probes import Prober
from testkit.server_process import ServerProcess
from testkit.server_thread import ServerThread
from websockets.asyncio.client import ClientConnection, connect

from server.config import Limits

FIGURES = group("presence figures")
LISTENERS = int(os.environ.get("PRESENCE_LISTENERS", "400"))  # the attack had 1,000
RATE = 19.0  # resumes a second at most: under the 20 messages a connection may send
RESUMES = 76  # four seconds' worth
SLOWDOWN = 5.0
SAMPLES = 30
PAUSE = 0.06
FLOOD_CONFIG = (FAST_CONFIG + "[limits]\nconnections_per_address = 2000\n"
                "account_logins_per_minute = 0\naddress_logins_per_minute = 0\n")
ATTACKER, OWNER, OTHER, SETUP = "127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.9"


async def open_ws(url: str, address: str = "127.0.0.1") -> ClientConnection:
    ws = await connect(url, max_size=None, open_timeout=10, local_addr=(address, 0))
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    return ws


async def ask(ws: ClientConnection, cmd: str, **args: Any) -> dict[str, Any]:
    """``cmd``'s reply (the pushes read meanwhile are dropped)."""
    await ws.send(json.dumps({"id": 1, "cmd": cmd, "args": args}))
    async with asyncio.timeout(LIVENESS):
        while True:
            msg = json.loads(await ws.recv())
            if "event" not in msg:
                reply: dict[str, Any] = msg
                return reply


def code(reply: dict[str, Any]) -> str:
    return "ok" if reply["ok"] else str(reply["error"]["code"])


# ---- the limits on logins that succeed ---------------------------------------------------------


@pytest.fixture
async def limited(db_path: Path) -> AsyncIterator[ServerThread]:
    server = ServerThread(db_path, Limits(account_logins_per_minute=4,
                                          address_logins_per_minute=6,
                                          registrations_per_hour=0)).start()
    try:
        yield server
    finally:
        await server.astop()


async def test_logins_and_resumes_are_limited_per_account_and_per_address(
        limited: ServerThread) -> None:
    tokens = {}
    for name in ("alice", "bob", "carol", "dave"):  # registrations are not logins here
        ws = await open_ws(limited.url, SETUP)
        tokens[name] = (await ask(ws, "register", name=name, password=PASSWORD)
                        )["data"]["session"]["token"]
        await ws.close()
    attacker = await open_ws(limited.url, ATTACKER)
    # a right token, again and again: 4 for the account, then refused with the wait
    outcomes = [code(await ask(attacker, "resume", token=tokens["alice"])) for _ in range(5)]
    assert outcomes == ["ok"] * 4 + ["rate_limited"]
    refused = await ask(attacker, "resume", token=tokens["alice"])
    assert "try again in" in refused["error"]["message"]
    # the account's limit holds from another address too
    owner = await open_ws(limited.url, OWNER)
    assert code(await ask(owner, "resume", token=tokens["alice"])) == "rate_limited"
    # the address's: 6 in all, over every account, a password included, refused unhashed
    assert [code(await ask(attacker, "resume", token=tokens["bob"])) for _ in range(3)] == [
        "ok", "ok", "rate_limited"]
    hashed = await limited.acall(hashes(limited))
    assert code(await ask(attacker, "login", name="carol", password=PASSWORD)) == "rate_limited"
    assert await limited.acall(hashes(limited)) == hashed
    # nothing is taken from another account, or for another address
    assert code(await ask(owner, "login", name="carol", password=PASSWORD)) == "ok"
    # failures do not spend the allowance: a guesser cannot use up an account's logins
    other = await open_ws(limited.url, OTHER)
    for _ in range(4):
        assert code(await ask(other, "login", name="dave", password="not-it-at-all")) == "forbidden"
        assert code(await ask(other, "resume", token="x" * 43)) == "forbidden"
    assert code(await ask(other, "login", name="dave", password=PASSWORD)) == "ok"
    for ws in (attacker, owner, other):
        await ws.close()


async def hashes(server: ServerThread) -> int:
    assert server.server is not None
    return server.server.lobby.hasher.computed


# ---- the presence fan-out ----------------------------------------------------------------------


@pytest.fixture
async def flood_server(tmp_path: Path) -> AsyncIterator[ServerProcess]:
    db, config = admin_template(tmp_path / "flood", FLOOD_CONFIG)
    server = ServerProcess(db, config).start()
    try:
        await server.ready()
        yield server
    finally:
        server.stop()


class Listeners:
    """:data:`LISTENERS` anonymous connections that listed ``who``, in a process of their own
    (:mod:`testkit.listeners`): the presence pushes each got, with the moment each came."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.got: list[list[tuple[float, dict[str, Any]]]] = []

    @classmethod
    async def start(cls, url: str, count: int) -> Listeners:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "tests" / "kit"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "testkit.listeners", url, str(count), env=env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 120)
        assert line == b"ready\n", line
        return cls(proc)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            out, _ = await asyncio.wait_for(self.proc.communicate(b"stop\n"), 60)
            self.got = json.loads(out)

    def between(self, start: float, end: float) -> list[list[dict[str, Any]]]:
        return [[m for t, m in pushes if start <= t <= end] for pushes in self.got]


async def whois_times(prober: Prober, count: int) -> list[float]:
    first = len(prober.times)
    for _ in range(count):
        assert (await prober.request("whois", name=ADMIN))["ok"]
        await asyncio.sleep(PAUSE)
    return prober.times[first:]


async def resume_flood(url: str, tokens: list[str]) -> Counter[str]:
    """One connection resuming the accounts of ``tokens`` in turn, :data:`RESUMES` times, at
    most :data:`RATE` a second (each waits for the reply of the one before)."""
    ws = await open_ws(url, ATTACKER)
    outcomes: Counter[str] = Counter()
    loop = asyncio.get_running_loop()
    started = loop.time()
    for sent in range(RESUMES):
        outcomes[code(await ask(ws, "resume", token=tokens[sent % len(tokens)]))] += 1
        await asyncio.sleep(max(0.0, started + (sent + 1) / RATE - loop.time()))
    await ws.close()
    return outcomes


async def test_a_resume_flood_costs_each_listener_one_presence_push_a_second(
        flood_server: ServerProcess) -> None:
    url = flood_server.url
    tokens = []
    for name in ("alice", "bob"):
        ws = await open_ws(url, SETUP)
        tokens.append((await ask(ws, "register", name=name, password=PASSWORD)
                       )["data"]["session"]["token"])
        await ws.close()
    listeners = await Listeners.start(url, LISTENERS)
    prober = await Prober.open(url, local_addr=(OTHER, 0))
    try:
        await whois_times(prober, 5)  # warm up
        idle = await whois_times(prober, SAMPLES)
        cpu_before = flood_server.cpu()
        began = time.monotonic()
        flood = asyncio.create_task(resume_flood(url, tokens))
        busy: list[float] = []
        while not flood.done():
            busy += await whois_times(prober, 5)
        outcomes = await flood
        ended = time.monotonic()
        cpu = flood_server.cpu() - cpu_before
        await asyncio.sleep(1.5)  # the last push of the flood, a second at most after it
        await prober.close()
    finally:
        await listeners.stop()
    resumes = sum(outcomes.values())
    seconds = ended - began
    during = listeners.between(began, ended + 1.2)
    counts = [len(pushes) for pushes in during]
    ratio = statistics.median(busy) / statistics.median(idle)
    FIGURES["resume flood"] = (
        f"{LISTENERS} listeners, {resumes} resumes in {seconds:.1f} s ({resumes / seconds:.1f}/s):"
        f" at most {max(counts)} presence pushes a listener ({statistics.mean(counts):.1f} on "
        f"average), server CPU {cpu:.2f} s; whois median {statistics.median(idle) * 1000:.2f} ms"
        f" idle, {statistics.median(busy) * 1000:.2f} ms during ({ratio:.2f}x, {len(busy)} "
        f"samples)")
    print(f"\n{FIGURES['resume flood']}")
    assert outcomes == {"ok": RESUMES}, outcomes
    # one at once, then one at the end of each second: never more
    assert max(counts) <= seconds + 2, (max(counts), seconds)
    for pushes, everything in zip(during, listeners.got, strict=True):
        for push in pushes:  # each account once a push
            names = [e["player"] for e in push["data"]["players"]]
            assert sorted(names) == sorted(set(names)) and set(names) <= {"alice", "bob"}
        told = {e["player"]: e["status"] for _, p in everything for e in p["data"]["players"]}
        assert told == {"alice": "offline", "bob": "offline"}, told  # the attacker has left
    assert ratio < SLOWDOWN, (statistics.median(busy), statistics.median(idle), busy)
