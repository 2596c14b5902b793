"""Benchmark: live matches played to the end against plain aiosqlite transactions.

N pairs of light raw clients (bench/_harness.py's ``Conn``, one WebSocket
each) play matches as fast as they can: A ``invite``s B to ``backgammon``
length 1, B ``join``s, and one of them ``resign``s (A and B take turns).
Each match is two writes on the server (``join`` inserts the match,
``resign`` finishes and rates it) and every reply waits for the commit that
holds its result.

The baseline, measured in the same run, is the storage limit of this machine:
a plain ``aiosqlite`` connection to a fresh database file in the same
directory, with the server's pragmas (WAL, ``synchronous=FULL``), running one
``BEGIN IMMEDIATE; INSERT ...; COMMIT`` per match, one after another. It runs
before the first lobby run and after each one (``--repeat`` runs, default 3),
and each run is compared with the mean of the two baselines around it (the
machine is noisy). For reference it is also run once with N concurrent tasks
sharing the connection (a lock around each transaction, since a connection
holds one transaction at a time).

The server runs by default as a subprocess (``matchlobby serve``) so that it
and the clients do not share one event loop (this is the headline figure);
``--server inprocess`` runs it in this process, where the server's commit
count can be read; ``both`` runs one mode after the other. Each lobby run has
a fresh server and database; the CPU time of the server process and of this
one is reported per match.

With ``--backend both`` (the default when PostgreSQL is installed) every run
is made on an SQLite file and on a PostgreSQL database (a durable cluster the
bench starts, on a Unix socket), the baseline staying SQLite's.

Target: matches/s ≥ 0.8 × baseline tx/s with 50 pairs (SQLite).

Run from the repository root:  .venv/bin/python bench/live_matches.py
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the repository's packages, whatever the venv's install holds
    sys.path.insert(0, str(ROOT))

from bench import _postgres, profile  # noqa: E402
from bench._harness import Conn, bench_env, lobby_server, machine, tree_cpu  # noqa: E402
from server.store.connection import PRAGMAS  # noqa: E402

LADDER = "backgammon"
PASSWORD = "bench-password"

CONFIG = """\
# matchlobby configuration written by bench/live_matches.py
[password_hashing]   # cheap, so that registering the players takes no time
n = 1024
r = 8
p = 1
"""


LIMIT_FIELDS = """\
import dataclasses
from server.config import Config
limits = getattr(Config(), "limits", None)
print(" ".join(f.name for f in dataclasses.fields(limits)) if limits is not None else "")
"""


def limit_fields(tree: Path = ROOT) -> set[str] | None:
    """The ``[limits]`` keys the server of ``tree`` knows (``None``: it has no limits)."""
    out = subprocess.run([sys.executable, "-c", LIMIT_FIELDS], env=bench_env(tree), cwd=tree,
                         capture_output=True, text=True, check=True).stdout.split()
    return set(out) or None


def config_text(pairs: int, tree: Path = ROOT) -> str:
    """The bench's config for the server of ``tree``; abuse limits (where that server has
    them) lifted for one address.

    Every client connects from 127.0.0.1 and sends as fast as replies come back,
    which is what a per-address connection cap and a per-connection message rate
    are there to refuse.
    """
    text = CONFIG
    known = limit_fields(tree)
    if known is not None:
        wanted = {"connections_per_address": 2 * pairs + 8, "messages_per_second": 1e6,
                  "burst": 1_000_000, "registrations_per_hour": 0, "invitations_per_minute": 0,
                  "invitations_per_pair_per_minute": 0, "invitations_received_per_minute": 0,
                  "address_logins_per_minute": 0}
        lines = [f"{k} = {v!r}" for k, v in wanted.items() if k in known]
        text += "\n[limits]   # one address, flat out\n" + "\n".join(lines) + "\n"
    return text


@dataclass
class LobbyRun:
    mode: str
    commit: str  # "now", or the revision given to --compare
    pairs: int
    matches: int
    seconds: float
    errors: int
    commits: int | None
    client_cpu: float  # CPU seconds of this process (clients, and the in-process server)
    server_cpu: float | None  # CPU seconds of the server subprocess
    db_cpu: float | None = None  # CPU seconds of the PostgreSQL cluster's processes
    loop_cpu: float | None = None  # CPU seconds of the server's event loop's thread

    @property
    def rate(self) -> float:
        return self.matches / self.seconds if self.seconds > 0 else 0.0

    @property
    def server_cpu_a_match(self) -> float | None:
        """The server subprocess's CPU seconds a match."""
        return None if self.server_cpu is None else self.server_cpu / max(self.matches, 1)


