"""Pushes between the lobby's nodes on one PostgreSQL database.

A node delivers the pushes its own commands cause to its own connections at once (after
the reply, as a single node does) and shares them: they are written to the ``pushes``
table in a transaction of the node's writer, which commits them with one ``NOTIFY``, and
every other node's feed (:class:`~server.store.pg.feed.PushFeed`) reads them in commit
order and delivers them to its connections through the same path
(:meth:`~server.lobby.lobby.Lobby.deliver`). The pushes of one event loop turn are shared
in one job.

The share is written after the commit of the change that caused it (the pushes of a
command are decided once it has committed): should a node die between the two, the players
of the other nodes miss those pushes; they hear ``refresh`` when the node is found dead (it
stopped beating: :mod:`server.store.pg.nodes`), as they do when their own node finds it
missed pushes that were pruned.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from server.lobby.audience import Audience
from server.protocol import push
from server.store import now
from server.store.pg import nodes
from server.store.pg.feed import KEEP, Pushed, PushFeed

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby

log = logging.getLogger(__name__)

NODE_LOST = ("One of the lobby's servers stopped; some updates may not have reached this "
             "connection: reload what you show (ladders, matches, who is online).")
PRUNE_EVERY = 10_000  # pushes shared between two prunings of the table (to its newest KEEP)
REFRESH = ("Some of the lobby's updates could not reach this connection; reload what you "
           "show (ladders, matches, who is online).")


class SharedPushes:
    """This node's side of the push path between nodes: what it shares, what it hears."""

    def __init__(self, lobby: Lobby, url: str, node: str) -> None:
        self.lobby = lobby
        self.node = node
        self.started_at = now()
        self.alive: dict[str, nodes.Node] = {}  # the other nodes beating at the last beat
        self.deaths = 0
        self._announced = False
        self.feed = PushFeed(url, self._heard, self._missed, tick=self._beat,
                             tick_every=nodes.HEARTBEAT)
        self._held: list[tuple[str, str]] = []
        self._writing: set[asyncio.Task[None]] = set()
        self.shared = 0
        self.heard = 0
        self._unpruned = 0

    async def start(self) -> None:
        await self.feed.start()

    async def stop(self) -> None:
        """Write what is held, stop hearing and beating, and leave the nodes' table (before
        the database closes): the other nodes do not take this one for dead."""
        self._flush()
        if self._writing:
            await asyncio.gather(*self._writing, return_exceptions=True)
        await self.feed.stop()
        try:
            await self.lobby.db.write(lambda tx: nodes.leave(tx, self.node))
        except Exception as e:
            log.warning("could not leave the nodes' table (%s); the other nodes will take this "
                        "one for dead", " ".join(str(e).split()) or type(e).__name__)

    async def _beat(self, conn: Any) -> None:
        """This node's heartbeat; a node that was beating and stopped is dead."""
        others = await nodes.beat(conn, self.node, socket.gethostname(), os.getpid(),
                                  self.started_at)
        if not self._announced:
            self._announced = True
            await nodes.announce(conn)
        beating = {n.name: n for n in others if not n.dead}
        for name in self.alive.keys() - beating.keys():
            if any(n.name == name for n in others):  # stale, not gone: it did not leave
                self._dead(self.alive[name])
        self.alive = beating
        self.lobby.requests.others = bool(beating)

    def _dead(self, node: nodes.Node) -> None:
        self.deaths += 1
        log.warning("node %s (%s, pid %d) stopped beating; its players' connections are lost",
                    node.name, node.host, node.pid)
        self.lobby.deliver_to_everyone(push("refresh", {"reason": NODE_LOST}))

    def share(self, audience: Audience, message: dict[str, Any]) -> None:
        """Have the other nodes deliver ``message`` to ``audience`` (written with the next
        flush, at the end of this loop turn)."""
        if not self._held:
            asyncio.get_running_loop().call_soon(self._flush)
        self._held.append((audience.as_text(), orjson.dumps(message).decode()))

    def _flush(self) -> None:
        held, self._held = self._held, []
        if not held:
            return
        self._unpruned += len(held)
        prune = self._unpruned >= PRUNE_EVERY
        if prune:
            self._unpruned = 0

        async def job(tx: Any) -> None:
            for audience, body in held:
                tx.publish(audience, body)
            if prune:  # a feed further behind than KEEP resyncs instead
                await tx.execute("DELETE FROM pushes WHERE pos <= (SELECT value FROM counters "
                                 "WHERE name = 'push') - ?", (KEEP,))

        async def write() -> None:
            try:
                await self.lobby.db.write(job)
                self.shared += len(held)
            except Exception as e:
                log.warning("%d pushes for the other nodes were not written (%s)", len(held),
                            " ".join(str(e).split()) or type(e).__name__)

        task = asyncio.create_task(write(), name="share-pushes")
        self._writing.add(task)
        task.add_done_callback(self._writing.discard)

    def _heard(self, pushes: Sequence[Pushed]) -> None:
        for p in pushes:
            if p.origin == self.node:
                continue  # delivered here when it was shared
            self.heard += 1
            try:
                audience, message = Audience.from_text(p.audience), orjson.loads(p.body)
            except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError):
                log.error("push %d from node %s cannot be read; skipped", p.pos, p.origin)
                continue
            self.lobby.deliver(audience, message)

    async def _missed(self) -> None:
        """Pushes were pruned before this node read them: every connection hears
        ``refresh``, nothing older than what it showed."""
        self.lobby.deliver_to_everyone(push("refresh", {"reason": REFRESH}))
