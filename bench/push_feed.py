"""Benchmark: pushes between lobby nodes through PostgreSQL (server/store/pg/feed.py).

In one run, on a durable cluster of the bench's own (fsync on):

- ``commits``: the same match-shaped job as ``bench/pg_commits.py`` through the lobby's
  writer, ``--tasks`` at once, first with no push, then with two pushes each (the rows
  written in the job's transaction and one ``NOTIFY`` a batch): the cost of the push path
  to the commit rate, as a ratio of the two. Both beside PostgreSQL's own ceiling: empty
  transactions committed one after another on one connection (one WAL flush each).
- ``latency``: a writer (node A) commits jobs of one push each at ``--rate`` a second; a
  feed in another process (node B) hears them. The figure is how much later than node A's
  acknowledgement node B delivers each push (``time.monotonic`` is one clock for every
  process of a machine): what a player on another node waits beyond the acting player's
  reply. On one node the push goes out right after the reply.

Run from the repository root:  .venv/bin/python bench/push_feed.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _postgres  # noqa: E402
from bench.pg_commits import _prepare, job_options, run_writer  # noqa: E402
from server.store.pg.database import PgDatabase  # noqa: E402
from server.store.pg.feed import PushFeed  # noqa: E402


async def commit_ceiling(url: str, seconds: float = 2.0) -> float:
    """Empty write transactions a second, one after another on one connection."""
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE TABLE IF NOT EXISTS bench_tick (n BIGINT)")
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            await conn.execute("INSERT INTO bench_tick VALUES (1)")
            done += 1
        return done / (time.perf_counter() - start)
    finally:
        await conn.close()


async def listen(url: str, count: int) -> None:
    """Node B (run in its own process): print when each push was delivered."""
    heard: dict[str, float] = {}
    done = asyncio.Event()

    def deliver(pushes: Any) -> None:
        now = time.monotonic()
        for p in pushes:
            heard[p.body] = now
        if len(heard) >= count:
            done.set()

    async def resync() -> None:
        raise RuntimeError("the bench's feed fell behind the pruning")

    feed = PushFeed(url, deliver, resync)
    await feed.start()
    print("listening", flush=True)
    await asyncio.wait_for(done.wait(), 600)
    await feed.stop()
    print(json.dumps(heard), flush=True)


async def latency(url: str, count: int, rate: float) -> list[float]:
    child = subprocess.Popen([sys.executable, __file__, "--listen", url, "--jobs", str(count)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "listening"
    db = PgDatabase(url, origin="a")
    await db.open()
    acked: dict[str, float] = {}
    try:
        async def one(i: int) -> None:
            body = str(i)

            async def job(tx: Any) -> None:
                tx.publish("lobby", body)
                await tx.execute("SELECT 1")
            await db.write(job)
            acked[body] = time.monotonic()

        start = time.monotonic()
        pending = []
        for i in range(count):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            pending.append(asyncio.create_task(one(i)))
        await asyncio.gather(*pending)
    finally:
        await db.close()
    out, _ = child.communicate(timeout=600)
    heard = json.loads(out.strip().splitlines()[-1])
    return sorted((heard[k] - acked[k]) * 1000 for k in acked)


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))]


async def main_async(args: argparse.Namespace) -> int:
    if args.listen:
        await listen(args.listen, args.jobs)
        return 0
    cluster = _postgres.cluster()
    if cluster is None:
        print("PostgreSQL is not installed: nothing to measure")
        return 0
    try:
        url = _postgres.new_database(cluster.url)
        ceiling = await commit_ceiling(url)
        print(f"PostgreSQL's commit ceiling (one connection, one flush a commit): "
              f"{ceiling:,.0f} commits/s")
        print("\n| jobs | pushes a job | matches/s | commits | ratio to no push |")
        print("|---|---:|---:|---:|---:|")
        for r in range(args.repeat):
            base = 0.0
            for pushes in (0, 2):
                url = _postgres.new_database(cluster.url)
                setup = PgDatabase(url)
                await setup.open()
                await setup.close()
                await _prepare(url, args.players, args.jobs)
                seconds, commits = await run_writer(url, args.tasks, args.jobs, args.players,
                                                    pushes)
                rate = args.jobs / seconds
                base = base or rate
                print(f"| {args.jobs} (run {r + 1}) | {pushes} | {rate:,.0f} | {commits} | "
                      f"{rate / base:.2f} |", flush=True)
        url = _postgres.new_database(cluster.url)
        setup = PgDatabase(url)
        await setup.open()
        await setup.close()
        late = await latency(url, args.latency_pushes, args.rate)
        print(f"\nnode B hears node A's push, after A's acknowledgement ({len(late)} pushes at "
              f"{args.rate:g}/s): p50 {pct(late, 0.5):.2f} ms, p99 {pct(late, 0.99):.2f} ms, "
              f"max {late[-1]:.2f} ms, mean {statistics.fmean(late):.2f} ms")
    finally:
        cluster.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    job_options(parser)
    parser.add_argument("--rate", type=float, default=500.0,
                        help="pushes a second for the latency (500)")
    parser.add_argument("--latency-pushes", type=int, default=3000,
                        help="pushes timed for the latency (3000)")
    parser.add_argument("--listen", help=argparse.SUPPRESS)
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