# ---- baseline -------------------------------------------------------------------------------


async def _open_plain(path: Path) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path, isolation_level=None)
    for pragma in PRAGMAS:  # the server's pragmas: WAL, synchronous=FULL, ...
        await conn.execute(pragma)
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS results (id INTEGER PRIMARY KEY, side_a TEXT NOT NULL, "
        "side_b TEXT NOT NULL, winner TEXT NOT NULL, at REAL NOT NULL)")
    return conn


async def _transaction(conn: aiosqlite.Connection, i: int) -> None:
    await conn.execute("BEGIN IMMEDIATE")
    await conn.execute("INSERT INTO results (side_a, side_b, winner, at) VALUES (?, ?, ?, ?)",
                       (f"a{i}", f"b{i}", "a" if i % 2 else "b", time.time()))
    await conn.execute("COMMIT")


async def baseline(path: Path, transactions: int, tasks: int = 1) -> float:
    """Transactions per second: ``transactions`` one-row write transactions on a fresh file.

    With ``tasks`` > 1 they are spread over that many concurrent tasks sharing the
    connection (one transaction at a time, as one connection allows).
    """
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")
    conn = await _open_plain(path)
    try:
        lock = asyncio.Lock()

        async def worker(k: int) -> None:
            for i in range(k, transactions, tasks):
                if tasks == 1:
                    await _transaction(conn, i)
                else:
                    async with lock:
                        await _transaction(conn, i)

        start = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(tasks)))
        seconds = time.perf_counter() - start
        async with conn.execute("SELECT count(*) FROM results") as cur:
            row = await cur.fetchone()
        assert row is not None and row[0] == transactions, row
    finally:
        await conn.close()
    return transactions / seconds


# ---- the server -----------------------------------------------------------------------------


@dataclass
class Served:
    url: str
    commits: Callable[[], int] | None = None  # in-process: the server's commit count
    cpu: Callable[[], float] | None = None  # subprocess: the server's CPU seconds so far
    pid: int | None = None  # subprocess: the server's process (for py-spy)
    db_cpu: Callable[[], float] | None = None  # PostgreSQL: its processes' CPU seconds so far
    loop_cpu: Callable[[], float] | None = None  # subprocess: its event loop's thread's


@contextlib.asynccontextmanager
async def subprocess_server(tmp: Path, config: Path, db: Path, tree: Path | None = None
                            ) -> AsyncIterator[Served]:
    """``matchlobby serve`` as a subprocess: bench/_harness.py's ``lobby_server`` (``tree``:
    another commit's copy, whose server runs instead)."""
    async with lobby_server(tmp, db, config, tree) as lobby:
        yield Served(lobby.url, cpu=lobby.cpu, pid=lobby.pid, loop_cpu=lobby.loop_cpu)


@contextlib.asynccontextmanager
async def inprocess_server(config: Path, db: Path) -> AsyncIterator[Served]:
    from server.app import start_server
    from server.config import load_config

    cfg = dataclasses.replace(load_config(config), database=str(db))
    server = await start_server(cfg, host="127.0.0.1", port=0)
    try:
        yield Served(f"ws://127.0.0.1:{server.port}/ws", lambda: server.db.commits)
    finally:
        await server.stop()


# ---- the lobby run --------------------------------------------------------------------------


class Player:
    """One light raw client (bench/_harness.py's ``Conn``): frames made by hand, pushes only counted.

    The clients are load generators, like ``wrk`` for HTTP: the figure is the
    server's, so they spend as little CPU as they can on this 2-core machine
    (``clients.lobby_client.LobbyClient`` costs ~1 ms of client CPU per match).
    """

    ids = itertools.count(1)

    def __init__(self, name: str, conn: Conn) -> None:
        self.name = name
        self.conn = conn

    async def call(self, cmd: str, args: str) -> dict[str, Any]:
        rid = next(Player.ids)
        _, message = await self.conn.call(f'{{"id":{rid},"cmd":"{cmd}","args":{args}}}', rid)
        if not message.get("ok"):
            raise RuntimeError(f"{self.name}: {cmd}: {message.get('error')}")
        data: dict[str, Any] = message["data"]
        return data


