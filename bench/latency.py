"""Benchmark: round trips of `whois` and `rating` with 1,000 clients, against a bare echo server.

1,000 logged-in clients each send one command a second, at a random phase,
for ``--seconds`` (20): ``whois NAME`` and ``rating NAME`` in turn, for random
players. The median and 99th percentile of the round trips are compared with
those of a bare ``websockets`` echo server (``bench/_harness.py bare``: same
``websockets`` version, no compression, the lobby's ping settings) under the
same load from the same 1,000 clients in the same run: each sends a JSON frame
of the size of the lobby's mean reply once a second, which comes back as it
went. Both servers run as subprocesses at the same time, with 1,000
connections each, and the lobby and echo runs alternate (``--repeat`` pairs,
default 2), so that each lobby run has an echo run next to it.

Target: p99 of each command ≤ 3 × the echo server's p99.

Setup (not timed): 1,000 accounts (and the admin ``director``) are created
offline in a fresh database with the server's schema and hash format, cheap
scrypt (N=16); the server's config lifts the per-address connection cap and
the message rate (every client is on 127.0.0.1). The admin gives them
ratings through the lobby: a backgammon event with a game for each pair (FIBS:
rated at once) and a ČAS (scrabble) event with three games for 300 of them,
closed. So ``whois`` and ``rating`` return one or two ladder rows and
``whois`` counts matches in the database.

The clients are light raw ``websockets`` clients (``bench/_harness.py``:
a connection and a reader task each; no ``LobbyClient``), the same code
against both servers, in ``--workers`` client processes (default 1). Each
client logs in as soon as it is connected; a login pushes ``presence`` to
the sessions that listed ``who`` (at most one push a second each), which the
setup line reports.

Run from the repository root:  .venv/bin/python bench/latency.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h

TARGET = 3.0
ECHO_FRAME_OVERHEAD = len('{"id": 100000, "cmd": "echo", "args": {"pad": ""}}')


@dataclass
class Run:
    server: str  # "lobby" or "echo"
    rtts: dict[str, list[float]]  # seconds, by command
    lags: list[float]
    seconds: float
    server_cpu: float
    client_cpu: float
    errors: int
    reply_bytes: float
    other_cpu: float = 0.0  # the idle server's CPU meanwhile (pings)
    notes: list[str] = field(default_factory=list)
    slices: list[tuple[float, float]] = field(default_factory=list)  # each slice's p99, lag p99

    def __post_init__(self) -> None:
        if not self.slices and self.lags:
            self.slices.append((h.percentile(self.all(), 0.99), h.percentile(self.lags, 0.99)))

    def all(self) -> list[float]:
        return [x for v in self.rtts.values() for x in v]

    def add(self, other: Run) -> None:
        for k, v in other.rtts.items():
            self.rtts.setdefault(k, []).extend(v)
        self.lags.extend(other.lags)
        self.seconds += other.seconds
        self.server_cpu += other.server_cpu
        self.client_cpu += other.client_cpu
        self.errors += other.errors
        self.reply_bytes = other.reply_bytes or self.reply_bytes
        self.other_cpu += other.other_cpu
        self.notes.extend(other.notes)
        self.slices.extend(other.slices)


async def load(workers: h.Workers, group: str, served: h.Served, idle: h.Served, seconds: float,
               kinds: list[str], names: list[str], pad: int, seed: int) -> Run:
    server_cpu, idle_cpu, client_cpu = served.cpu(), idle.cpu(), workers.cpu()
    answers = await workers.ask("load", per_worker=[{"seed": seed * 100 + i}
                                                   for i in range(len(workers))],
                                group=group, seconds=seconds, kinds=kinds, names=names, pad=pad)
    wall = max(a["wall"] for a in answers)
    rtts: dict[str, list[float]] = {k: [] for k in kinds}
    lags: list[float] = []
    errors = 0
    notes = []
    for a in answers:
        for k, v in a["rtts"].items():
            rtts[k].extend(x / 1e6 for x in v)
        lags.extend(x / 1e6 for x in a["lags"])
        errors += a["error_count"]
        notes.extend(a["errors"])
    sizes = [a["reply_bytes"] for a in answers if a["reply_bytes"]]
    return Run("echo" if group == "bare" else "lobby", rtts, lags, wall,
               served.cpu() - server_cpu, workers.cpu() - client_cpu, errors,
               statistics.mean(sizes) if sizes else 0.0, idle.cpu() - idle_cpu, notes)


def ms(x: float) -> str:
    return f"{x * 1e3:.2f}"


async def main_async(args: argparse.Namespace) -> int:
    nofile = h.announce()
    print(f"clients: {args.clients} in {args.workers} client process(es); {args.repeat} run(s) of "
          f"{args.seconds:g} s per server, alternating every {args.slice:g} s; "
          f"open-file limit {nofile}")
    names = h.player_names(args.clients)
    with tempfile.TemporaryDirectory(prefix="latency-", dir=args.tmp) as tmpname:
        tmp = Path(tmpname)
        db = tmp / "lobby.sqlite3"
        await h.seed_players(db, names)
        config = tmp / "cfg.toml"
        config.write_text(h.config_text(args.clients))
        async with h.lobby_server(tmp, db, config) as lobby, h.bare_server(tmp) as bare, \
                h.client_workers(args.workers, tmp) as workers:
            seeded = await h.seed_results(lobby.url, names, names[:300])
            slices = h.split(names, args.workers)
            cpu0, t0 = lobby.cpu(), time.perf_counter()
            answers = await workers.ask("connect", per_worker=[
                {"count": len(s), "logins": s} for s in slices],
                group="lobby", url=lobby.url, concurrency=25, hello=True)
            synced = await workers.ask("call", group="lobby", cmd="ladders", concurrency=200)
            setup = time.perf_counter() - t0
            login_cpu = lobby.cpu() - cpu0
            pushes = sum(a["pushes"] for a in await workers.ask("stats", group="lobby"))
            bare_answers = await workers.ask("connect", per_worker=[{"count": len(s)} for s in slices],
                                             group="bare", url=bare.url, concurrency=25, hello=False)
            failed = sum(a["failed"] for a in answers + bare_answers) + \
                sum(a["failed"] for a in synced)
            if failed:
                errs = [e for a in answers + bare_answers + synced for e in a["errors"]]
                print(f"setup: {failed} clients failed: {errs[:3]}", file=sys.stderr)
                return 1
            await h.settle(lobby)
            print(f"setup: {seeded.get('backgammon_games')} backgammon and "
                  f"{seeded.get('scrabble_games')} scrabble games rated; {args.clients} clients "
                  f"connected and logged in to the lobby in {setup:.1f} s (lobby CPU {login_cpu:.1f} s, "
                  f"{pushes} pushes received); {args.clients} connected to "
                  f"the echo server")

            runs: list[Run] = []
            pad = args.pad
            slices = max(1, round(args.seconds / args.slice))
            for r in range(args.repeat):
                spy = None
                if args.py_spy and r == 0:  # profile the lobby during the first run
                    spy = await asyncio.create_subprocess_exec(
                        args.py_spy_exe, "record", "--nonblocking", "-r", "200", "-d",
                        str(int(slices * args.slice * 2 + 4)), "-f", "raw", "-o", args.py_spy,
                        "-p", str(lobby.pid), stdout=asyncio.subprocess.DEVNULL,
                        stderr=asyncio.subprocess.DEVNULL)
                pair: dict[str, Run] = {}
                for k in range(slices):
                    # lobby then echo, echo then lobby, ...: slow spells of the machine hit both
                    order = ["lobby", "bare"] if (r * slices + k) % 2 == 0 else ["bare", "lobby"]
                    if pad is None:  # the echo frame: the size of the lobby's mean reply
                        order = ["lobby", "bare"]
                    for group in order:
                        seed = 1000 * r + 10 * k + (group == "bare")
                        if group == "lobby":
                            run = await load(workers, "lobby", lobby, bare, args.slice,
                                             ["whois", "rating"], names, 0, seed)
                            if pad is None:
                                pad = max(0, round(run.reply_bytes) - ECHO_FRAME_OVERHEAD)
                        else:
                            assert pad is not None
                            run = await load(workers, "bare", bare, lobby, args.slice, ["echo"],
                                             names, pad, seed)
                        if run.server in pair:
                            pair[run.server].add(run)
                        else:
                            pair[run.server] = run
                if spy is not None:
                    await spy.wait()
                runs.extend([pair["lobby"], pair["echo"]])
            await workers.ask("close")

    print()
    header = ["run", "server", "command", "round trips", "median ms", "p99 ms", "p99.9 ms", "max ms",
              "p99 / echo p99", "server CPU", "client CPU", "send lag p99 ms"]
    print(f"| {' | '.join(header)} |")
    print(f"|{'|'.join(['---'] * 3 + ['---:'] * (len(header) - 3))}|")
    ratios: dict[str, list[float]] = {"whois": [], "rating": [], "both": []}
    failed = 0
    for i in range(0, len(runs), 2):
        lobby_run, echo_run = runs[i], runs[i + 1]
        echo_p99 = h.percentile(echo_run.all(), 0.99)
        number = i // 2 + 1
        for run in (lobby_run, echo_run):
            rows = ([("whois", run.rtts["whois"]), ("rating", run.rtts["rating"]),
                     ("both", run.all())] if run.server == "lobby" else [("echo", run.all())])
            for j, (cmd, values) in enumerate(rows):
                p99 = h.percentile(values, 0.99)
                ratio = p99 / echo_p99
                if run.server == "lobby":
                    ratios[cmd].append(ratio)
                first = j == 0
                print(f"| {number} | {run.server} | {cmd} | {len(values)} | {ms(h.median(values))} | "
                      f"{ms(p99)} | {ms(h.percentile(values, 0.999))} | {ms(max(values))} | "
                      f"{ratio:.2f} | "
                      + (f"{run.server_cpu / run.seconds:.0%} | {run.client_cpu / run.seconds:.0%} | "
                         f"{ms(h.percentile(run.lags, 0.99))} |" if first else " | | |"))
            failed += run.errors
    print()
    for i, run in enumerate(runs):
        print(f"run {i // 2 + 1} {run.server}, each {args.slice:g} s slice's p99 (send lag p99) ms: "
              + ", ".join(f"{ms(p)} ({ms(lag)})" for p, lag in run.slices))
    print()
    for cmd in ("whois", "rating"):
        verdict = "met" if max(ratios[cmd]) <= TARGET else (
            "not met" if min(ratios[cmd]) > TARGET else "met in some runs only")
        summary = f"median {statistics.median(ratios[cmd]):.2f}; " if len(ratios[cmd]) > 1 else ""
        print(f"{cmd}: p99 / echo p99 = {', '.join(f'{r:.2f}' for r in ratios[cmd])} ({summary}"
              f"target <= {TARGET:g}): {verdict}")
    medians = [h.median(runs[i].all()) / h.median(runs[i + 1].all()) for i in range(0, len(runs), 2)]
    print(f"both commands, median / echo median: {', '.join(f'{r:.2f}' for r in medians)}")
    mean_reply = statistics.mean(r.reply_bytes for r in runs if r.server == "lobby")
    print(f"echo frames: {(pad or 0) + ECHO_FRAME_OVERHEAD} bytes (the lobby's mean reply: "
          f"{mean_reply:.0f} bytes); load average at the end: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("Round trip: from just before the client's send to its reader task's first look at the "
          "reply. CPU: share of one core while loaded (server: the one under load; client: all "
          "client processes). Send lag: how late the clients sent against their own schedule "
          "(the client side's delay, which adds to both servers' round trips).")
    for run in runs:
        if run.errors:
            print(f"{run.server}: {run.errors} errors, e.g. {run.notes[:2]}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=1000, help="connected clients (1000)")
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="seconds of load per server per run (20)")
    parser.add_argument("--slice", type=float, default=5.0,
                        help="the runs alternate between the servers every SLICE seconds (5)")
    parser.add_argument("--repeat", type=int, default=2, help="runs (2)")
    parser.add_argument("--workers", type=int, default=1, help="client processes (1)")
    parser.add_argument("--pad", type=int, help="padding of the echo frame (default: the size of "
                                                "the lobby's mean reply)")
    parser.add_argument("--py-spy", metavar="FILE", help="profile the lobby during the first lobby "
                        "run with py-spy (collapsed stacks to FILE)")
    parser.add_argument("--py-spy-exe", default=str(Path(sys.executable).parent / "py-spy"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help="parent of the temporary directory (default: the system's)")
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
