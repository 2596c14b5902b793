"""The WebSocket transport: accepts connections, limits them, turns frames into lobby calls.

It makes no game or rating decisions. A frame for a client that keeps up is
written straight to its socket (with the others caused by the same request,
in one write: :class:`Cork`); once the socket's buffer backs up, frames wait
in the connection's outgoing queue, drained by its own task, so one slow
reader never holds up the fan-out to everyone else. What a connection's peer
has not taken yet (queued, corked, or in the socket's write buffer) is
bounded in bytes, what the kernel holds for it counted too: past
``limits.outgoing_bytes`` it is disconnected instead, and whatever was held
for it, in the server and in the kernel, is let go (see :mod:`server.net.sockets`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import sys
import time
from collections.abc import Awaitable
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.protocol import State

from server.config import Limits, Tls
from server.limits import TokenBucket
from server.lobby import Router, Session
from server.net.connection import Cork, CorkedConnection, NotUtf8, capped
from server.net.descriptors import connection_budget, open_file_limit
from server.net.drain import GOING_AWAY, REASON, RETRY_AFTER, Peer, drain, notice, unread
from server.net.gate import Gate
from server.net.health import DRAINING, PATHS, Health
from server.net.memory import trim_soon
from server.net.origins import OriginPolicy
from server.net.outbox import Outbox
from server.net.sockets import reset_on_close, unsent
from server.net.static import not_allowed, static_response, without_body
from server.protocol import encode_frame, error, frame_id

log = logging.getLogger(__name__)
# websockets logs every frame at DEBUG, passwords and all: its logger never goes below INFO,
# whatever the level of the root logger (connections opened and closed are still logged).
WS_LOG = log.getChild("websockets")
WS_LOG.setLevel(logging.INFO)

HARD_LIMIT_FACTOR = 16
# Bytes the kernel has not taken yet past which frames queue in the Outbox (and its
# limit, in messages, applies) instead of being written directly.
DIRECT_WRITE_LIMIT = 64 * 1024
DIRECT_FRAME_SIZE = 4096
CLOSING_GRACE = 2.0  # seconds a closing peer has to answer our close frame
# Seconds a peer dropped for not reading has to take what it was sent and our close frame;
# then its TCP connection is cut, and the bytes held for it are freed.
UNREAD_GRACE = 5.0
# The longest a connection waits, unread, after one of its reads was refused for its address's
# read budget (well under the ping timeout: its pongs wait too).
MAX_PAUSE = 5.0
WS_PATH = "/ws"


class Transport:
    """Connections, limits and fan-out; every decision about the game is the lobby's."""

    def __init__(self, router: Router, limits: Limits | None = None, tls: Tls | None = None,
                 compression: bool = False, health: Health | None = None) -> None:
        self.router = router
        self.lobby = router.lobby
        self.compression = compression
        self.limits = limits or Limits()
        self.tls = tls or Tls()
        self.server: Server | None = None
        self.connections: set[ServerConnection] = set()
        self.sessions: dict[ServerConnection, Session] = {}
        self._watchdog: asyncio.Task[None] | None = None
        self.gate: Gate | None = None  # known once listening (its budget counts what is open)
        self._closing: set[asyncio.Task[None]] = set()
        self.cork = Cork()
        self.origins: OriginPolicy | None = None  # known once listening (the port may be 0)
        self.host = ""
        self.ssl_context: ssl.SSLContext | None = None  # its certificate reloaded in place
        self.health = health or Health()
        self.draining = False
        self._peers: dict[ServerConnection, Peer] = {}

    @property
    def max_message(self) -> int:
        return self.limits.max_message

    def _drop(self, ws: ServerConnection, session: Session, queue: Outbox, detail: str,
              reason: str, limit: str) -> None:
        """Drop a peer that does not read: what was queued for it goes at once (``limit``:
        the one it passed, ``messages`` or ``bytes``)."""
        log.warning("closing %s: it does not read its messages (%s)", session.address, detail)
        self.lobby.metrics.dropped(limit)
        session.closed = True
        queue.clear()
        self._close_later(ws, 1008, reason)
        trim_soon()

    def _close_later(self, ws: ServerConnection, code: int, reason: str) -> None:
        """Close a peer whose queue is full or over its budget: it is not reading."""
        task = asyncio.get_running_loop().create_task(_close(ws, code, reason))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls.enabled:
            return None
        assert self.tls.certificate is not None
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.tls.certificate, self.tls.key)
        return context

    async def start(self, host: str, port: int) -> Server:
        lim = self.limits
        # Sized from what is open before any client connects (the listening sockets come
        # out of descriptors.RESERVE).
        gate = self.gate = Gate(connection_budget(lim.max_connections),
                                lim.connections_per_address)
        self.host, self.ssl_context = host, self._ssl_context()
        self.server = await serve(
            self.handler, host, port,
            process_request=self.process_request,
            # Frames a little over the limit are read so they can be answered with
            # too_large; beyond this hard cap websockets closes with 1009 by itself.
            max_size=lim.max_message * HARD_LIMIT_FACTOR,
            ping_interval=lim.ping_interval or None, ping_timeout=lim.ping_timeout or None,
            server_header="matchlobby",
            create_connection=capped(gate.connection_class(), lim.send_buffer),
            logger=WS_LOG,
            ssl=self.ssl_context,
            # Off by default: lobby frames are a few hundred bytes, where deflate
            # costs ~30 µs a frame and a zlib context per connection for nothing.
            compression="deflate" if self.compression else None,
        )
        self._use_origins(lim.origins)
        log.info("at most %d connections (%d per address; open-file limit %d)",
                 gate.max_connections, gate.per_address, open_file_limit())
        self._watch_idle(lim.idle_timeout)
        return self.server

    def _use_origins(self, origins: tuple[str, ...]) -> None:
        """The browser origins allowed from now on (at start, and after a reload), logged."""
        assert self.server is not None
        ports = {int(sock.getsockname()[1]) for sock in self.server.sockets}
        self.origins = OriginPolicy(origins, self.host, ports, self.tls.enabled)
        level = logging.WARNING if self.origins.wildcard_host and not self.origins.configured \
            else logging.INFO
        log.log(level, "%s", self.origins.describe())
        for entry in self.origins.malformed():
            log.warning("limits.origins: %r is not an origin such as "
                        "\"https://lobby.example.org\" (scheme://host[:port]); it allows nothing",
                        entry)

    def _watch_idle(self, timeout: float) -> None:
        """Close idle connections after ``timeout`` seconds (0: never), replacing the sweep
        that ran with an earlier timeout."""
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if timeout:
            self._watchdog = asyncio.get_running_loop().create_task(self._close_idle(timeout))

    async def _close_idle(self, timeout: float) -> None:
        """One sweep every quarter of the idle timeout (at most 30 s) closes the idle connections.

        A timer per connection, re-armed on every frame, cost more than the frame's parsing.
        """
        while True:
            await asyncio.sleep(min(timeout / 4, 30.0))
            cutoff = time.monotonic() - timeout
            for session in [s for s in self.sessions.values() if s.last_seen < cutoff]:
                session.close(1000, "idle for too long")

    @property
    def port(self) -> int:
        assert self.server is not None
        sock = next(iter(self.server.sockets))
        return int(sock.getsockname()[1])

    def process_request(self, connection: ServerConnection, request: Request
                        ) -> Response | Awaitable[Response] | None:
        path = request.path.split("?", 1)[0]
        # websockets passes every method through (older versions refused all but GET
        # themselves and have no attribute for it).
        method = getattr(request, "method", "GET")
        if path in PATHS:  # a coroutine: websockets awaits it
            return self.health.respond(connection, method, path)
        if path != WS_PATH:
            if request.headers.get("Upgrade", "").lower() == "websocket":
                return connection.respond(404, f"The WebSocket endpoint is {WS_PATH}.\n")
            return static_response(connection, method, path)
        if method != "GET":
            return without_body(method, not_allowed(connection, "GET"))
        if self.draining:
            refused = connection.respond(503, "The server is restarting; connect again in a "
                                              "moment.\n")
            refused.headers["Retry-After"] = str(RETRY_AFTER)
            return refused
        origin = request.headers.get("Origin")
        if origin is not None and not self.origin_allowed(origin):
            log.warning("refused a connection from origin %r", origin[:100])
            return connection.respond(403, "This origin may not connect to the lobby.\n")
        assert self.gate is not None
        return self.gate.admit(connection)

    def origin_allowed(self, origin: str) -> bool:
        """Browsers only: ``limits.origins``, or by default the server's own origins."""
        assert self.origins is not None, "the server has not started"
        return self.origins.allows(origin)

    async def handler(self, ws: ServerConnection) -> None:
        lim = self.limits
        address = _address(ws)  # counted by the gate since its handshake was admitted
        queue = Outbox(lim.outgoing_queue)
        budget = lim.outgoing_bytes or sys.maxsize  # 0: no limit
        # What the kernel holds is read (a system call) at every send when it may be a good
        # part of the budget; under a cap of at most a quarter of it (the kernel doubles the
        # cap), only once asyncio buffers, which it does when the kernel's buffer is full.
        kernel_always = not lim.send_buffer or 8 * lim.send_buffer > budget
        assert isinstance(ws, CorkedConnection)  # start() has websockets make every one so
        self.connections.add(ws)

        def send(message: dict[str, Any], direct: bool = True) -> None:
            if session.closed:
                return
            buffered = ws.transport.get_write_buffer_size()
            unread = queue.bytes + buffered + ws.corked
            if buffered or kernel_always:
                unread += unsent(ws.transport)
            # Taken while under the budget, whatever its size (a page of a reply); past it,
            # the peer is not reading.
            if unread >= budget:
                self._drop(ws, session, queue, f"{unread} bytes unread, limit {budget}",
                           "too much unread data", "bytes")
                return
            frame = encode_frame(message)
            if direct and len(frame) <= DIRECT_FRAME_SIZE and queue.idle \
                    and ws.protocol.state is State.OPEN and ws.send_in_progress is None \
                    and buffered <= DIRECT_WRITE_LIMIT:
                # Straight to the socket at the end of this pass of the loop (what websockets'
                # broadcast does, corked): no task switch and no send lock for the usual case
                # of a client that keeps up.
                self.cork.send(ws, frame)
                return
            try:
                queue.put_nowait(frame)
            except asyncio.QueueFull:
                self._drop(ws, session, queue, f"{lim.outgoing_queue} messages unread",
                           "too many unread messages", "messages")

        def close(code: int, reason: str) -> None:
            """Close after the messages already queued (such as the reason) are sent."""
            if session.closed:
                return
            session.closed = True
            try:
                queue.put_nowait((code, reason))
            except asyncio.QueueFull:
                self._close_later(ws, code, reason)

        session = Session(send=send, close=close, address=address,
                          queue=lambda message: send(message, direct=False))
        self.sessions[ws] = session
        peer = self._peers[ws] = Peer(ws, session, queue)
        writer = asyncio.create_task(self._drain(ws, queue))
        bucket = TokenBucket(lim.messages_per_second, lim.burst)
        strikes = 0
        self.lobby.connect(session)
        if self.draining:  # its handshake was under way when the drain began
            send(notice())
            close(GOING_AWAY, REASON)
        try:
            while not session.closed:
                if peer.finishing and not unread(ws):  # answered all it sent before the notice
                    close(GOING_AWAY, REASON)
                    break
                peer.reading = True
                frame = await ws.recv()
                peer.reading = False
                if session.closed:
                    break
                session.last_seen = time.monotonic()
                if self.limits is not lim:  # reloaded (SIGHUP): its allowances from now on
                    lim = self.limits
                    bucket.rate, bucket.capacity = lim.messages_per_second, lim.burst
                # the limit is in bytes; a character takes 1 to 4 of them in UTF-8
                if len(frame) > lim.max_message or (
                        isinstance(frame, str) and 4 * len(frame) > lim.max_message
                        and len(frame.encode()) > lim.max_message):
                    send(error("too_large", f"Messages are limited to {lim.max_message} bytes."))
                    close(1009, "message too large")
                    break
                if not bucket.take():
                    strikes += 1
                    self.lobby.metrics.messages_refused()
                    if strikes > lim.strikes:
                        send(error("rate_limited", "Too many messages; closing the connection."))
                        close(1008, "too many messages")
                        break
                    send(error("rate_limited", f"Too many messages: at most "
                                               f"{lim.messages_per_second:g} a second.",
                               frame_id(frame) if isinstance(frame, str) else None))
                    continue
                strikes = 0
                if isinstance(frame, bytes):
                    if isinstance(frame, NotUtf8):
                        send(error("bad_request", "A text frame must be UTF-8; this one is not "
                                                  f"(byte {frame.position})."))
                    else:
                        send(error("bad_request", "Binary frames are not understood; send text."))
                    continue
                # a peer that has closed, or whose connection is lost, reads no reply
                pause = await self.router.answer(session, frame, ws.protocol.state is State.OPEN)
                self.cork.flush()  # the reply and its pushes leave now, together
                if pause:  # its address reads too much: its next frames wait, unread
                    await _paused(ws, min(pause, MAX_PAUSE))
            await self._read_out(ws)
        except ConnectionClosed:
            if not session.closed:  # the peer went away: nothing queued can reach it any more
                writer.cancel()
        finally:
            self.lobby.disconnect(session)
            self.connections.discard(ws)
            self.sessions.pop(ws, None)
            self._peers.pop(ws, None)
            await self._stop_writer(queue, writer)
            if queue.bytes or queue.dropped:  # what it did not read goes back to the system
                trim_soon()
            # Nothing of this connection outlives it: the closures above and the session refer
            # to each other, a cycle only a full collection would free (with what is queued).
            queue.clear()
            session.send, session.close, session.queue = _gone, _gone, None

    async def _read_out(self, ws: ServerConnection) -> None:
        """We are closing: drop what the peer sent before it saw our close frame.

        Its answer to the close comes after those frames; left unread, they would hold the
        connection (and what it sent) open until websockets' close timeout.
        """
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CLOSING_GRACE):
                while True:
                    await ws.recv()

    async def _drain(self, ws: ServerConnection, queue: Outbox) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, tuple):
                    await ws.close(*item)
                    return
                if isinstance(item, asyncio.Future):
                    if not item.done():
                        item.set_result(None)
                    continue
                queue.sending = True
                try:
                    await ws.send(item, text=True)
                finally:
                    queue.sending = False

    async def _stop_writer(self, queue: Outbox, writer: asyncio.Task[None]) -> None:
        """Let the writer flush what we queued (an error, a close) for a moment, then stop it."""
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(None)
        try:
            await asyncio.wait_for(writer, 2)
        except (TimeoutError, asyncio.CancelledError):
            writer.cancel()
        except ConnectionClosed:
            pass

    def reconfigure(self, limits: Limits) -> None:
        """New limits (a reload): open connections take them at their next frame, new ones at
        once; the origins allowed are checked anew. What websockets was given at start
        (``ping_*``, ``send_buffer``, the hard cap on a frame's size) and
        ``max_connections`` stay until a restart."""
        old, self.limits = self.limits, limits
        if self.server is None:
            return
        if limits.origins != old.origins:
            self._use_origins(limits.origins)
        if self.gate is not None and limits.connections_per_address != old.connections_per_address:
            self.gate.allow_per_address(limits.connections_per_address)
        if limits.idle_timeout != old.idle_timeout:
            self._watch_idle(limits.idle_timeout)

    async def drain(self, grace: float, hurry: asyncio.Event | None = None) -> None:
        """Stop taking players (``/readyz`` 503, WebSocket handshakes refused with 503) and
        close every connection once it has answered what it sent before it was told
        ``server_shutdown``, within ``grace`` seconds (:mod:`server.net.drain`); the listener
        stays open for the probes until :meth:`close`."""
        self.draining = True
        self.health.state = DRAINING
        await drain(list(self._peers.values()), grace, hurry)

    async def close(self) -> None:
        """Stop accepting, tell every client we are going away, and wait for them."""
        if self.server is None:
            return
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self.gate is not None:
            self.gate.close()
        self.server.close(close_connections=True)
        await self.server.wait_closed()


async def _close(ws: ServerConnection, code: int, reason: str) -> None:
    """``ws.close``, and the TCP connection cut if the closing handshake is not done within
    :data:`UNREAD_GRACE`: websockets first waits for its write buffer to drain, which a peer
    that does not read never lets happen."""
    try:
        async with asyncio.timeout(UNREAD_GRACE):
            await ws.close(code, reason)
    except TimeoutError:
        reset_on_close(ws.transport)  # as the connection's end would, but in time with TLS too
        ws.transport.abort()

async def _paused(ws: ServerConnection, seconds: float) -> None:
    """Wait ``seconds``, or until the connection closes."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await ws.wait_closed()


def _gone(*args: Any, **kwargs: Any) -> None:
    """What a finished connection's session does when told to send or close: nothing."""

def _address(connection: ServerConnection) -> str:
    remote = connection.remote_address
    return str(remote[0]) if remote else "?"
