"""Costly plain lines: eight connections sending 64 KiB lines at the allowed rate do not
slow down everyone else.

Each attacker sends, 19 times a second (the limit is 20), the lines that cost the most to
split: 64 KiB of quoted words, one quoted word of 64 KiB, 64 KiB of escaped spaces. A
bystander from another address asks ``help who`` on the idle server, then during the attack
(once every attacker has been answered), then on the idle server again; the median of its
reply times during the attack must stay within :data:`SLOWDOWN` times the median of the idle
ones, before and after: a machine whose load changes meanwhile moves both. Each phase is a
number of samples, not a length of time.
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
SAMPLES = 40  # the bystander's requests in each phase
PAUSE = 0.06  # the bystander keeps under the 20 messages a second too
SLOWDOWN = 5.0
LINES = (
    "help " + '"a" ' * ((LIMIT - 5) // 4),  # 16,382 quoted words
    'help "' + "a" * (LIMIT - 7) + '"',  # one quoted word
    "help " + "a\\ " * ((LIMIT - 5) // 3),  # one word of 21,843 escaped spaces
)


async def attacker(url: str, stop: asyncio.Event, codes: Counter[str],
                   answered: asyncio.Semaphore) -> int:
    """Send the costly lines at ``RATE`` until ``stop``; count the replies' codes. Releases
    ``answered`` once its first line is answered (the attack is under way)."""
    ws = await connect(url, max_size=None, open_timeout=10, local_addr=("127.0.0.2", 0))
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    mine: Counter[str] = Counter()
    reader = asyncio.create_task(read_replies(ws, codes, mine))
    loop = asyncio.get_running_loop()
    sent = 0
    started = loop.time()
    while not stop.is_set():
        await ws.send(LINES[sent % len(LINES)])
        sent += 1
        if sent == 1:
            async with asyncio.timeout(10):
                while not mine and not reader.done():
                    await asyncio.sleep(0.005)
            answered.release()
        await asyncio.sleep(max(0.0, started + sent / RATE - loop.time()))
    async with asyncio.timeout(10):  # every line it sent is answered
        while sum(mine.values()) < sent and not reader.done():
            await asyncio.sleep(0.01)
    await ws.close()
    reader.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await reader
    return sent


async def read_replies(ws: ClientConnection, *counts: Counter[str]) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in ws:
            msg = json.loads(frame)
            if "event" not in msg:
                for codes in counts:
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
        answered = asyncio.Semaphore(0)
        attack = [asyncio.create_task(attacker(server.url, stop, codes, answered))
                  for _ in range(ATTACKERS)]
        for _ in attack:  # the attack under way: every attacker answered once
            await answered.acquire()
        busy = await help_times(prober, SAMPLES)
        stop.set()
        sent = sum(await asyncio.gather(*attack))
        idle += await help_times(prober, SAMPLES)
        await prober.close()
    finally:
        await server.astop()
    assert codes == {"bad_request": sent}, codes  # each line refused, none left unanswered
    ratio = statistics.median(busy) / statistics.median(idle)
    assert ratio < SLOWDOWN, (statistics.median(busy), statistics.median(idle), busy)
    print(f"\ncostly lines: {ATTACKERS} connections sent {sent} lines of 64 KiB "
          f"({RATE:g} a second each), each refused bad_request; help who: "
          f"median {statistics.median(idle) * 1000:.2f} ms idle (before and after), "
          f"{statistics.median(busy) * 1000:.2f} ms under attack ({ratio:.2f}x, "
          f"{len(busy)} samples, slowest {max(busy) * 1000:.1f} ms)")