async def connect_pairs(url: str, pairs: int, tag: str) -> list[tuple[Player, Player]]:
    from websockets.asyncio.client import connect

    async def one(name: str) -> Player:
        ws = await connect(url, compression=None, max_size=2**24, open_timeout=60)
        player = Player(name, Conn(ws))
        await player.call("register", f'{{"name":"{name}","password":"{PASSWORD}"}}')
        return player

    players = await asyncio.gather(*(one(f"{tag}{i:03d}{side}")
                                     for i in range(pairs) for side in "ab"))
    return [(players[2 * i], players[2 * i + 1]) for i in range(pairs)]


async def close_pairs(couples: list[tuple[Player, Player]]) -> None:
    await asyncio.gather(*(p.conn.ws.close() for pair in couples for p in pair),
                         return_exceptions=True)


async def play(a: Player, b: Player, i: int) -> None:
    """One match to the end; A resigns the even ones, B the odd ones."""
    await a.call("invite", f'{{"name":"{b.name}","ladder":"{LADDER}","length":1}}')
    await b.call("join", f'{{"name":"{a.name}"}}')
    loser, winner = (a, b) if i % 2 == 0 else (b, a)
    data = await loser.call("resign", "{}")
    assert data["winner"] == winner.name and data["rated"], data


async def lobby_run(mode: str, served: Served, pairs: int, matches: int | None,
                    seconds: float | None, warmup: int, tag: str, commit: str = "now",
                    profile_to: Path | None = None) -> LobbyRun:
    """One timed run; ``profile_to``: py-spy's stacks of the server during it."""
    couples = await connect_pairs(served.url, pairs, tag)
    spying = contextlib.AsyncExitStack()
    try:
        for _ in range(warmup):
            await asyncio.gather(*(play(a, b, 1) for a, b in couples))
        if profile_to is not None and served.pid is not None:
            await spying.enter_async_context(profile.spy(served.pid, profile_to))
        commits_before = served.commits() if served.commits else None
        server_cpu_before = served.cpu() if served.cpu else None
        loop_cpu_before = served.loop_cpu() if served.loop_cpu else None
        db_cpu_before = served.db_cpu() if served.db_cpu else None
        cpu_before = time.process_time()
        errors = 0
        done = 0
        ends: list[float] = []
        deadline = float("inf")

        def more(i: int) -> bool:
            return i < matches if matches is not None else time.perf_counter() < deadline

        async def pair(a: Player, b: Player) -> None:
            nonlocal done, errors
            i = 0
            while more(i):
                try:
                    await play(a, b, i)
                    done += 1
                except Exception as e:  # keep going; the count tells
                    errors += 1
                    if errors <= 5:
                        print(f"  error ({a.name}): {e!r}", file=sys.stderr)
                    with contextlib.suppress(Exception):
                        await a.call("abort", "{}")
                        await b.call("abort", "{}")
                i += 1
            ends.append(time.perf_counter())

        start = time.perf_counter()
        if seconds is not None:
            deadline = start + seconds
        await asyncio.gather(*(pair(a, b) for a, b in couples))
        elapsed = max(ends) - start
        await spying.aclose()
        client_cpu = time.process_time() - cpu_before
        commits = (None if served.commits is None or commits_before is None
                   else served.commits() - commits_before)
        server_cpu = (None if served.cpu is None or server_cpu_before is None
                      else served.cpu() - server_cpu_before)
        db_cpu = (None if served.db_cpu is None or db_cpu_before is None
                  else served.db_cpu() - db_cpu_before)
        loop_cpu = (None if served.loop_cpu is None or loop_cpu_before is None
                    else served.loop_cpu() - loop_cpu_before)
    finally:
        await spying.aclose()
        await close_pairs(couples)
    return LobbyRun(mode, commit, pairs, done, elapsed, errors, commits, client_cpu, server_cpu,
                    db_cpu, loop_cpu)


# ---- main -----------------------------------------------------------------------------------


