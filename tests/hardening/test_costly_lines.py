"""Costly plain lines: eight connections sending 64 KiB lines at the allowed rate do not
slow down everyone else.

Each attacker sends, 19 times a second (the limit is 20), the lines that cost the most to
split: 64 KiB of quoted words, one quoted word of 64 KiB, 64 KiB of escaped spaces. A
bystander from another address asks ``help who`` before (the idle server) and during the
attack; the median of its reply times during the attack must stay within
:data:`SLOWDOWN` times the idle median measured in the same run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
from collections import Counter
from pathlib import Path

from testkit.constants import LIVENESS
from testkit.probes import Prober
from testkit.server_thread import ServerThread
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from server.config import Limits

LIMIT = 64 * 1024
ATTACKERS = 8
RATE = 19.0  # lines a second per attacker: under the 20 a connection may send
ATTACK_SECONDS = 3.0
SAMPLES = 40
PAUSE = 0.06  # the bystander keeps under the 20 messages a second too
SLOWDOWN = 5.0
LINES = (
    "help " + '"a" ' * ((LIMIT - 5) // 4),  # 16,382 quoted words
    'help "' + "a" * (LIMIT - 7) + '"',  # one quoted word
    "help " + "a\\ " * ((LIMIT - 5) // 3),  # one word of 21,843 escaped spaces
)


async def attacker(url: str, stop: asyncio.Event, codes: Counter[str]) -> int:
    """Send the costly lines at ``RATE`` until ``stop``; count the replies' codes."""
    ws = await connect(url, max_size=None, open_timeout=10, local_addr=("127.0.0.2", 0))
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    reader = asyncio.create_task(read_replies(ws, codes))
    loop = asyncio.get_running_loop()
    sent = 0
    started = loop.time()
    while not stop.is_set():
        await ws.send(LINES[sent % len(LINES)])
        sent += 1
        await asyncio.sleep(max(0.0, started + sent / RATE - loop.time()))
    async with asyncio.timeout(10):  # every line is answered
        while sum(codes.values()) < sent and not reader.done():
            await asyncio.sleep(0.01)
    await ws.close()
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    return sent


async def read_replies(ws: ClientConnection, codes: Counter[str]) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in ws:
            msg = json.loads(frame)
            if "event" not in msg:
                codes["ok" if msg["ok"] else msg["error"]["code"]] += 1


async def help_times(prober: Prober, count: int) -> list[float]:
    first = len(prober.times)
    for _ in range(count):
        reply = await prober.request("help", command="who")
        assert reply["ok"], reply
        await asyncio.sleep(PAUSE)
    return prober.times[first:]


async def test_costly_lines_do_not_slow_down_the_others(db_path: Path) -> None:
    assert all(len(line.encode()) <= LIMIT for line in LINES)
    server = ServerThread(db_path, Limits()).start()
    try:
        prober = await Prober.open(server.url, local_addr=("127.0.0.3", 0))
        await help_times(prober, 5)  # warm up
        idle = await help_times(prober, SAMPLES)
        stop = asyncio.Event()
        codes: Counter[str] = Counter()
        attack = [asyncio.create_task(attacker(server.url, stop, codes)) for _ in range(ATTACKERS)]
        await asyncio.sleep(0.5)  # the attack under way
        loop = asyncio.get_running_loop()
        started = loop.time()
        busy: list[float] = []
        while loop.time() - started < ATTACK_SECONDS:
            busy += await help_times(prober, 5)
        stop.set()
        sent = sum(await asyncio.gather(*attack))
        await prober.close()
    finally:
        await server.astop()
    assert codes == {"bad_request": sent}, codes  # each line refused, none left unanswered
    ratio = statistics.median(busy) / statistics.median(idle)
    assert ratio < SLOWDOWN, (statistics.median(busy), statistics.median(idle), busy)
    print(f"\ncostly lines: {ATTACKERS} connections sent {sent} lines of 64 KiB "
          f"({sent / (ATTACK_SECONDS + 0.5):.0f} a second), each refused bad_request; help who: "
          f"median {statistics.median(idle) * 1000:.2f} ms idle, "
          f"{statistics.median(busy) * 1000:.2f} ms under attack ({ratio:.2f}x, "
          f"{len(busy)} samples, slowest {max(busy) * 1000:.1f} ms)")
