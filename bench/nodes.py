"""Benchmark: one, two and three lobby servers on one PostgreSQL database, in one run.

On a durable cluster of the bench's own (fsync on), for 1, 2 and 3 ``matchlobby serve``
processes on a fresh database each time:

- ``matches/s``: ``--pairs`` pairs of light raw clients (bench/live_matches.py's) play
  matches to the end for ``--seconds`` (invite, join, resign: two commits a match). With two
  or three servers the two players of a pair are on different servers, so every match is a
  cross-server one (the invitation's row, the match's row, the pushes through the feed).
- ``server CPU/match``: the CPU seconds of every server process together, per match.
- ``push latency``: a pair of library clients plays ``--latency`` matches one after another;
  the figure is how long after the resigning player's reply the other player hears
  ``match_finished``: both on one server (one server), then on two servers.
- ``ceiling``: PostgreSQL's own commit rate in the same run (empty transactions committed
  one after another on one connection: one WAL flush each), for scale.

``--compare REV`` also runs the servers of commit REV (a copy from ``git archive``, with this
venv's packages) for each number of servers, the two commits in turn (their order
alternating), and prints the ratio of this checkout's matches/s and CPU a match to REV's.

Run from the repository root:  .venv/bin/python bench/nodes.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _postgres  # noqa: E402
from bench._harness import Served, lobby_server, machine, percentile  # noqa: E402
from bench.live_matches import Player, checkout, close_pairs, config_text, play  # noqa: E402
from bench.push_feed import commit_ceiling  # noqa: E402

PASSWORD = "bench-password"


async def _player(url: str, name: str) -> Player:
    from websockets.asyncio.client import connect

    from bench._harness import Conn

    ws = await connect(url, compression=None, max_size=2**24, open_timeout=60)
    player = Player(name, Conn(ws))
    await player.call("register", f'{{"name":"{name}","password":"{PASSWORD}"}}')
    return player


async def _known(player: Player, names: list[str]) -> None:
    """Every server knows every player (accounts are learnt within a quarter second)."""
    for name in names:
        while True:
            try:
                await player.call("whois", f'{{"name":"{name}"}}')
                break
            except RuntimeError:
                await asyncio.sleep(0.05)


async def throughput(servers: list[Served], pairs: int, seconds: float) -> dict[str, Any]:
    n = len(servers)
    couples = []
    for i in range(pairs):
        a = await _player(servers[i % n].url, f"a{i:03d}")
        b = await _player(servers[(i + 1) % n].url, f"b{i:03d}")
        couples.append((a, b))
    await _known(couples[0][0], [p.name for c in couples for p in c])
    await asyncio.sleep(2.5)  # every server has seen the others beat: they share
    await asyncio.gather(*(play(a, b, 1) for a, b in couples))  # warm-up
    cpu_before = sum(s.cpu() for s in servers)
    done = errors = 0
    deadline = time.perf_counter() + seconds

    async def pair(a: Player, b: Player) -> None:
        nonlocal done, errors
        i = 0
        while time.perf_counter() < deadline:
            try:
                await play(a, b, i)
                done += 1
            except Exception as e:  # counted; the run goes on
                errors += 1
                if errors <= 3:
                    print(f"  error: {e!r}", file=sys.stderr)
                for p in (a, b):
                    with contextlib.suppress(Exception):
                        await p.call("abort", "{}")
            i += 1

    start = time.perf_counter()
    await asyncio.gather(*(pair(a, b) for a, b in couples))
    elapsed = time.perf_counter() - start
    cpu = sum(s.cpu() for s in servers) - cpu_before
    await close_pairs(couples)
    return {"matches": done, "errors": errors, "rate": done / elapsed,
            "cpu_ms_per_match": 1000 * cpu / max(done, 1)}


async def latency(a_url: str, b_url: str, matches: int) -> dict[str, float]:
    """Reply to the resigning player → ``match_finished`` at the other, in ms."""
    from clients import LobbyClient

    stamp = time.monotonic_ns()
    alice, bob = LobbyClient(a_url, reconnect=False), LobbyClient(b_url, reconnect=False)
    heard: dict[int, float] = {}
    alice.on("match_finished",
             lambda push: heard.setdefault(push["data"]["match"], time.perf_counter()))
    await alice.connect()
    await bob.connect()
    await alice.register(f"la{stamp}", PASSWORD)
    await bob.register(f"lb{stamp}", PASSWORD)
    while True:  # known, and online, on alice's server
        try:
            if (await alice.call("whois", name=f"lb{stamp}"))["online"]:
                break
        except Exception:
            pass
        await asyncio.sleep(0.05)
    waits = []
    for _ in range(matches):
        await alice.call("invite", name=f"lb{stamp}", ladder="backgammon", length=1)
        await bob.next_push("invited", timeout=10)
        await bob.call("join", name=f"la{stamp}")
        done = await bob.call("resign")
        replied = time.perf_counter()
        while done["match"] not in heard:
            await asyncio.sleep(0.0005)
        waits.append((heard[done["match"]] - replied) * 1000)
    await alice.close()
    await bob.close()
    return {"p50": statistics.median(waits), "p99": percentile(waits, 0.99)}


def median_of(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The median matches/s and CPU a match of several runs of one setting."""
    return {"rate": statistics.median(g["rate"] for g in runs),
            "cpu_ms_per_match": statistics.median(g["cpu_ms_per_match"] for g in runs)}


