"""Diagnostic: live ``void``s on a million-match FIBS ladder, and reads answered meanwhile.

No target (``make bench`` runs it after the targeted figures). A ``void``
or ``adjudicate`` on a FIBS ladder replays it from the corrected match on
(``ratings_plugin/corrections/tail.py``); this measures how long that takes on the replay
bench's database (1,000,000 rated backgammon matches, built by
``bench/replay.py`` and cached), for matches at several distances from the
end of the log, one after another on the same server, and whether the server
keeps answering other clients meanwhile: a second client sends ``whois`` once
a second, and its round trips are compared with the same client's round trips
before the first void (the baseline, same run). Then ``matchlobby replay
--check`` must agree with what the voids left.

Run from the repository root (after ``bench/replay.py`` has built its cache):
    .venv/bin/python bench/correction.py [--from-end 10 10000 500000]
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
from server.store.schema import SCHEMA_VERSION  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "matchlobby-bench" / \
    f"replay-v1-schema{SCHEMA_VERSION}-1000000m-20000p-seed5.db"
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


async def run(db: Path, config: Path, from_end: list[int]) -> None:
    conn = sqlite3.connect(db)
    targets = [conn.execute(
        "SELECT id FROM matches WHERE ladder = 'backgammon' AND status = 'finished' AND seq IS "
        "NOT NULL AND event_id IS NULL ORDER BY seq DESC LIMIT 1 OFFSET ?", (n,)).fetchone()[0]
        for n in from_end]
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
        base = statistics.median(before)
        print(f"whois before the voids: median {base * 1000:.2f} ms over {len(before)}")
        for n, match in zip(from_end, targets, strict=True):
            waits: list[float] = []
            errors: list[str] = []
            task = asyncio.create_task(probe(watcher, waits, errors))
            t = time.perf_counter()
            try:
                reply = await admin.request("void", {"match": match, "reason": "bench"},
                                            timeout=900)
                outcome = "ok" if reply.get("ok") else str(reply.get("error"))
            except Exception as e:
                outcome = repr(e)
            took = time.perf_counter() - t
            task.cancel()
            print(f"void of the match {n:,} from the end: {took:.2f} s ({outcome})")
            if waits:
                print(f"  whois during it: {len(waits)} answered, median "
                      f"{statistics.median(waits) * 1000:.1f} ms, max {max(waits):.2f} s "
                      f"({max(waits) / base:,.0f} x the median before)")
            print(f"  whois errors during it: {errors or 'none'}")
        await admin.close()
        await watcher.close()
    finally:
        proc.terminate()
        await proc.wait()
    t = time.perf_counter()
    done = subprocess.run([*matchlobby_command(), "replay", "--check", "--db", str(db), "--config",
                           str(config)], text=True, capture_output=True, env=bench_env(),
                          check=False)
    print(f"replay --check after the voids ({time.perf_counter() - t:.1f} s, exit "
          f"{done.returncode}): {done.stdout.strip()}")
    if done.returncode:
        raise SystemExit("CORRECTNESS: the stored ratings differ from the log")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--cache", default=str(CACHE), help="the replay bench's cached database")
    p.add_argument("--from-end", type=int, nargs="+", default=[10, 10_000, 500_000],
                   help="the voided matches: how many rated matches after each (in the cache)")
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
        asyncio.run(run(db, config, args.from_end))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
