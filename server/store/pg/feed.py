"""A node's feed of the pushes every node commits (several lobby processes, one PostgreSQL).

A write job publishes a push (:meth:`~server.store.pg.database.JobTx.publish`); the
writer numbers the batch's pushes from the ``push`` counter, holding its row, writes
them to ``pushes`` and commits with ``NOTIFY matchlobby_pushes, 'first-last'``, so the
notification reaches the listeners only after the commit, and the numbers follow the
commits (the row is held from the numbering to the commit; the engine is
PostgreSQL's own ``LISTEN``/``NOTIFY``: the payload is the positions, the rows are read).

The feed reads rows by position, never trusting a notification to carry them: a missed
notification only delays what the next one (or the poll) reads, and nothing is delivered
twice or out of order. When its listening connection dies (a PostgreSQL restart,
``pg_terminate_backend``) it connects again, listens again and reads everything since the
last position it delivered. Only if the rows it missed have been pruned meanwhile does it
lose pushes; it then calls ``resync`` instead of delivering anything older than what it
already delivered, so the node can reload what it shows and tell its players to refresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from server.store.pg.port import FEED_CHANNEL, FILLED, PENDING

log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 5.0
STOP_WAIT = 2.0  # seconds a stopping feed has to finish the page it reads
READ_ROWS = 1000  # pushes read a round trip
NODES_CHANGED = "nodes"  # a notification's payload: a node came or left (see ``tick``)
ACCOUNTS_CHANGED = "accounts"  # a notification's payload: an account_changes row was committed
APPLICATION = "matchlobby feed"  # the listening connection's name in pg_stat_activity
KEEP = 100_000  # pushes kept for a feed that falls behind; older ones are pruned
PENDING_WAIT = 5.0  # seconds a feed waits for a live node to fill a place it reserved
PENDING_POLL = 0.02  # seconds between reads while it waits (the fill also notifies)


@dataclass(frozen=True, slots=True)
class Pushed:
    pos: int
    origin: str
    audience: str
    body: str


Deliver = Callable[[Sequence[Pushed]], Awaitable[None] | None]
"""Given the pushes read, in order; the feed reads on once what it returns is awaited."""
Resync = Callable[[], Awaitable[None]]
Waiting = Callable[[str], bool]
"""Whether a place reserved by this node (its name) may still be filled: it is not gone."""
Tick = Callable[[Any], Awaitable[None]]
"""Run on the feed's own connection every ``tick_every`` seconds while it works (a node's
heartbeat: a node whose feed cannot read cannot beat either)."""


class PushFeed:
    """Delivers every push committed after :meth:`start`, once each, in commit order.

    ``poll`` bounds how long a push can wait when its notification is lost without the
    connection dying (none is expected; it is a safety net). ``retry`` is the first wait
    before connecting again after a lost connection; it doubles up to 2 s.
    """

    def __init__(self, url: str, deliver: Deliver, resync: Resync,
                 poll: float = 5.0, retry: float = 0.05,
                 tick: Tick | None = None, tick_every: float = 2.0,
                 own: str = "", waiting: Waiting | None = None,
                 accounts_changed: Callable[[], None] | None = None) -> None:
        self.url = url
        self.accounts_changed = accounts_changed
        self.deliver = deliver
        self.resync = resync
        self.poll = poll
        self.retry = retry
        self.tick = tick
        self.tick_every = tick_every
        self.own = own  # this node's name: its own reserved places are not waited for
        self.waiting = waiting
        self._pending: tuple[int, float] | None = None  # the place waited for, since when
        self.skipped = 0  # places never filled (their node died, or took too long)
        self._next_tick = 0.0
        self.last = 0  # the position of the last push delivered (or skipped at start)
        self.reconnects = 0
        self.resyncs = 0
        self._conn: Any = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    async def start(self, after: int | None = None) -> None:
        """Listen, and deliver the pushes committed after now (or after position ``after``)."""
        await self._connect()
        self.last = await self._top() if after is None else after
        self._stopping = False
        if self.tick is not None:  # the first beat before the node serves anyone
            await self.tick(self._conn)
            self._next_tick = time.monotonic() + self.tick_every
        self._task = asyncio.create_task(self._run(), name="push-feed")

    async def stop(self) -> None:
        """Let the feed finish what it is reading, then close its connection."""
        task, self._task = self._task, None
        if task is not None:
            self._stopping = True
            self._wake.set()
            done, _ = await asyncio.wait({task}, timeout=STOP_WAIT)
            if not done:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._close()

    async def caught_up(self, pos: int) -> None:
        """Wait until the push at ``pos`` has been delivered (tests, and a node's start)."""
        while self.last < pos:
            self._wake.set()
            await asyncio.sleep(0.005)

    # ---- the connection ------------------------------------------------------------------

    async def _connect(self) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT,
                                     server_settings={"application_name": APPLICATION})
        try:
            await conn.execute("SET idle_in_transaction_session_timeout = '60s'")
            await conn.add_listener(FEED_CHANNEL, self._notified)
            conn.add_termination_listener(self._lost)
        except BaseException:
            conn.terminate()
            raise
        self._conn = conn
        self._wake.set()  # read whatever was committed before listening began

    async def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.is_closed():
            try:
                await conn.close(timeout=1)
            except Exception:
                conn.terminate()

    def _notified(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        if payload == NODES_CHANGED:
            self._next_tick = 0.0  # a node came or left: tick now, not at the next beat
        elif payload == ACCOUNTS_CHANGED:
            if self.accounts_changed is not None:
                self.accounts_changed()
            return
        self._wake.set()

    def _lost(self, _conn: Any) -> None:
        self._wake.set()

    async def _top(self) -> int:
        pos = await self._conn.fetchval("SELECT coalesce(max(pos), 0) FROM pushes")
        return int(pos)

    # ---- delivering ----------------------------------------------------------------------

    async def _run(self) -> None:
        wait = self.retry
        while True:
            timeout = self.poll if self._pending is None else PENDING_POLL
            if self.tick is not None:
                timeout = max(0.0, min(timeout, self._next_tick - time.monotonic()))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            if self._stopping:
                return
            self._wake.clear()
            try:
                if self._conn is None or self._conn.is_closed():
                    await self._close()
                    await self._connect()
                    self.reconnects += 1
                    log.warning("push feed: listening again after a lost connection")
                    if self.accounts_changed is not None:  # its notifications meanwhile are lost
                        self.accounts_changed()
                await self._read()
                if self.tick is not None and time.monotonic() >= self._next_tick:
                    self._next_tick = time.monotonic() + self.tick_every
                    await self.tick(self._conn)
                wait = self.retry
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.warning("push feed: %s; trying again in %.2f s",
                            " ".join(str(e).split()) or type(e).__name__, wait)
                await self._close()
                await asyncio.sleep(wait)
                wait = min(wait * 2, 2.0)
                self._wake.set()

    async def _read(self) -> None:
        """Deliver every row after :attr:`last`, in order, a page at a time; a place another
        node reserved and has not filled yet stops the reading until it is filled (or its
        node is gone, or :data:`PENDING_WAIT` has passed)."""
        while True:
            rows = await self._conn.fetch(
                "SELECT pos, origin, audience, body FROM pushes WHERE pos > $1 "
                "ORDER BY pos LIMIT $2", self.last, READ_ROWS)
            if not rows:
                return
            if rows[0]["pos"] != self.last + 1:
                await self._missed(rows[0]["pos"])
            batch: list[Pushed] = []
            upto, stopped, lost = self.last, False, False
            for r in rows:
                pos, origin, audience = r["pos"], r["origin"], r["audience"]
                if audience == PENDING:
                    if origin != self.own and self._wait_for(pos, origin):
                        stopped = True
                        break
                    lost = lost or origin != self.own
                elif audience == FILLED:
                    batch += [Pushed(pos, origin, str(a), str(b))
                              for a, b in orjson.loads(r["body"])]
                else:
                    batch.append(Pushed(pos, origin, audience, r["body"]))
                upto = pos
            if not stopped:
                self._pending = None
            self.last = upto
            if batch:
                delivered = self.deliver(batch)
                if delivered is not None:
                    await delivered
            if lost:
                await self.resync()
            if stopped or len(rows) < READ_ROWS:
                return

    def _wait_for(self, pos: int, origin: str) -> bool:
        """Whether to wait for the place at ``pos`` that ``origin`` reserved (else it is
        skipped: what it would have held is lost to this node)."""
        now = time.monotonic()
        if self._pending is None or self._pending[0] != pos:
            self._pending = (pos, now)
        gone = self.waiting is not None and not self.waiting(origin)
        if not gone and now - self._pending[1] < PENDING_WAIT:
            return True
        self._pending = None
        self.skipped += 1
        log.warning("push feed: node %s never filled place %d (%s); skipped", origin, pos,
                    "the node is gone" if gone else f"{PENDING_WAIT:.0f} s passed")
        return False

    async def _missed(self, first: int) -> None:
        """The pushes between :attr:`last` and ``first`` were pruned before this feed read
        them: the node reloads instead of showing anything older than what it showed."""
        log.warning("push feed: pushes %d to %d were pruned before they were read; resyncing",
                    self.last + 1, first - 1)
        self.resyncs += 1
        await self.resync()


async def prune(conn: Any, keep: int = KEEP) -> int:
    """Drop all but the newest ``keep`` pushes (a feed that far behind resyncs)."""
    done = await conn.execute(
        "DELETE FROM pushes WHERE pos <= (SELECT coalesce(max(pos), 0) FROM pushes) - $1", keep)
    return int(done.split()[-1])
