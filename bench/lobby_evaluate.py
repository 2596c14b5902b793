"""Benchmark: the lobby command ``evaluate LADDER``'s first ask on the million-match FIBS ladder.

Figure 14 (the lobby's side): a server started in this process on a copy of the database
``bench/replay.py`` builds and caches, one guest connection, one ``evaluate backgammon``: its
wall time and the server process's peak resident memory during it (the peak is reset just
before the ask through ``/proc/self/clear_refs``, so it is the ask's own, start-up excluded),
beside the resident memory before it. Then one more rated match is committed to the log
(written into the file beside the running server, as another node would: evaluate reads only
the log) and asked about again: the ask that follows a new match. Linux only.

Run from the repository root:  .venv/bin/python bench/lobby_evaluate.py
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.replay import LADDER, cached_database, database_arguments  # noqa: E402
from clients import LobbyClient  # noqa: E402
from server.app import start_server  # noqa: E402
from server.config import Config, Limits  # noqa: E402


def memory(field: str) -> int:
    """``VmRSS`` or ``VmHWM`` of this process, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) // 1024
    raise SystemExit(f"no {field} in /proc/self/status")


def add_match(db: Path) -> None:
    """The ladder's last rated match played again, as the next unit of its log."""
    conn = sqlite3.connect(db)
    with conn:
        seq = conn.execute("UPDATE counters SET value = value + 1 WHERE name = 'seq' "
                           "RETURNING value").fetchone()[0]
        last = conn.execute("SELECT id FROM matches WHERE ladder = ? AND seq = (SELECT max(seq) "
                            "FROM matches WHERE ladder = ?)", (LADDER, LADDER)).fetchone()[0]
        mid = conn.execute(
            "INSERT INTO matches (ladder, side_a, side_b, length, played_on, status, winner, "
            "score_a, score_b, how, seq, created_at, finished_at) SELECT ladder, side_a, side_b, "
            "length, played_on, status, winner, score_a, score_b, how, ?, created_at, "
            "finished_at FROM matches WHERE id = ? RETURNING id", (seq, last)).fetchone()[0]
        conn.execute("INSERT INTO match_players (match_id, player_id, side) SELECT ?, "
                     "player_id, side FROM match_players WHERE match_id = ?", (mid, last))
    conn.close()


async def ask(db: Path) -> None:
    # no read budget: the first ask's million rows would keep this address waiting ~100 s
    config = Config(database=str(db), limits=Limits(read_units_per_second=0))
    server = await start_server(config, host="127.0.0.1", port=0)
    try:
        client = LobbyClient(f"ws://127.0.0.1:{server.port}/ws")
        await client.connect()
        Path("/proc/self/clear_refs").write_text("5")  # the peak from here on
        before = memory("VmRSS")
        t = time.perf_counter()
        reply = await client.request("evaluate", {"ladder": LADDER}, timeout=3600)
        spent = time.perf_counter() - t
        if not reply.get("ok"):
            raise SystemExit(f"evaluate refused: {reply}")
        games = reply["data"]["systems"][0]["games"]
        print(f"first ask: {spent:.1f} s, {games:,} games scored; server resident "
              f"{before} MB before, peak {memory('VmHWM')} MB during it, "
              f"{memory('VmRSS')} MB after", flush=True)
        add_match(db)
        t = time.perf_counter()
        again = await client.request("evaluate", {"ladder": LADDER}, timeout=3600)
        spent = time.perf_counter() - t
        assert again["data"]["systems"][0]["games"] == games + 1, again
        print(f"after one more match: {spent * 1000:.0f} ms", flush=True)
        await client.close()
    finally:
        await server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    database_arguments(p)
    args = p.parse_args()
    cached = cached_database(args)
    work = Path(tempfile.mkdtemp(prefix="bench-lobby-evaluate-", dir=args.tmp))
    try:
        db = work / "lobby.db"
        shutil.copyfile(cached, db)
        asyncio.run(ask(db))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