async def run(args: argparse.Namespace) -> int:
    cluster = _postgres.cluster()
    if cluster is None:
        print("PostgreSQL is not installed: nothing to measure", file=sys.stderr)
        return 1
    print(f"machine: {machine()}")
    with tempfile.TemporaryDirectory(dir=args.tmp) as folder:
        tmp = Path(folder)
        config = tmp / "bench.toml"
        config.write_text(config_text(args.pairs * 3))
        trees: list[tuple[str, Path | None, Path]] = [("now", None, config)]
        if args.compare:
            other = checkout(args.compare, tmp / "compare")
            (tmp / "compare.toml").write_text(config_text(args.pairs * 3, other))
            trees.append((args.compare, other, tmp / "compare.toml"))
        ceiling = await commit_ceiling(_postgres.new_database(cluster.url))
        print(f"PostgreSQL commit ceiling (one connection, one flush each): {ceiling:,.0f}/s")
        runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for r, n in ((r, n) for r in range(args.repeat) for n in (1, 2, 3)):
            for label, tree, cfg in trees if (n + r) % 2 else trees[::-1]:
                db: Any = _postgres.new_database(cluster.url)
                async with contextlib.AsyncExitStack() as stack:
                    servers = [await stack.enter_async_context(lobby_server(tmp, db, cfg, tree))
                               for _ in range(n)]
                    got = await throughput(servers, args.pairs, args.seconds)
                    if n <= 2:
                        got["latency"] = await latency(servers[0].url, servers[n - 1].url,
                                                       args.latency)
                runs.setdefault((label, n), []).append(got)
                print(("" if tree is None else f"{label}: ")
                      + f"{n} server(s): {got['rate']:7.1f} matches/s ({got['matches']} "
                      f"matches, {got['errors']} errors), server CPU "
                      f"{got['cpu_ms_per_match']:.2f} ms/match"
                      + (f", push p50 {got['latency']['p50']:.2f} ms p99 "
                         f"{got['latency']['p99']:.2f} ms" if "latency" in got else ""))
        rows = {label: [(n, median_of(runs[label, n])) for n in (1, 2, 3)]
                for label, _, _ in trees}
        if args.repeat > 1:
            print(f"medians of {args.repeat} runs each:")
            for label, got_rows in rows.items():
                for n, got in got_rows:
                    print(("" if label == "now" else f"{label}: ")
                          + f"{n} server(s): {got['rate']:7.1f} matches/s, server CPU "
                          f"{got['cpu_ms_per_match']:.2f} ms/match")
        for label, got_rows in rows.items():
            base = got_rows[0][1]["rate"]
            prefix = "" if label == "now" else f"{label}: "
            print(prefix + "ratio to one server: " + ", ".join(
                f"{n}: {got['rate'] / base:.2f}x" for n, got in got_rows))
            print(prefix + "matches/s against the commit ceiling (two commits a match): "
                  + ", ".join(f"{n}: {2 * got['rate'] / ceiling:.2f}" for n, got in got_rows))
        if args.compare:
            pairs = list(zip(rows["now"], rows[args.compare], strict=True))
            print(f"now / {args.compare}: matches/s " + ", ".join(
                f"{n}: {a['rate'] / b['rate']:.2f}" for (n, a), (_, b) in pairs)
                + "; server CPU a match " + ", ".join(
                f"{n}: {a['cpu_ms_per_match'] / b['cpu_ms_per_match']:.2f}"
                for (n, a), (_, b) in pairs))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=24, help="pairs playing at once (24)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of play (10)")
    parser.add_argument("--latency", type=int, default=200,
                        help="matches timed one after another for the push latency (200)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of 1, 2 and 3 servers; the figures are the medians (1)")
    parser.add_argument("--compare", metavar="REV", help="also run commit REV's servers, in "
                        "turn with this checkout's, and print the ratios")
    parser.add_argument("--tmp", help="parent of the temporary directory")
    args = parser.parse_args(argv)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
