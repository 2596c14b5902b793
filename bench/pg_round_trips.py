"""Benchmark: PostgreSQL round trips of one live match (invite, join, resign), on one server and
on two servers of one database.

The servers run in this process on a PostgreSQL cluster of the bench's own; every call of an
``asyncpg`` connection that waits for PostgreSQL's answer is counted (a simple query of several
statements, a prepared statement, an ``executemany``, a ``COPY``: one each; a statement's first
preparation adds one more), split by who waits: the writer (the connection that commits the
jobs) and the others (the read pool, the feed, the nodes' heartbeats). ``--pairs`` pairs (one by
default: a quiet server, a batch a command) play ``--matches`` matches each one after another
after a warm-up match, at once (their jobs share batches); the figures are a match's mean.
With two servers the inviting player is on the first, the other on the second.

Run from the repository root:  .venv/bin/python bench/pg_round_trips.py
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _postgres  # noqa: E402
from bench.live_matches import Player, config_text, play  # noqa: E402
from bench.nodes import _known, _player  # noqa: E402

CALLS = ("execute", "executemany", "fetch", "fetchrow", "fetchval", "copy_records_to_table",
         "_get_statement")
counts: collections.Counter[str] = collections.Counter()
writers: set[int] = set()
trace: list[str] | None = None  # --trace: each call's statement


def count_calls() -> None:
    """Count each waiting call of every ``asyncpg`` connection, by writer and others."""
    import asyncpg

    for name in CALLS:
        original = getattr(asyncpg.Connection, name)

        def counted(self: Any, *args: Any, __original: Callable[..., Any] = original,
                    __name: str = name, **kwargs: Any) -> Any:
            if __name == "_get_statement":  # a preparation: a round trip only when not cached
                record_class = kwargs.get("record_class") or self._protocol.get_record_class()
                key = (args[0], record_class, kwargs.get("ignore_custom_codec", False))
                if self._stmt_cache.get(key) is not None:
                    return __original(self, *args, **kwargs)
                __name = "prepare"
            who = "writer" if id(self) in writers else "others"
            counts[f"{who} {__name}"] += 1
            if trace is not None and args and __name != "prepare":
                trace.append(f"{who} {__name}: {' '.join(str(args[0]).split())[:110]}")
            return __original(self, *args, **kwargs)

        setattr(asyncpg.Connection, name, counted)


@contextlib.asynccontextmanager
async def servers(url: str, config: Path, n: int) -> AsyncIterator[list[str]]:
    from server.app import start_server
    from server.config import load_config

    started = []
    try:
        for i in range(n):
            cfg = dataclasses.replace(load_config(config), database=url, node=f"n{i}")
            server = await start_server(cfg, host="127.0.0.1", port=0)
            started.append(server)
            db: Any = server.db
            writers.add(id(db.writer))
        yield [f"ws://127.0.0.1:{s.port}/ws" for s in started]
    finally:
        for server in started:
            await server.stop()


async def measure(cluster: Any, config: Path, n: int, matches: int, pairs: int
                  ) -> dict[str, float]:
    url = _postgres.new_database(cluster.url)
    async with servers(url, config, n) as urls:
        couples: list[tuple[Player, Player]] = []
        for k in range(pairs):
            couples.append((await _player(urls[0], f"a{k:03d}"),
                            await _player(urls[-1], f"b{k:03d}")))
        await _known(couples[0][0], [b.name for _, b in couples])
        await asyncio.sleep(2.5 if n > 1 else 0)  # every server has seen the others beat
        await asyncio.gather(*(play(a, b, 1) for a, b in couples))
        await asyncio.sleep(0.5)
        counts.clear()

        async def pair(a: Player, b: Player) -> None:
            for i in range(matches):
                await play(a, b, i)

        await asyncio.gather(*(pair(a, b) for a, b in couples))
        await asyncio.sleep(0.5)  # the feeds' reads of the last match
        figures = {k: v / (matches * pairs) for k, v in counts.items()}
        if trace is not None:
            print("\n".join(trace))
            trace.clear()
        for a, b in couples:
            await a.conn.ws.close()
            await b.conn.ws.close()
    return figures


async def main_async(args: argparse.Namespace) -> int:
    global trace
    count_calls()
    if args.trace:
        trace = []
    cluster = _postgres.cluster()
    if cluster is None:
        print("PostgreSQL is not installed")
        return 1
    try:
        with tempfile.TemporaryDirectory(prefix="pg-round-trips-") as name:
            config = Path(name) / "cfg.toml"
            config.write_text(config_text(args.pairs))
            for n in (1, 2):
                figures = await measure(cluster, config, n, args.matches, args.pairs)
                writer = sum(v for k, v in figures.items() if k.startswith("writer"))
                others = sum(v for k, v in figures.items() if k.startswith("others"))
                print(f"{n} server(s): {writer:.1f} round trips a match on the writer, "
                      f"{others:.1f} on the other connections")
                for key in sorted(figures):
                    print(f"    {key}: {figures[key]:.2f}")
    finally:
        cluster.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=1,
                        help="pairs playing at once (their jobs share commits)")
    parser.add_argument("--trace", action="store_true", help="print each call's statement")
    return asyncio.run(main_async(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
