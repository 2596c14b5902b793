"""Benchmark: closing a ČAS event on a big history, against the Peklo solve alone.

Figure 4: closing a ČAS event of 100 players × 10 games with a
history of 1,000,000 earlier ČAS games, from ``event close`` to the reply,
against the Peklo solve alone on the same history; target ≤ 1.5×.

Set-up writes the history straight into a database made by the server's own
schema (``matchlobby user add`` creates and migrates it): players, closed
events, 1,000,000 finished games with both sides' rows, and a ratings row per
player (Paluba, Dansa and Peklo values drawn plausibly; replaying a million
games through Paluba and Dansa would take minutes and is not what is timed).
Then a real ``matchlobby serve`` starts on it, an admin imports each new event
over the protocol, and the bench times ``event close`` round trips: one
warm-up close first, shown but not counted (the placeholder strengths make it
re-rate all 20,000 players, which a lobby's closes do not), then ``--repeat``. The
baseline, in the same run and process: Peklo (aggregate + solve) on the same
history plus the event's games, read from the same file. With ``--backend
both`` (the default when PostgreSQL is installed) the same history is then
copied to PostgreSQL (``matchlobby copy``) and the closes are timed there too,
against the same baseline (read from the SQLite file).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench import _postgres  # noqa: E402
from bench._harness import bench_env, free_port, matchlobby_command  # noqa: E402
from clients import LobbyClient  # noqa: E402
from ratings_plugin import store  # noqa: E402
from ratings_plugin.systems.cas.peklo import solve_peklo  # noqa: E402
from server.store.schema import SCHEMA_VERSION  # noqa: E402

ADMIN, PASSWORD = "director", "bench-password"
CONFIG = "[password_hashing]\nn = 1024\n[limits]\nmessages_per_second = 1e6\nburst = 1000000\n"


def build_history(db: Path, config: Path, games: int, players: int, events: int,
                  seed: int) -> None:
    """A database holding ``games`` rated ČAS games in ``events`` closed events."""
    done = subprocess.run([*matchlobby_command(), "user", "add", ADMIN, "--admin", "--db", str(db),
                           "--config", str(config)], input=PASSWORD + "\n", text=True,
                          capture_output=True, env=bench_env(), check=False)
    if done.returncode:
        raise SystemExit(done.stderr)
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, players)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA synchronous=OFF")  # set-up only; the server uses FULL
    now = "2026-01-01T00:00:00Z"
    names = [f"p{i:05d}" for i in range(players)]
    ids = [row[0] for row in (conn.execute(
        "INSERT INTO players (name, name_key, role, created_at) VALUES (?, ?, 'player', ?) "
        "RETURNING id", (n, n, now)).fetchone() for n in names)]
    first = rng.integers(0, players, games)
    second = rng.integers(0, players - 1, games)
    second = np.where(second >= first, second + 1, second)
    p_win = 1.0 / (1.0 + np.exp(strength[second] - strength[first]))
    score_a = rng.integers(300, 500, games)
    margin = rng.integers(1, 120, games)
    a_won = rng.random(games) < p_win
    score_b = np.where(a_won, score_a - margin, score_a + margin)
    per_event = games // events
    start = date(2024, 1, 1)
    for e in range(events):
        day = (start + timedelta(days=7 * e)).isoformat()
        eid = conn.execute(
            "INSERT INTO events (name, ladder, date, status, created_at, closed_at, seq) "
            "VALUES (?, 'scrabble', ?, 'closed', ?, ?, ?) RETURNING id",
            (f"History {e + 1}", day, now, now, e + 1)).fetchone()[0]
        lo, hi = e * per_event, games if e == events - 1 else (e + 1) * per_event
        rows = [(eid, names[a], names[b], day, "a" if sa > sb else "b", int(sa), int(sb), now,
                 now) for a, b, sa, sb in zip(first[lo:hi].tolist(), second[lo:hi].tolist(),
                                               score_a[lo:hi].tolist(), score_b[lo:hi].tolist(),
                                               strict=True)]
        cur = conn.execute("SELECT coalesce(max(id), 0) FROM matches").fetchone()[0]
        conn.executemany(
            "INSERT INTO matches (ladder, event_id, side_a, side_b, length, played_on, status, "
            "winner, score_a, score_b, how, created_at, finished_at) VALUES "
            "('scrabble', ?, ?, ?, 1, ?, 'finished', ?, ?, ?, 'event', ?, ?)", rows)
        mids = range(cur + 1, cur + 1 + len(rows))
        conn.executemany(
            "INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)",
            [(m, ids[a], s) for m, a, b in zip(mids, first[lo:hi].tolist(),
                                               second[lo:hi].tolist(), strict=True)
             for s, a in (("a", a), ("b", b))])
    conn.execute("UPDATE counters SET value = ? WHERE name = 'seq'", (events,))
    played = np.bincount(first, minlength=players) + np.bincount(second, minlength=players)
    last = (start + timedelta(days=7 * (events - 1))).isoformat()
    paluba = np.clip(np.round(100 + 40 * strength), 0, None).astype(int)
    dansa = np.round(1500 + 200 * strength).astype(int)
    peklo = 1500 + 200 * strength / np.log(2)
    rated = [i for i in range(players) if played[i]]
    conn.executemany(
        "INSERT INTO ratings (ladder, player_id, rating, games, last_played, state) "
        "VALUES ('scrabble', ?, ?, ?, ?, ?)",
        [(ids[i], 500.0, int(played[i]), last,
          store.state_json({"paluba": int(paluba[i]), "dansa": int(dansa[i])})) for i in rated])
    conn.execute(store.SHARED_UPSERT,
                 store.encode_shared("scrabble", [ids[i] for i in rated],
                                     [float(peklo[i]) for i in rated]))
    conn.commit()
    conn.close()


def event_csv(name: str, day: str, players: int, per_player: int, field: int,
              rng: random.Random) -> tuple[str, int]:
    """``players`` players × ``per_player`` games each (a round of pairings per game)."""
    chosen = [f"p{i:05d}" for i in rng.sample(range(field), players)]
    lines = ["event,date,side_a,side_b,score_a,score_b"]
    for _ in range(per_player):
        rng.shuffle(chosen)
        for a, b in zip(chosen[0::2], chosen[1::2], strict=True):
            sa, sb = rng.randint(300, 500), rng.randint(300, 500)
            lines.append(f"{name},{day},{a},{b},{sa},{sb}")
    return "\n".join(lines) + "\n", len(lines) - 1


def peklo_alone(db: Path, runs: int) -> tuple[float, float, int]:
    """Peklo (aggregate + solve) over every rated ČAS game in the file, ``runs`` times.

    Returns the median wall and CPU seconds of a solve and the number of games.
    """
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT m.side_a, m.side_b, m.score_a, m.score_b FROM matches m JOIN events e "
        "ON e.id = m.event_id WHERE e.ladder = 'scrabble' AND m.status = 'finished' "
        "AND e.status = 'closed' ORDER BY e.seq, m.id").fetchall()
    conn.close()
    index: dict[str, int] = {}
    first = np.fromiter((index.setdefault(a, len(index)) for a, _, _, _ in rows), np.int64)
    second = np.fromiter((index.setdefault(b, len(index)) for _, b, _, _ in rows), np.int64)
    points = np.fromiter((1.0 if sa > sb else 0.0 if sa < sb else 0.5
                          for _, _, sa, sb in rows), np.float64)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        solve_peklo(first, second, points, len(index))
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return statistics.median(wall), statistics.median(cpu), len(rows)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def history_rows(db: Path, event_id: int) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM history WHERE event_id = ?",
                                (event_id,)).fetchone()[0])
    finally:
        conn.close()


async def run(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-close-", dir=args.tmp))
    config, db = tmp / "bench.toml", tmp / "lobby.db"
    config.write_text(CONFIG, encoding="utf-8")
    t = time.perf_counter()
    cached = None
    if args.cache_dir:
        cached = Path(args.cache_dir) / (f"history-schema{SCHEMA_VERSION}-{args.games}-"
                                         f"{args.players}-{args.history_events}-{args.seed}.db")
    if cached is not None and cached.exists():
        shutil.copyfile(cached, db)
        print(f"set-up: copied {cached} ({args.games:,} games among {args.players:,} players "
              f"in {args.history_events} closed events), {time.perf_counter() - t:.1f} s")
    else:
        build_history(db, config, args.games, args.players, args.history_events, args.seed)
        print(f"set-up: {args.games:,} games among {args.players:,} players in "
              f"{args.history_events} closed events, {time.perf_counter() - t:.1f} s")
        if cached is not None:
            cached.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(db, cached)
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    cluster = _postgres.cluster() if "postgresql" in backends else None
    if "postgresql" in backends and cluster is None:
        print("PostgreSQL is not installed: SQLite only")
        backends = ["sqlite"]
    try:
        for backend in backends:
            served: str = str(db)
            if backend == "postgresql":
                assert cluster is not None
                served = _postgres.new_database(cluster.url)
                t = time.perf_counter()
                done = subprocess.run([*matchlobby_command(), "copy", "--from", f"sqlite:///{db}",
                                       "--to", served, "--config", str(config)], cwd=tmp,
                                      env=bench_env(), capture_output=True, text=True, check=False)
                if done.returncode:
                    raise SystemExit(f"matchlobby copy failed: {done.stderr[-2000:]}")
                print(f"set-up: copied to PostgreSQL (matchlobby copy): "
                      f"{time.perf_counter() - t:.1f} s")
            print(f"-- {backend} --")
            await _closes(args, tmp, config, db, served, backend)
    finally:
        if cluster is not None:
            cluster.stop()


async def _closes(args: argparse.Namespace, tmp: Path, config: Path, db: Path, served: str,
                  backend: str) -> None:
    """Serve ``served`` and time ``event close`` round trips (the baseline reads ``db``)."""
    port = free_port()
    t = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *matchlobby_command(), "serve", "--db", served, "--port", str(port), "--config", str(config),
        stdout=asyncio.subprocess.PIPE, stderr=open(tmp / "server.log", "wb"),  # noqa: SIM115
        cwd=tmp, env=bench_env())
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 600)
    if b"listening" not in line:
        raise SystemExit(f"server did not start: {(tmp / 'server.log').read_text()[-2000:]}")
    print(f"server start-up (loads ratings and the Peklo history): {time.perf_counter() - t:.1f} s")
    rng = random.Random(args.seed)
    rows: list[tuple[int, float, float, float, float | None]] = []
    try:
        admin = LobbyClient(f"ws://127.0.0.1:{port}/ws", reconnect=False)
        await admin.connect()
        await admin.login(ADMIN, PASSWORD)
        # Close 0 warms up: the set-up's stored strengths are placeholders, so it re-rates
        # everyone (~20,000 history rows), which a lobby's closes never do; shown, not counted.
        for k in range(args.repeat + 1):
            name = f"Bench {k}"
            day = (date(2026, 1, 1) + timedelta(days=k)).isoformat()
            event = await admin.call("event create", name=name, ladder="scrabble", date=day)
            csv, count = event_csv(name, day, args.event_players, args.event_games, args.players,
                                   rng)
            await admin.call("event import", new=True, event=event["id"], csv=csv)
            cpu0 = cpu_seconds(proc.pid)
            t = time.perf_counter()
            await admin.request("event close", {"event": event["id"]}, timeout=600)
            close = time.perf_counter() - t
            cpu1 = cpu_seconds(proc.pid)
            close_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
            solve, solve_cpu, history = peklo_alone(db, args.baseline_runs)
            cpu_ratio = None if close_cpu is None else close_cpu / solve_cpu
            if k:
                rows.append((count, close, solve, close / solve, cpu_ratio))
            cpu_text = "" if close_cpu is None or cpu_ratio is None else (
                f"; CPU: server {close_cpu:.2f} s, Peklo alone {solve_cpu:.3f} s, "
                f"ratio {cpu_ratio:.2f}")
            label = f"close {k}" if k else "warm-up close (not counted)"
            written = ("n/a" if backend != "sqlite"
                       else f"{history_rows(db, event['id']):,}")
            print(f"{label}: {count} games, history {history:,}, "
                  f"{written} history rows: close {close:.3f} s, "
                  f"Peklo alone {solve:.3f} s, ratio {close / solve:.2f}{cpu_text}", flush=True)
        await admin.close()
    finally:
        proc.terminate()
        await proc.wait()
    ratios = [r[3] for r in rows]
    cpu_ratios = [r[4] for r in rows if r[4] is not None]
    print()
    print("| backend | event games | history games | close s (median) | Peklo alone s (median) "
          "| ratio (median) | ratios | min close / min Peklo | CPU ratio (median) |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|")
    cpu_median = f"{statistics.median(cpu_ratios):.2f}" if cpu_ratios else "n/a"
    print(f"| {backend} | {rows[0][0]} | {args.games:,}+ | {statistics.median(r[1] for r in rows):.3f} | "
          f"{statistics.median(r[2] for r in rows):.3f} | {statistics.median(ratios):.2f} | "
          f"{', '.join(f'{r:.2f}' for r in ratios)} | "
          f"{min(r[1] for r in rows) / min(r[2] for r in rows):.2f} | {cpu_median} |")
    print("Target: close ≤ 1.5 × Peklo alone (wall time, request to reply), over the closes "
          "after the warm-up one.")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=1_000_000, help="earlier ČAS games (1,000,000)")
    p.add_argument("--players", type=int, default=20_000, help="players in the history (20,000)")
    p.add_argument("--history-events", type=int, default=10, help="closed events holding them")
    p.add_argument("--event-players", type=int, default=100, help="players in the closed event")
    p.add_argument("--event-games", type=int, default=10, help="games each of them plays")
    p.add_argument("--repeat", type=int, default=8,
                   help="events closed and timed one after another, after one warm-up close (8)")
    p.add_argument("--baseline-runs", type=int, default=3,
                   help="Peklo-alone solves after each close; the median is compared (3)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both",
                   help="serve the history from the SQLite file, from a copy of it on a "
                   "PostgreSQL cluster of the bench's own (fsync on), or both in turn (default, "
                   "when PostgreSQL is installed)")
    p.add_argument("--tmp", default=None, help="parent of the temporary directory")
    p.add_argument("--cache-dir", default=None,
                   help="keep the built history database here (one file per --games, --players, "
                        "--history-events and --seed) and copy it on later runs instead of "
                        "building it again (~50 s)")
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
