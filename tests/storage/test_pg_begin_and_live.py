"""Two lobby writers on one PostgreSQL database: a join's check of who plays a live match
(``live_players``, read after both players' rows are locked), and a batch's begin, which reads
the ladders' versions only when its count says another writer moved one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from testkit import postgres

from server.store import invitations, matches
from server.store.pg.database import PgDatabase

pytestmark = pytest.mark.postgresql


async def _players(db: PgDatabase, n: int) -> None:
    async def job(tx: Any) -> None:
        await tx.executemany("INSERT INTO players (id, name, name_key, created_at) VALUES "
                             "(?, ?, ?, '2026-01-01')", [(i, f"p{i}", f"p{i}") for i in range(1, n + 1)])
    await db.write(job)


async def test_two_joins_naming_one_player_on_two_writers_start_one_match(pg_url: str) -> None:
    """The second join waits for the first one's lock on the player, then sees its rows."""
    a, b = PgDatabase(pg_url, origin="a"), PgDatabase(pg_url, origin="b")
    await a.open()
    await b.open()
    try:
        await _players(a, 3)
        gate, holding = asyncio.Event(), asyncio.Event()

        def join(x: int, y: int, wait: bool) -> Callable[[Any], Awaitable[str]]:
            async def job(tx: Any) -> str:
                if await invitations.playing(tx, x, y):
                    return "refused"
                await matches.start_live(tx, "backgammon", (f"p{x}", x), (f"p{y}", y), 1,
                                         "2026-01-01", "2026-01-01T00:00:00Z")
                if wait:
                    await tx.fetchall("SELECT 1")  # the queued inserts sent, uncommitted
                    holding.set()
                    await gate.wait()
                return "started"
            return job

        first = asyncio.create_task(a.write(join(1, 2, True)))
        await holding.wait()
        second = asyncio.create_task(b.write(join(1, 3, False)))
        await asyncio.sleep(0.3)  # the second is waiting for player 1's row
        assert not second.done()
        gate.set()
        assert await asyncio.gather(first, second) == ["started", "refused"]
        assert sorted(postgres.query(pg_url, "SELECT player_id FROM live_players")) == [(1,), (2,)]
    finally:
        await a.close()
        await b.close()


async def test_the_begin_counts_only_ladders_at_a_version_not_seen(pg_url: str) -> None:
    """Names that need quoting are written in as they are; a ladder never seen counts."""
    db = PgDatabase(pg_url)
    await db.open()
    try:
        assert db.writer is not None
        db.seen = {"it's": 3, "back\\slash": 4, "ünï": 5}
        for name, version in db.seen.items():
            postgres.execute(pg_url, "INSERT INTO ladder_versions (ladder, version) "
                                     "VALUES ($1, $2)", (name, version))
        assert await db.writer.execute(db._unseen()) == "SELECT 0"
        postgres.execute(pg_url, "UPDATE ladder_versions SET version = 5 WHERE ladder = 'it''s'")
        assert await db.writer.execute(db._unseen()) == "SELECT 1"
        postgres.execute(pg_url, "INSERT INTO ladder_versions (ladder, version) VALUES ('new', 0)")
        assert await db.writer.execute(db._unseen()) == "SELECT 2"
    finally:
        await db.close()


async def test_a_first_job_run_again_follows_a_ladder_moved_while_it_waited(pg_url: str) -> None:
    """The transaction begun again after a rerun (another writer's row, 23505) follows the
    ladder another writer moved meanwhile, once, before the job runs again."""
    pg, other = PgDatabase(pg_url), PgDatabase(pg_url)
    await pg.open()
    await other.open()
    followed: list[tuple[bool, str | None]] = []

    async def moved(committed: bool, ladder: str | None) -> bool:
        followed.append((committed, ladder))
        return True

    pg.on_moved = moved
    try:
        assert pg.writer is not None
        await pg.writer.execute("CREATE TABLE t (v TEXT PRIMARY KEY)")
        await pg.write(lambda tx: tx.hold_ladder("fibs"))
        await pg.write(lambda tx: tx.execute("INSERT INTO t VALUES ('dup')"))
        gate, waiting = asyncio.Event(), asyncio.Event()
        tries = 0

        async def first(tx: Any) -> int:
            nonlocal tries
            tries += 1
            if tries == 1:
                await tx.fetchall("SELECT 1")
                waiting.set()
                await gate.wait()
                await tx.fetchall("INSERT INTO t VALUES ('dup') RETURNING v")  # 23505: again
            return tries

        task = asyncio.create_task(pg.write(first))
        await waiting.wait()
        await other.write(lambda tx: tx.hold_ladder("fibs"))
        gate.set()
        assert await task == 2
        assert followed == [(True, "fibs")]
        assert pg.seen["fibs"] == 2
    finally:
        await pg.close()
        await other.close()
