"""Benchmark: what the metrics add to answering a command.

Every command the router answers moves a counter and a histogram of ``server/metrics.py``
(and every commit two histograms), whether a listener serves them or not. This bench answers
the same read commands through a real lobby's router (on a real SQLite file, in this
process, no sockets) in alternating rounds: with the server's own ``Metrics``, and with a
``Metrics`` whose calls do nothing (the baseline). The ratio is what counting costs per
command; both sides parse the frame, authorise, run the handler and encode the reply. Each
round swaps which side runs first (the first pays a few µs a frame more). The difference is
within the rounds' noise, so the metrics' call is also timed alone against a call that does
nothing, in alternating rounds.

Run from the repository root:  .venv/bin/python bench/metrics_cost.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from server.app import start_server
from server.config import Config, Limits, PasswordHashing
from server.lobby.state import Session
from server.metrics import Metrics

COMMANDS = ('{"id": 1, "cmd": "whois", "args": {"name": "alice"}}',
            '{"id": 2, "cmd": "ladders", "args": {}}',
            '{"id": 3, "cmd": "who", "args": {}}',
            '{"id": 4, "cmd": "nosuch", "args": {}}')


class Uncounted(Metrics):
    """The baseline: every call that would count does nothing."""

    def command(self, *args: Any, **kwargs: Any) -> None:
        pass

    def committed(self, *args: Any, **kwargs: Any) -> None:
        pass


async def round_of(answer: Any, session: Session, frames: int) -> float:
    """Seconds of CPU to answer ``frames`` frames."""
    start = time.process_time()
    for i in range(frames):
        await answer(session, COMMANDS[i % len(COMMANDS)])
    return time.process_time() - start


def calls_alone(counted: Metrics, uncounted: Metrics, rounds: int, calls: int) -> dict[str, float]:
    """µs of CPU a ``command`` call, with each side's calls alone (what the frames' rounds
    above measure is within their noise)."""
    names = [c.split('"cmd": "')[1].split('"')[0] for c in COMMANDS]
    times: dict[str, list[float]] = {"counted": [], "uncounted": []}
    sides = [("counted", counted), ("uncounted", uncounted)]
    for _ in range(rounds):
        sides.reverse()
        for name, metrics in sides:
            command = metrics.command
            start = time.process_time()
            for i in range(calls):
                command(names[i % len(names)], "ok", 0.0003)
            times[name].append(time.process_time() - start)
    return {name: statistics.median(t) / calls * 1e6 for name, t in times.items()}


async def main(rounds: int, frames: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = Config(database=str(Path(tmp) / "bench.db"), port=0,
                        password=PasswordHashing(n=2**10),
                        limits=Limits(read_units_per_second=0))  # no read is refused
        server = await start_server(config, host="127.0.0.1", port=0)
        try:
            lobby = server.lobby
            router = server.transport.router
            sent: list[dict[str, Any]] = []
            session = Session(send=sent.append, close=lambda code, reason: None,
                              address="192.0.2.1")
            await router.answer(session, '{"cmd": "register", "args": {"name": "alice", '
                                         '"password": "a-long-password"}}')
            counted, uncounted = lobby.metrics, Uncounted()
            uncounted.name_commands(lobby.commands)
            with_metrics: list[float] = []
            without: list[float] = []
            sides = [(counted, with_metrics), (uncounted, without)]
            for _ in range(rounds):
                sides.reverse()  # whichever runs first in a round pays a few µs a frame more
                for metrics, times in sides:
                    lobby.metrics = metrics
                    sent.clear()
                    times.append(await round_of(router.answer, session, frames))
            lobby.metrics = counted
            alone = calls_alone(counted, uncounted, rounds, 50 * frames)
            codes = Counter("ok" if m.get("ok") else m["error"]["code"] for m in sent
                            if "event" not in m)
        finally:
            await server.stop()
    per = {name: statistics.median(t) / frames * 1e6
           for name, t in (("counted", with_metrics), ("uncounted", without))}
    print(f"{frames} frames a round, {rounds} rounds of each, alternating "
          f"(whois, ladders, who, an unknown command); the last round's replies: "
          f"{dict(codes)}")
    print(f"  baseline, metrics calls doing nothing: {per['uncounted']:.1f} µs CPU a frame")
    print(f"  the server's metrics:                  {per['counted']:.1f} µs CPU a frame")
    print(f"  ratio: {per['counted'] / per['uncounted']:.3f} "
          f"({per['counted'] - per['uncounted']:+.1f} µs a frame)")
    print(f"  the metrics' call alone ({50 * frames} calls a round): "
          f"{alone['counted']:.2f} µs against {alone['uncounted']:.2f} µs for a call that "
          f"does nothing ({alone['counted'] - alone['uncounted']:+.2f} µs a command)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--frames", type=int, default=4000)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.frames))