@dataclass
class ModeResult:
    runs: list[LobbyRun]
    baselines: list[float]  # before the first run, then after each run
    concurrent: float  # the baseline spread over `pairs` tasks sharing the connection

    def baseline_for(self, i: int) -> float:
        """The mean of the baselines measured just before and just after run ``i``."""
        return (self.baselines[i] + self.baselines[i + 1]) / 2


@dataclass(frozen=True)
class Tree:
    """Whose server a run starts: this checkout's (``path`` None) or another commit's copy."""

    commit: str
    path: Path | None
    config: Path

    def serves(self, backend: str) -> bool:
        """Whether this tree's server has ``backend`` (an old commit may predate PostgreSQL)."""
        return backend == "sqlite" or (self.path or ROOT).joinpath("server/store/pg").is_dir()


def checkout(rev: str, into: Path) -> Path:
    """A copy of the repository's files at ``rev`` (``git archive``), to run its server."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


async def run_mode(mode: str, tmp: Path, trees: list[Tree], args: argparse.Namespace,
                   backend: str = "sqlite", cluster: Any = None) -> ModeResult:
    """``args.repeat`` rounds; in each, a run of every tree's server (their order alternating
    from round to round), each on a fresh database, with a baseline after each run."""
    base = tmp / "baseline.db"
    expected = args.pairs * args.matches if args.matches is not None else None
    # The baseline runs as many transactions as there were matches; with --seconds
    # that number is known only afterwards, so the first baseline estimates it.
    n_tx = expected if expected is not None else max(200, int(args.seconds * 300))
    baselines = [await baseline(base, n_tx)]
    runs: list[LobbyRun] = []
    for tree in trees:
        if not tree.serves(backend):
            print(f"{tree.commit}: no {backend} in that commit's server; its runs are left out")
    trees = [tree for tree in trees if tree.serves(backend)]
    for r in range(args.repeat):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            k = len(runs)
            db: Any = tmp / f"lobby-{mode}-{k}.db"
            if backend == "postgresql":
                db = _postgres.new_database(cluster.url)
            served_cm = (subprocess_server(tmp, tree.config, db, tree.path)
                         if mode == "subprocess" else inprocess_server(tree.config, db))
            spied = None
            if args.py_spy is not None and r == 0:
                spied = args.py_spy / f"{mode}-{backend}-{tree.commit}.txt"
            async with served_cm as served:
                if backend == "postgresql":
                    served.db_cpu = functools.partial(tree_cpu, _postgres.postmaster(cluster))
                run = await lobby_run(f"{mode}/{backend}", served, args.pairs, args.matches,
                                      args.seconds, args.warmup, tag=f"{mode[:3]}{k}",
                                      commit=tree.commit, profile_to=spied)
            runs.append(run)
            if spied is not None and spied.exists():
                print(f"\nprofile of {run.mode} at {tree.commit}: "
                      + profile.report(spied, args.py_spy_top))
            if expected is None:
                n_tx = max(run.matches, 1)
            baselines.append(await baseline(base, n_tx))
    concurrent = await baseline(base, n_tx, tasks=args.pairs)
    return ModeResult(runs, baselines, concurrent)


async def main_async(args: argparse.Namespace) -> int:
    modes = ["subprocess", "inprocess"] if args.server == "both" else [args.server]
    print(f"machine: {machine()}")
    amount = (f"{args.matches} matches per pair" if args.matches is not None
              else f"{args.seconds:g} s")
    print(f"pairs: {args.pairs}; {amount}; warm-up {args.warmup} match(es) per pair; "
          f"runs per server mode: {args.repeat}")
    results: list[ModeResult] = []
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    cluster = _postgres.cluster() if "postgresql" in backends else None
    if "postgresql" in backends and cluster is None:
        print("PostgreSQL is not installed: SQLite only")
        backends = ["sqlite"]
    try:
        with tempfile.TemporaryDirectory(prefix="live-matches-", dir=args.tmp) as name:
            tmp = Path(name)
            config = tmp / "cfg.toml"
            config.write_text(config_text(args.pairs))
            trees = [Tree("now", None, config)]
            if args.compare:
                other = checkout(args.compare, tmp / "compare")
                config = tmp / "cfg-compare.toml"
                config.write_text(config_text(args.pairs, other))
                trees.append(Tree(args.compare, other, config))
            for mode in modes:
                for backend in backends:
                    results.append(await run_mode(mode, tmp, trees, args, backend, cluster))
    finally:
        if cluster is not None:
            cluster.stop()
    print()
    header = ["server", "commit", "pairs", "matches", "seconds", "matches/s", "baseline tx/s", "ratio",
              "commits", "matches/commit", "server CPU ms/match", "client CPU ms/match"]
    print(f"| {' | '.join(header)} |")
    print(f"|{'|'.join(['---'] + ['---:'] * (len(header) - 1))}|")
    failed = 0
    for result in results:
        for i, run in enumerate(result.runs):
            mean = result.baseline_for(i)
            commits = "n/a" if run.commits is None else str(run.commits)
            per = "n/a" if not run.commits else f"{run.matches / run.commits:.1f}"
            per_match = 1000 / max(run.matches, 1)
            server_cpu = "n/a" if run.server_cpu is None else f"{run.server_cpu * per_match:.2f}"
            client_cpu = f"{run.client_cpu * per_match:.2f}"
            if run.server_cpu is None:
                client_cpu += " (both)"
            print(f"| {run.mode} | {run.commit} | {run.pairs} | {run.matches} | {run.seconds:.2f} | "
                  f"{run.rate:.0f} | "
                  f"{mean:.0f} | {run.rate / mean:.2f} | {commits} | {per} | {server_cpu} | "
                  f"{client_cpu} |")
            failed += run.errors
    print()
    for result in results:
        mode = result.runs[0].mode
        ratios = [run.rate / result.baseline_for(i) for i, run in enumerate(result.runs)]
        summary = f"median ratio {statistics.median(ratios):.2f}; " if len(ratios) > 1 else ""
        print(f"{mode}: {summary}baseline tx/s in order "
              f"{', '.join(f'{b:.0f}' for b in result.baselines)}; {args.pairs} tasks sharing the "
              f"connection: {result.concurrent:.0f} tx/s")
        busy = [f"this process {run.client_cpu / run.seconds:.0%}"
                + ("" if run.server_cpu is None else f", server {run.server_cpu / run.seconds:.0%}")
                for run in result.runs]
        print(f"  CPU busy during the lobby run (share of one core): {'; '.join(busy)}")
        pg = [run for run in result.runs if run.db_cpu is not None]
        if pg:  # on SQLite the database's work is the server's own
            print("  PostgreSQL's processes during the lobby run: "
                  + "; ".join(f"{run.db_cpu / run.seconds:.0%} of one core busy, "  # type: ignore
                              f"{run.db_cpu * 1000 / max(run.matches, 1):.2f} ms CPU a match"
                              for run in pg))
        # The server's Python runs on one core at a time (one GIL): at its CPU cost per match,
        # the most it could reach with a whole core busy, whatever the commits.
        ceiling = [run.matches / run.server_cpu / result.baseline_for(i)
                   for i, run in enumerate(result.runs) if run.server_cpu]
        if ceiling:
            print("  ratio the server's CPU per match allows at 100 % of one core: "
                  + ", ".join(f"{c:.2f}" for c in ceiling))
        errors = sum(run.errors for run in result.runs)
        if errors:
            print(f"  {errors} matches failed")
        if args.compare:
            print("  " + compared(result, args.compare))
    beside = postgresql_beside_sqlite(results)
    if beside:
        print(beside)
    print()
    print("A match is invite + join + resign; join and resign each write (join inserts the match, "
          "resign finishes and rates it).")
    print("Baseline: one BEGIN IMMEDIATE; INSERT; COMMIT per match, one after another, on a plain "
          "aiosqlite connection with the server's pragmas (WAL, synchronous=FULL); each run is "
          "compared with the mean of the baselines measured just before and just after it.")
    print("Ratio = matches/s / baseline tx/s (target >= 0.8 with 50 pairs). Commits: the server's "
          "(in-process runs only). CPU: user + system time of all threads, per match.")
    return 1 if failed else 0


def postgresql_beside_sqlite(results: list[ModeResult]) -> str | None:
    """This checkout's PostgreSQL runs against its SQLite runs of the same server mode: the
    ratio of the medians of matches a second and of server CPU a match."""
    lines = []
    for mode in ("subprocess", "inprocess"):
        def runs(backend: str, mode: str = mode) -> list[LobbyRun]:
            return [run for result in results for run in result.runs
                    if run.mode == f"{mode}/{backend}" and run.commit == "now"]

        sqlite, postgresql = runs("sqlite"), runs("postgresql")
        if not sqlite or not postgresql:
            continue
        rate = statistics.median(r.rate for r in postgresql) / statistics.median(
            r.rate for r in sqlite)
        line = f"{mode}: PostgreSQL / SQLite: matches/s {rate:.2f}"
        cpu_pg = [c for r in postgresql if (c := r.server_cpu_a_match) is not None]
        cpu_sqlite = [c for r in sqlite if (c := r.server_cpu_a_match) is not None]
        if cpu_pg and cpu_sqlite:
            line += (f", server CPU a match "
                     f"{statistics.median(cpu_pg) / statistics.median(cpu_sqlite):.2f}")
        lines.append(line + " (medians of the runs)")
    return "\n".join(lines) or None


def compared(result: ModeResult, rev: str) -> str:
    """The server CPU a match and the matches a second of this checkout against ``rev``: the
    medians over the runs, and the ratio of each round's two runs."""
    def of(commit: str) -> list[LobbyRun]:
        return [run for run in result.runs if run.commit == commit]

    now, then = of("now"), of(rev)
    if not then:
        return f"no run of {rev} on this backend"
    cpu = [(a.server_cpu / max(a.matches, 1)) / (b.server_cpu / max(b.matches, 1))
           for a, b in zip(now, then, strict=True) if a.server_cpu and b.server_cpu]
    rate = [a.rate / b.rate for a, b in zip(now, then, strict=True) if b.rate]

    def ms(runs: list[LobbyRun], loop: bool = False) -> str:
        per = [1000 * cpu / max(run.matches, 1) for run in runs
               if (cpu := run.loop_cpu if loop else run.server_cpu)]
        return f"{statistics.median(per):.3f}" if per else "n/a"

    # the rest of the server's CPU is its other threads': the commit thread's SQLite and fsync,
    # the reader's thread
    return (f"server CPU ms a match: now {ms(now)}, {rev} {ms(then)} (medians); now / {rev} by "
            f"round: CPU {', '.join(f'{c:.2f}' for c in cpu)} (median "
            f"{statistics.median(cpu) if cpu else float('nan'):.2f}), matches/s "
            f"{', '.join(f'{c:.2f}' for c in rate)} (median "
            f"{statistics.median(rate) if rate else float('nan'):.2f})\n"
            f"  of which the event loop's thread: now {ms(now, True)}, {rev} {ms(then, True)} "
            f"ms a match (medians)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", type=int, default=50, help="concurrent pairs of clients (50)")
    amount = parser.add_mutually_exclusive_group()
    amount.add_argument("--matches", type=int, help="matches each pair plays (default 30)")
    amount.add_argument("--seconds", type=float, help="play for this long instead")
    parser.add_argument("--server", choices=("subprocess", "inprocess", "both"), default="subprocess",
                        help="where the server runs (default: a `matchlobby serve` subprocess)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed matches per pair first (1)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="lobby runs per server mode, with a baseline between each two (3)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both",
                        help="the lobby's database: an SQLite file, a PostgreSQL database on a "
                        "durable cluster of the bench's own (fsync on), or one after the other "
                        "(default both, when PostgreSQL is installed)")
    parser.add_argument("--compare", metavar="REV",
                        help="also run the server of commit REV (a copy from `git archive`, with "
                        "this venv's packages), alternating with this checkout's in every round, "
                        "and print the two CPU costs of a match and their ratio")
    parser.add_argument("--py-spy", type=Path, metavar="DIR",
                        help="profile the server during each first run with py-spy (collapsed "
                        "stacks in DIR) and print the profile's top entries")
    parser.add_argument("--py-spy-top", type=int, default=15, help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help="parent of the temporary directory (default: the system's)")
    args = parser.parse_args(argv)
    if args.compare and args.server != "subprocess":
        parser.error("--compare runs servers as subprocesses (--server subprocess)")
    if args.py_spy is not None:
        args.py_spy.mkdir(parents=True, exist_ok=True)
    if args.matches is None and args.seconds is None:
        args.matches = 30
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
