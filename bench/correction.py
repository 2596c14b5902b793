"""Diagnostic: a live ``void`` on a million-match FIBS ladder, and reads answered meanwhile.

Not one of issue 6's figures (no target; not in ``make bench``). A ``void``
or ``adjudicate`` recomputes its whole ladder from the log; this measures
how long that takes on the replay bench's database (1,000,000 rated
backgammon matches, built by ``bench/replay.py`` and cached) and whether the
server keeps answering other clients meanwhile: a second client sends
``whois`` once a second, and its round trips are compared with the same
client's round trips before the void (the baseline, same run).

Run from the repository root (after ``bench/replay.py`` has built its cache):
    .venv/bin/python bench/correction.py
"""

from __future__ import annotations

import argparse
import asyncio
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

from bench._harness import bench_env, free_port, matchlobby_command  # noqa: E402
from clients.lobby_client import LobbyClient  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "matchlobby-bench" / \
    "replay-v1-schema3-1000000m-20000p-seed5.db"
ADMIN, PASSWORD = "boss", "bench-password"


async def probe(client: LobbyClient, waits: list[float], errors: list[str]) -> None:
    while True:
        t = time.perf_counter()
        try:
            await client.request("whois", {"name": ADMIN}, timeout=900)
        except Exception as e:
            errors.append(repr(e))
            return
        waits.append(time.perf_counter() - t)
        await asyncio.sleep(1)


async def run(db: Path, config: Path) -> None:
    conn = sqlite3.connect(db)
    late = conn.execute(
        "SELECT id FROM matches WHERE ladder = 'backgammon' AND status = 'finished' AND seq IS "
        "NOT NULL AND event_id IS NULL ORDER BY seq DESC LIMIT 1 OFFSET 10").fetchone()[0]
    conn.close()
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *matchlobby_command(), "serve", "--db", str(db), "--port", str(port), "--config",
        str(config), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        env=bench_env())
    assert proc.stdout is not None
    await asyncio.wait_for(proc.stdout.readline(), 600)
    try:
        admin = LobbyClient(f"ws://127.0.0.1:{port}/ws", reconnect=False)
        watcher = LobbyClient(f"ws://127.0.0.1:{port}/ws", reconnect=False)
        await admin.connect()
        await admin.login(ADMIN, PASSWORD)
        await watcher.connect()
        before: list[float] = []
        for _ in range(20):
            t = time.perf_counter()
            await watcher.request("whois", {"name": ADMIN})
            before.append(time.perf_counter() - t)
        waits: list[float] = []
        errors: list[str] = []
        task = asyncio.create_task(probe(watcher, waits, errors))
        t = time.perf_counter()
        try:
            reply = await admin.request("void", {"match": late, "reason": "bench"}, timeout=900)
            outcome = "ok" if reply.get("ok") else str(reply.get("error"))
        except Exception as e:
            outcome = repr(e)
        took = time.perf_counter() - t
        task.cancel()
        base = statistics.median(before)
        print(f"void of the match 10 from the end: {took:.1f} s ({outcome})")
        print(f"whois before it: median {base * 1000:.2f} ms over {len(before)}")
        if waits:
            print(f"whois during it: {len(waits)} answered, median {statistics.median(waits):.3f} s, "
                  f"max {max(waits):.2f} s ({max(waits) / base:,.0f} x the median before)")
        print(f"whois errors during it: {errors or 'none'}")
        await admin.close()
        await watcher.close()
    finally:
        proc.terminate()
        await proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cache", default=str(CACHE), help="the replay bench's cached database")
    args = p.parse_args()
    if not Path(args.cache).exists():
        raise SystemExit(f"{args.cache} is missing: run bench/replay.py first")
    work = Path(tempfile.mkdtemp(prefix="bench-correction-"))
    try:
        db, config = work / "lobby.db", work / "bench.toml"
        shutil.copyfile(args.cache, db)
        config.write_text("[password_hashing]\nn = 1024\n", encoding="utf-8")
        subprocess.run([*matchlobby_command(), "user", "add", ADMIN, "--admin", "--db", str(db),
                        "--config", str(config)], input=PASSWORD + "\n", text=True,
                       check=True, env=bench_env(), capture_output=True)
        asyncio.run(run(db, config))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
