"""The push feed of several lobby processes on one PostgreSQL (server/store/pg/feed.py): two
writers publish in their jobs' transactions, two feeds deliver every push once, in commit
order, after the commit; a feed whose connection is killed catches up; one that missed
pruned pushes resyncs instead of delivering anything out of order."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from testkit import postgres

from server.store.pg.database import RESERVED, JobTx, PgDatabase
from server.store.pg.feed import APPLICATION, Pushed, PushFeed, prune
from server.store.pg.port import FILLED

pytestmark = pytest.mark.postgresql


class Heard:
    """What one feed delivered, and how often it was told to resync."""

    def __init__(self) -> None:
        self.pushes: list[Pushed] = []
        self.resyncs = 0

    def deliver(self, pushes: Sequence[Pushed]) -> None:
        self.pushes.extend(pushes)

    async def resync(self) -> None:
        self.resyncs += 1

    def feed(self, url: str) -> PushFeed:
        return PushFeed(url, self.deliver, self.resync)


@pytest.fixture
async def nodes(pg_url: str) -> AsyncIterator[tuple[PgDatabase, PgDatabase]]:
    """Two writers on one new database, as two lobby processes would have."""
    a, b = PgDatabase(pg_url, origin="a"), PgDatabase(pg_url, origin="b")
    await a.open()
    await b.open()
    try:
        yield a, b
    finally:
        await a.close()
        await b.close()


def publishes(*bodies: str, fail: bool = False) -> Any:
    async def job(tx: JobTx) -> None:
        for body in bodies:
            tx.publish("lobby", body)
        await tx.execute("SELECT 1")
        if fail:
            raise ValueError("this job fails: its pushes must never be heard")
    return job


def positions(heard: Heard) -> list[int]:
    return [p.pos for p in heard.pushes]


async def test_every_node_hears_every_push_once_in_commit_order(
        nodes: tuple[PgDatabase, PgDatabase]) -> None:
    a, b = nodes
    heard_a, heard_b = Heard(), Heard()
    feed_a, feed_b = heard_a.feed(a.path), heard_b.feed(b.path)
    await feed_a.start()
    await feed_b.start()
    try:
        jobs = []
        for i in range(60):
            writer = (a, b)[i % 2]
            jobs.append(writer.write(publishes(f"{writer.origin}{i}.1", f"{writer.origin}{i}.2",
                                               fail=i % 7 == 3)))
        done = await asyncio.gather(*jobs, return_exceptions=True)
        failed = {i for i, d in enumerate(done) if isinstance(d, ValueError)}
        assert failed == {i for i in range(60) if i % 7 == 3}
        top = postgres.query(a.path, "SELECT max(pos) FROM pushes")[0][0]
        await asyncio.wait_for(feed_a.caught_up(top), 10)
        await asyncio.wait_for(feed_b.caught_up(top), 10)
    finally:
        await feed_a.stop()
        await feed_b.stop()
    expected = {f"{'ab'[i % 2]}{i}.{k}" for i in range(60) if i not in failed for k in (1, 2)}
    for heard in (heard_a, heard_b):
        assert positions(heard) == list(range(1, len(expected) + 1))  # once each, in order
        assert {p.body for p in heard.pushes} == expected
        assert {p.origin for p in heard.pushes} == {"a", "b"}
        for p in heard.pushes:  # a job's two pushes are next to each other: one commit
            if p.body.endswith(".1"):
                assert heard.pushes[p.pos].body == p.body[:-1] + "2"
    assert heard_a.pushes == heard_b.pushes
    assert postgres.query(a.path, "SELECT value FROM counters WHERE name = 'push'") == [(top,)]


async def test_a_feed_whose_connection_is_killed_catches_up(
        nodes: tuple[PgDatabase, PgDatabase]) -> None:
    """``pg_terminate_backend`` on the listening connection mid-load: the feed listens again
    and delivers what was committed meanwhile, nothing twice, nothing out of order."""
    a, b = nodes
    heard = Heard()
    feed = heard.feed(a.path)
    await feed.start()
    killed = 0

    async def load() -> None:
        for i in range(200):
            await (a, b)[i % 2].write(publishes(json.dumps({"i": i})))
            if i % 5 == 0:
                await asyncio.sleep(0.001)

    async def kill() -> None:
        nonlocal killed
        for _ in range(3):
            await asyncio.sleep(0.05)
            killed += (await asyncio.to_thread(
                postgres.query, a.path,
                "SELECT count(pg_terminate_backend(pid)) FROM (SELECT pid FROM pg_stat_activity "
                "WHERE application_name = ? AND datname = current_database() OFFSET 0) AS s",
                (APPLICATION,)))[0][0]

    try:
        await asyncio.gather(load(), kill())
        await asyncio.wait_for(feed.caught_up(200), 20)
    finally:
        await feed.stop()
    assert killed >= 1 and feed.reconnects >= 1
    assert positions(heard) == list(range(1, 201))
    assert [json.loads(p.body)["i"] for p in heard.pushes] == list(range(200))
    assert heard.resyncs == 0


async def test_a_feed_that_missed_pruned_pushes_resyncs_and_goes_on(
        nodes: tuple[PgDatabase, PgDatabase]) -> None:
    a, _ = nodes
    for i in range(30):
        await a.write(publishes(str(i)))
    assert await prune(a.writer, keep=10) == 20
    heard = Heard()
    feed = heard.feed(a.path)
    await feed.start(after=5)  # it had delivered up to 5 before it went away
    try:
        await asyncio.wait_for(feed.caught_up(30), 10)
        await a.write(publishes("after"))
        await asyncio.wait_for(feed.caught_up(31), 10)
    finally:
        await feed.stop()
    assert heard.resyncs == 1
    assert positions(heard) == list(range(21, 32))  # nothing older than it could have shown
    assert heard.pushes[-1].body == "after"


async def _until(condition: Any) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def test_a_reserved_place_holds_back_what_follows_until_it_is_filled(
        nodes: tuple[PgDatabase, PgDatabase]) -> None:
    """A command's commit reserves the place of the pushes it will cause (``write(...,
    reserve=True)``); what another writer commits after it waits for it: a feed delivers the
    fill in that place, then what followed. A place whose node is gone is skipped, and the
    feed resyncs (what it would have held is lost to this node)."""
    a, b = nodes
    heard = Heard()
    gone: set[str] = set()
    feed = PushFeed(b.path, heard.deliver, heard.resync, own="c",
                    waiting=lambda origin: origin not in gone)
    await feed.start()
    try:
        await a.write(publishes("before"), reserve=True)
        place = RESERVED.get()
        assert place is not None
        await b.write(publishes("after"))
        await asyncio.wait_for(_until(lambda: heard.pushes), 5)
        await asyncio.sleep(0.3)  # "after" is committed, and stays held back
        assert [p.body for p in heard.pushes] == ["before"]

        async def fill(tx: JobTx) -> None:
            await tx.execute("UPDATE pushes SET audience = ?, body = ? WHERE pos = ?",
                             (FILLED, json.dumps([["lobby", "first"], ["lobby", "second"]]),
                              place))
            tx.wake()

        await a.write(fill)
        await asyncio.wait_for(_until(lambda: len(heard.pushes) == 4), 5)
        assert [(p.body, p.pos == place) for p in heard.pushes] == [
            ("before", False), ("first", True), ("second", True), ("after", False)]
        assert heard.resyncs == feed.skipped == 0

        await a.write(publishes(), reserve=True)  # then its node dies before filling it
        gone.add("a")
        await b.write(publishes("later"))
        await asyncio.wait_for(_until(lambda: len(heard.pushes) == 5), 5)
        assert heard.pushes[-1].body == "later"
        assert heard.resyncs == feed.skipped == 1
    finally:
        await feed.stop()
