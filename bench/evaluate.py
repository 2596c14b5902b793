"""Benchmark: ``matchlobby evaluate --ladder backgammon`` against ``matchlobby replay --check``
on the same million-match FIBS ladder.

Figure 14: both commands as the user runs them (the ``matchlobby`` console
script as a subprocess, start-up included), on the database ``bench/replay.py``
builds and caches (1,000,000 rated FIBS matches among 20,000 players, with
voided, adjudicated, aborted and unlimited matches and event results around
them). Each round runs ``replay --check`` (must exit 0), then ``evaluate
--format json`` (must exit 0 and score every rated match), then ``replay
--check`` again; the round's ratio is evaluate's time over the mean of the two
checks. Target: about 1 ×.

Run from the repository root:  .venv/bin/python bench/evaluate.py [--matches N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._harness import bench_env, matchlobby_command  # noqa: E402
from bench.replay import LADDER, cached_database, database_arguments  # noqa: E402


def timed(db: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    t = time.perf_counter()
    done = subprocess.run([*matchlobby_command(), *args, "--db", str(db)], text=True,
                          capture_output=True, env=bench_env(), cwd=db.parent, check=False)
    return time.perf_counter() - t, done


def rated(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute("SELECT count(*) FROM matches WHERE ladder = ? AND seq IS NOT NULL "
                           "AND status = 'finished'", (LADDER,)).fetchone()
    finally:
        conn.close()
    return int(row[0])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    database_arguments(p)
    p.add_argument("--repeat", type=int, default=2, help="rounds (2)")
    args = p.parse_args()

    cached = cached_database(args)
    work = Path(tempfile.mkdtemp(prefix="bench-evaluate-", dir=args.tmp))
    db = work / "lobby.db"
    try:
        shutil.copyfile(cached, db)
        games = rated(db)
        print(f"ladder {LADDER}: {games:,} rated matches", flush=True)
        ratios = []
        for n in range(1, args.repeat + 1):
            first, check = timed(db, "replay", "--check")
            if check.returncode:
                raise SystemExit(f"replay --check failed:\n{check.stdout}{check.stderr}")
            spent, done = timed(db, "evaluate", "--ladder", LADDER, "--format", "json")
            if done.returncode:
                raise SystemExit(f"evaluate failed:\n{done.stderr}")
            report = json.loads(done.stdout)
            scored = report["systems"][0]["games"]
            if scored != games:
                raise SystemExit(f"evaluate scored {scored:,} games of {games:,}")
            second, check = timed(db, "replay", "--check")
            if check.returncode:
                raise SystemExit(f"replay --check failed:\n{check.stdout}{check.stderr}")
            base = (first + second) / 2
            ratios.append(spent / base)
            fibs = report["systems"][0]
            print(f"round {n}: evaluate {spent:.2f} s, replay --check {first:.2f} s and "
                  f"{second:.2f} s: {spent / base:.2f} × (FIBS log-loss {fibs['log_loss']:.4f}, "
                  f"after 20 {fibs['after_20']['log_loss']:.4f}); load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
        print(f"ratio evaluate / replay --check: {statistics.median(ratios):.2f} × (median of "
              f"{len(ratios)}: {', '.join(f'{r:.2f}' for r in ratios)}; target about 1 ×)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
