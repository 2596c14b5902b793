"""A graceful stop (SIGTERM, SIGINT): every client told to come back, its last commands
answered, then its connection closed.

Each connection gets the push ``server_shutdown`` (``reconnect_after``: seconds to wait
before connecting again, spread over :data:`RECONNECT_AFTER` so that a crowd does not come
back at the same moment) and right behind it a WebSocket ping. The client's pong comes after
every frame it sent before it read the notice (one TCP stream), so once the pong is in, the
connection is closed (:data:`GOING_AWAY`) as soon as it has answered those frames: a command
sent just before the stop gets its reply. Whatever is still open when the grace time ends
is closed then; the commands still running finish, and are committed, before the process
exits, their replies unsent.
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from server.lobby import Session
from server.net.outbox import Outbox
from server.protocol import Push, push

log = logging.getLogger(__name__)

GOING_AWAY = 1001
REASON = "server restarting"
RECONNECT_AFTER = (1.0, 3.0)
"""The range, in seconds, each client is told to wait before it connects again."""
NOTICE = "The server is restarting; you will be connected again in a moment."
RETRY_AFTER = 2
"""``Retry-After`` of a WebSocket handshake refused while draining (HTTP 503)."""
CLOSE_WAIT = 1.0
"""Seconds a connection still open when the grace ends has to finish its closing handshake
before its TCP connection is cut: a client that does not answer does not hold the stop."""


@dataclass(slots=True, eq=False)
class Peer:
    """One connection as the drain sees it."""

    ws: ServerConnection
    session: Session
    outbox: Outbox
    reading: bool = False  # its handler waits for the next frame
    finishing: bool = False  # told, and its pong is in: close once it has answered all

    @property
    def idle(self) -> bool:
        """Waiting for a frame, none received and unread."""
        return self.reading and not unread(self.ws)


def unread(ws: ServerConnection) -> int:
    """Frames received and not yet read by the handler (websockets' assembler queue)."""
    return len(ws.recv_messages.frames)


def notice() -> Push:
    after = round(random.uniform(*RECONNECT_AFTER), 1)
    return push("server_shutdown", {"reconnect_after": after, "reason": NOTICE})


async def drain(peers: list[Peer], grace: float, hurry: asyncio.Event | None = None) -> None:
    """Tell ``peers`` and close each once it has answered what it was sent before the notice;
    after ``grace`` seconds (or once ``hurry`` is set), close the rest."""
    log.info("draining %d connections (at most %g s)", len(peers), grace)
    tasks = [asyncio.create_task(_finish(peer, told)) for peer in peers
             if (told := _tell(peer)) is not None]
    hurried = None if hurry is None else asyncio.ensure_future(hurry.wait())
    try:
        if tasks:
            everyone = asyncio.ensure_future(asyncio.wait(tasks))
            await asyncio.wait([f for f in (everyone, hurried) if f is not None], timeout=grace,
                               return_when=asyncio.FIRST_COMPLETED)
            everyone.cancel()
    finally:
        for task in tasks:
            task.cancel()
        cut_short = hurried is not None and hurried.done() and not hurried.cancelled()
        if hurried is not None:
            hurried.cancel()
        left = [peer for peer in peers if not peer.session.closed]
        if left:
            log.info("%s: closing %d connections still open", "the wait was cut short by a "
                     "second signal" if cut_short else "the grace time is over", len(left))
        for peer in left:
            peer.session.close(GOING_AWAY, REASON)
        if left:
            await asyncio.wait([asyncio.ensure_future(p.ws.wait_closed()) for p in left],
                               timeout=CLOSE_WAIT)
            for peer in left:
                if not peer.ws.transport.is_closing():
                    peer.ws.transport.abort()


def _tell(peer: Peer) -> asyncio.Future[None] | None:
    """Send the notice; a future resolved once it is written (``None``: the peer is closed,
    as one that does not read is)."""
    peer.session.send(notice())
    told = asyncio.get_running_loop().create_future()
    try:
        peer.outbox.put_nowait(told)  # resolved by its writer once the notice is written
    except asyncio.QueueFull:  # it does not read: nothing to wait for
        peer.session.close(GOING_AWAY, REASON)
        return None
    return told


async def _finish(peer: Peer, told: asyncio.Future[None]) -> None:
    """Close ``peer`` once it has answered the ping sent after the notice and every frame
    received before the pong."""
    session, ws = peer.session, peer.ws
    closed = asyncio.ensure_future(ws.wait_closed())
    try:
        await asyncio.wait((told, closed), return_when=asyncio.FIRST_COMPLETED)
        if closed.done():
            return
        await (await ws.ping())  # raises ConnectionClosed if it closes first
        peer.finishing = True
        if peer.idle:
            session.close(GOING_AWAY, REASON)
        await closed
    except ConnectionClosed:
        return
    finally:
        closed.cancel()
        told.cancel()
