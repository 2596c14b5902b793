"""Benchmark: the join's check that neither player is in a live match, against how many
matches the two players have played.

A join holds both players and asks whether either plays a live match, inside its write job.
The lobby keeps who plays in ``live_players`` (two rows read); the check before it joined the
players' matches to the matches table and so read every match either player had ever played.
Both run here on the same database, inside one write job of the lobby's own writer
(``server.store.invitations.playing``, and the same with the earlier statement), for two
players with 0, ``--history`` / 10 and ``--history`` finished matches each (against other
players), on SQLite and, when it is installed, on a PostgreSQL cluster of the bench's own.
Each figure is the median of five rounds' medians of ``--repeat`` checks, the two checks
alternating round by round; the ratio is against the same check with no history, in the
same run.

Run from the repository root:  .venv/bin/python bench/join_check.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import _postgres  # noqa: E402
from bench._harness import machine  # noqa: E402
from server.store import invitations  # noqa: E402
from server.store.backends import lobby_database  # noqa: E402
from server.store.storage import LobbyDatabase  # noqa: E402

# The check as it was: every match either player played, joined to its status.
BEFORE = """SELECT 1 FROM match_players mp JOIN matches m ON m.id = mp.match_id
    WHERE mp.player_id IN (?, ?) AND m.status IN ('playing', 'claimed') LIMIT 1"""
A, B = 1, 2  # the two players whose join is checked
OTHERS = 50  # their past opponents
ROUNDS = 5  # of each check at each size, alternating


async def grow(db: LobbyDatabase, played: int, to: int) -> None:
    """Finished matches for A and B until each has played ``to``."""
    async def job(tx: Any) -> None:
        rows, sides = [], []
        for n in range(played, to):
            for player in (A, B):
                mid = await tx.next_match_id()
                rows.append((mid, f"p{player}", f"p{3 + n % OTHERS}"))
                sides += [(mid, player, "a"), (mid, 3 + n % OTHERS, "b")]
        await tx.executemany(
            "INSERT INTO matches (id, ladder, side_a, side_b, played_on, status, winner, "
            "created_at) VALUES (?, 'backgammon', ?, ?, '2026-01-01', 'finished', 'a', "
            "'2026-01-01')", rows)
        await tx.executemany("INSERT INTO match_players (match_id, player_id, side) "
                             "VALUES (?, ?, ?)", sides)
    await db.write(job)


async def timed(db: LobbyDatabase, check: Callable[[Any], Awaitable[bool]],
                repeat: int) -> float:
    """The median seconds of ``check`` inside one write job (``repeat`` times)."""
    async def job(tx: Any) -> list[float]:
        await check(tx)  # untimed: the statement's first preparation
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            assert not await check(tx)
            times.append(time.perf_counter() - started)
        return times
    return statistics.median(await db.write(job))


async def run(database: str, sizes: list[int], repeat: int) -> list[tuple[int, float, float]]:
    db = lobby_database(database, batch_max=64, schemas=())
    await db.open()
    try:
        async def players(tx: Any) -> None:
            await tx.executemany("INSERT INTO players (id, name, name_key, created_at) VALUES "
                                 "(?, ?, ?, '2026-01-01')",
                                 [(i, f"p{i}", f"p{i}") for i in range(1, 3 + OTHERS)])
        await db.write(players)

        async def now(tx: Any) -> bool:
            return await invitations.playing(tx, A, B)

        async def before(tx: Any) -> bool:  # ``playing`` as it was
            if tx.backend == "postgresql":
                return await tx.rows([(invitations.HOLD_PLAYERS, (A, B)), (BEFORE, (A, B))]) > 0
            return await tx.fetchone(BEFORE, (A, B)) is not None

        out, played = [], 0
        for size in sizes:
            await grow(db, played, size)
            played = size
            rounds = [(await timed(db, before, repeat), await timed(db, now, repeat))
                      for _ in range(ROUNDS)]  # alternating: a busy moment of the machine
            out.append((size, statistics.median(r[0] for r in rounds),
                        statistics.median(r[1] for r in rounds)))
        return out
    finally:
        await db.close()


def table(backend: str, rows: list[tuple[int, float, float]]) -> None:
    base_before, base_now = rows[0][1], rows[0][2]
    print(f"\n{backend}\n")
    print("| matches each | before µs | before / none | now µs | now / none |")
    print("|---:|---:|---:|---:|---:|")
    for size, before, now in rows:
        print(f"| {size:,} | {before * 1e6:.1f} | {before / base_before:.1f} | "
              f"{now * 1e6:.1f} | {now / base_now:.1f} |")
    size, before, now = rows[-1]
    print(f"\n{backend}: ratio of the check at {size:,} matches each to none: "
          f"before {before / base_before:.1f} ×, now {now / base_now:.1f} ×")


async def main_async(args: argparse.Namespace) -> None:
    print(f"machine: {machine()}")
    sizes = [0, args.history // 10, args.history]
    with tempfile.TemporaryDirectory(prefix="join-check-") as tmp:
        table("SQLite", await run(str(Path(tmp) / "lobby.db"), sizes, args.repeat))
    cluster = _postgres.cluster()
    if cluster is None:
        print("\nPostgreSQL is not installed: SQLite only")
        return
    try:
        url = _postgres.new_database(cluster.url)
        table("PostgreSQL", await run(url, sizes, args.repeat))
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=10_000,
                        help="matches each of the two players has played, at most (10000)")
    parser.add_argument("--repeat", type=int, default=200, help="checks timed at each size")
    asyncio.run(main_async(parser.parse_args(argv)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
