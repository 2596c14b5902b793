"""Benchmark: what one small write costs PostgreSQL and the client, by how it is sent.

The lobby's writer sends a job's plain writes as one simple query with their values written
in (docs/PERFORMANCE.md, section 1). This bench measures five ways one connection can
send the same ``INSERT`` (a row of a table like ``match_players``, with its foreign key), in
one transaction each way, on a durable cluster of the bench's own:

* a simple query a statement (one round trip each, values written in);
* simple queries of ``--group`` statements each (the writer's way);
* simple queries of ``--group`` ``EXECUTE``s each, of the statement ``PREPARE``d once on the
  connection (its plan kept; only the values are in the text);
* a prepared statement a round trip (``execute`` with parameters);
* ``executemany`` of the prepared statement (asyncpg pipelines every row in one round trip).

For each: the CPU of PostgreSQL's backend (from ``/proc``), of this process, and the wall
time, per statement; the ratio is against ``executemany`` in the same round. The difference
between the first two is the cost of a round trip; between the second and the third, that of
parsing and planning a statement written out; between the third and the last, what a
statement costs in a simple query whatever its text.

Run from the repository root:  .venv/bin/python bench/pg_statements.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _postgres  # noqa: E402
from bench._harness import machine  # noqa: E402

INSERT = "INSERT INTO mp (match_id, player_id, side) VALUES ($1, $2, 'a')"
PLAYERS = 100


def _cpu(pid: int) -> float:
    """User and system seconds of process ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _written(i: int) -> str:
    return f"INSERT INTO mp (match_id, player_id, side) VALUES ('{i}', '{i % PLAYERS + 1}', 'a')"


async def main_async(args: argparse.Namespace) -> int:
    import asyncpg

    print(f"machine: {machine()}")
    cluster = _postgres.cluster()
    if cluster is None:
        print("PostgreSQL is not installed: nothing to measure")
        return 0
    try:
        conn = await asyncpg.connect(_postgres.new_database(cluster.url))
        backend = conn.get_server_pid()
        await conn.execute(
            "CREATE TABLE p (id BIGINT PRIMARY KEY); "
            f"INSERT INTO p SELECT generate_series(1, {PLAYERS}); "
            "CREATE TABLE mp (match_id BIGINT, player_id BIGINT REFERENCES p (id), side TEXT, "
            "PRIMARY KEY (match_id, player_id))")
        n, group = args.statements, args.group

        async def one_each(first: int) -> None:
            for i in range(first, first + n):
                await conn.execute(_written(i))

        async def grouped(first: int) -> None:
            for i in range(first, first + n, group):
                await conn.execute("; ".join(_written(j) for j in range(i, i + group)))

        await conn.execute("PREPARE mp_insert (bigint, bigint) AS " + INSERT)

        async def executed(first: int) -> None:
            for i in range(first, first + n, group):
                await conn.execute("; ".join(f"EXECUTE mp_insert('{j}', '{j % PLAYERS + 1}')"
                                             for j in range(i, i + group)))

        async def prepared(first: int) -> None:
            for i in range(first, first + n):
                await conn.execute(INSERT, i, i % PLAYERS + 1)

        async def pipelined(first: int) -> None:
            await conn.executemany(INSERT, [(i, i % PLAYERS + 1) for i in range(first, first + n)])

        ways: list[tuple[str, Callable[[int], Awaitable[None]]]] = [
            ("simple query, one statement a round trip", one_each),
            (f"simple query, {group} statements a round trip", grouped),
            (f"simple query, {group} EXECUTEs of a PREPAREd statement a round trip", executed),
            ("prepared, one statement a round trip", prepared),
            ("executemany (pipelined)", pipelined)]
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name, _ in ways}
        first = 0
        for _ in range(args.repeat):
            for name, way in ways:
                first += n
                b0, c0, w0 = _cpu(backend), time.process_time(), time.perf_counter()
                async with conn.transaction():
                    await way(first)
                b1, c1, w1 = _cpu(backend), time.process_time(), time.perf_counter()
                figures[name].append(((b1 - b0) / n, (c1 - c0) / n, (w1 - w0) / n))
        await conn.close()
    finally:
        cluster.stop()

    def median(name: str, k: int) -> float:
        return statistics.median(f[k] for f in figures[name])

    base = median("executemany (pipelined)", 0)
    print(f"\n{n:,} statements each way, {args.repeat} rounds (medians)\n")
    print("| sent as | PostgreSQL's backend µs | ratio | this process µs | wall µs |")
    print("|---|---:|---:|---:|---:|")
    for name, _ in ways:
        print(f"| {name} | {median(name, 0) * 1e6:.1f} | {median(name, 0) / base:.1f} | "
              f"{median(name, 1) * 1e6:.1f} | {median(name, 2) * 1e6:.1f} |")
    # per statement: s + R one a round trip, s + R / group grouped; R the round trip
    trip = (median(ways[0][0], 0) - median(ways[1][0], 0)) / (1 - 1 / group)
    print(f"\nratio of PostgreSQL's CPU a statement to executemany's: simple one a round trip "
          f"{median(ways[0][0], 0) / base:.1f} ×, grouped {median(ways[1][0], 0) / base:.1f} ×; "
          f"a round trip about {trip * 1e6:.0f} µs of PostgreSQL's CPU")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--statements", type=int, default=20_000, help="statements each way (20000)")
    parser.add_argument("--group", type=int, default=10, help="statements a simple query (10)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the five ways (3)")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
