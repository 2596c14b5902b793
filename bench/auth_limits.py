"""Benchmark: what costly lines, registration floods and password guessing cost the server.

1. Splitting a 64 KiB plain line: ``shlex.split`` (the stdlib splitter, which the
   server once used) against the server's ``parse_frame``, for the costliest shapes;
   CPU time, best of ``--repeat``.
2. A real ``matchlobby serve`` at the default scrypt cost (N=2^17: 128 MiB a hash) with
   the default ``[limits]``:
   - registration flood: 6 connections from one address alternating register/logout
     for ``--seconds``: accounts made, refusals, and the server's peak RSS (VmHWM)
     against its RSS before;
   - hashing flood: 24 connections from 24 addresses, each sending a wrong login as soon
     as its last one is answered, for ``--seconds``: hashed, refused, peak RSS;
   - login time of an unknown name against a wrong password (median of ``--logins``
     each, interleaved, each from an address of its own so that no limit applies).

Run from the repository root:  .venv/bin/python bench/auth_limits.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shlex
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from websockets.asyncio.client import ClientConnection, connect  # noqa: E402

from bench._harness import Served, announce, lobby_server  # noqa: E402
from server.plugins import command_table  # noqa: E402
from server.protocol import ProtocolError, parse_frame  # noqa: E402

LIMIT = 64 * 1024
TABLE = command_table()
LINES = {
    "64 KiB of quoted words": "help " + '"a" ' * ((LIMIT - 5) // 4),
    "one quoted word of 64 KiB": 'help "' + "a" * (LIMIT - 7) + '"',
    "64 KiB of escaped spaces": "help " + "a\\ " * ((LIMIT - 5) // 3),
    "64 KiB of plain words": "help " + "a " * ((LIMIT - 5) // 2),
}
MIB = 2**20


def best(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        with contextlib.suppress(ValueError, ProtocolError):  # refused lines cost too
            fn()
        times.append(time.process_time() - started)
    return min(times)


def splitting(repeat: int) -> None:
    print("splitting a 64 KiB plain line (CPU time, best of", repeat, "runs):")
    for label, line in LINES.items():
        old = best(lambda line=line: shlex.split(line), max(3, repeat // 10))
        new = best(lambda line=line: parse_frame(line, TABLE), repeat)
        print(f"  {label:28s} shlex.split {old * 1000:7.2f} ms   parse_frame {new * 1000:6.3f} ms"
              f"   ratio {old / new:6.0f}x")


def vm(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(field)


async def client(url: str, address: str) -> ClientConnection:
    ws = await connect(url, max_size=None, open_timeout=30, local_addr=(address, 0))
    assert json.loads(await ws.recv())["event"] == "hello"
    return ws


async def ask(ws: ClientConnection, cmd: str, **args: Any) -> str:
    await ws.send(json.dumps({"id": 1, "cmd": cmd, "args": args}))
    while True:
        msg = json.loads(await asyncio.wait_for(ws.recv(), 120))
        if "event" not in msg:
            return "ok" if msg["ok"] else str(msg["error"]["code"])


async def registration_flood(served: Served, seconds: float) -> None:
    before = vm(served.pid, "VmRSS")
    sockets = [await client(served.url, "127.0.0.1") for _ in range(6)]
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + seconds

    async def flood(ws: ClientConnection, c: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            got = await ask(ws, "register", name=f"bot{c}x{i}", password="bench-password")
            outcomes[got] += 1
            if got == "ok":
                await ask(ws, "logout")
            else:
                await asyncio.sleep(0.05)  # 20 messages a second is a connection's limit
            i += 1

    await asyncio.gather(*(flood(ws, c) for c, ws in enumerate(sockets)))
    for ws in sockets:
        await ws.close()
    print(f"registration flood, 6 connections from one address for {seconds:.0f} s: "
          f"{outcomes['ok']} accounts made, {outcomes['rate_limited']} rate_limited; server RSS "
          f"{before / MIB:.0f} MiB before, peak {vm(served.pid, 'VmHWM') / MIB:.0f} MiB")


async def hashing_flood(served: Served, seconds: float) -> None:
    before = vm(served.pid, "VmRSS")
    sockets = [await client(served.url, f"127.0.4.{i + 1}") for i in range(24)]
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + seconds

    async def guess(ws: ClientConnection, c: int) -> None:
        i = 0
        while time.monotonic() < deadline:
            outcomes[await ask(ws, "login", name=f"x{c}y{i}", password="wrong-guess")] += 1
            i += 1
            await asyncio.sleep(0.05)

    await asyncio.gather(*(guess(ws, c) for c, ws in enumerate(sockets)))
    for ws in sockets:
        await ws.close()
    print(f"hashing flood, 24 addresses guessing for {seconds:.0f} s: {outcomes['forbidden']} "
          f"checked, {outcomes['rate_limited']} rate_limited; server RSS {before / MIB:.0f} MiB "
          f"before, peak {vm(served.pid, 'VmHWM') / MIB:.0f} MiB (2 hashes of 128 MiB at once at most)")


async def login_times(served: Served, count: int) -> None:
    ws = await client(served.url, "127.0.5.1")
    assert await ask(ws, "register", name="known", password="bench-password") == "ok"
    await ws.close()
    times: dict[str, list[float]] = {"unknown": [], "wrong": []}
    for i in range(count):
        for kind, name in (("unknown", f"ghost{i}"), ("wrong", "known")):
            ws = await client(served.url, f"127.0.6.{2 * i + (kind == 'wrong') + 1}")
            started = time.perf_counter()
            assert await ask(ws, "login", name=name, password=f"guess-{i}") == "forbidden"
            times[kind].append(time.perf_counter() - started)
            await ws.close()
    unknown, wrong = statistics.median(times["unknown"]), statistics.median(times["wrong"])
    print(f"login time at the default cost (median of {count}): unknown name "
          f"{unknown * 1000:.0f} ms, wrong password {wrong * 1000:.0f} ms, ratio {unknown / wrong:.2f}")


async def server_part(seconds: float, logins: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-auth-") as tmp:
        folder = Path(tmp)
        config = folder / "matchlobby.toml"
        config.write_text("# bench/auth_limits.py: the defaults\n", encoding="utf-8")
        async with lobby_server(folder, folder / "lobby.db", config) as served:
            await asyncio.sleep(0.5)
            await registration_flood(served, seconds)
            await hashing_flood(served, seconds)
            await login_times(served, logins)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--logins", type=int, default=9)
    args = parser.parse_args()
    announce()
    splitting(args.repeat)
    asyncio.run(server_part(args.seconds, args.logins))


if __name__ == "__main__":
    main()
