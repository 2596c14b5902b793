"""Benchmark: what reading the kernel's send queue (SIOCOUTQ) would add to every push.

The transport counts what the kernel holds for a connection in its budget of unread bytes
(``server/net/sockets.py``). Reading it is a system call; under the default cap of the send
buffer it is read only once asyncio has started buffering (the kernel's buffer is full). This
bench times, on loopback connections whose peer reads everything, writing a push the size of
a ``rating_changed`` (200 bytes) and of a ``ladder_updated`` (2.6 KB) to the socket (what
every push costs the server at least, one ``send`` system call) against one ``SIOCOUTQ``.

Run from the repository root:  .venv/bin/python bench/kernel_queue.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from server.net.sockets import unsent

CONNECTIONS = 50


async def measure(rounds: int, size: int) -> tuple[float, float]:
    """Median µs per write of ``size`` bytes, and per SIOCOUTQ, over CONNECTIONS sockets."""
    ended: list[None] = []

    async def drain(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(1 << 20):
            pass
        writer.close()
        ended.append(None)

    server = await asyncio.start_server(drain, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    pairs = [await asyncio.open_connection("127.0.0.1", port) for _ in range(CONNECTIONS)]
    transports = [w.transport for _, w in pairs]
    frame = b"x" * size
    writes, reads = [], []
    for _ in range(rounds):
        began = time.perf_counter()
        for t in transports:
            t.write(frame)
        writes.append((time.perf_counter() - began) / CONNECTIONS * 1e6)
        began = time.perf_counter()
        for t in transports:
            unsent(t)
        reads.append((time.perf_counter() - began) / CONNECTIONS * 1e6)
        await asyncio.sleep(0.002)  # the peers read it all
    for _, w in pairs:
        w.close()
    while len(ended) < CONNECTIONS:  # every peer has read to the end
        await asyncio.sleep(0.01)
    server.close()
    await server.wait_closed()
    return statistics.median(writes), statistics.median(reads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    rounds = parser.parse_args().rounds
    for name, size in (("rating_changed", 200), ("ladder_updated", 2600)):
        write, read = asyncio.run(measure(rounds, size))
        print(f"{name} ({size} bytes): write {write:.1f} µs, SIOCOUTQ {read:.1f} µs: reading the "
              f"kernel at every send would add {read / write:.0%} (ratio {read / write:.2f})")


if __name__ == "__main__":
    main()
