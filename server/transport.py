"""The WebSocket transport: accepts connections, limits them, turns frames into lobby calls.

It makes no game or rating decisions. Each connection gets a bounded outgoing
queue drained by its own task, so one slow reader never holds up the fan-out
to everyone else: when its queue is full it is disconnected instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mimetypes
from pathlib import Path
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from server.lobby import Lobby, Session
from server.protocol import encode, error

log = logging.getLogger(__name__)

MAX_MESSAGE = 64 * 1024
HARD_LIMIT_FACTOR = 16
OUTGOING_QUEUE = 1024
WS_PATH = "/ws"
WEB_ROOT = Path(__file__).resolve().parent.parent / "clients" / "web"
Outgoing = str | tuple[int, str] | None


class Transport:
    def __init__(self, lobby: Lobby, max_message: int = MAX_MESSAGE,
                 queue_size: int = OUTGOING_QUEUE) -> None:
        self.lobby = lobby
        self.max_message = max_message
        self.queue_size = queue_size
        self.server: Server | None = None
        self.connections: set[ServerConnection] = set()
        self._closing: set[asyncio.Task[None]] = set()

    def _close_later(self, ws: ServerConnection, code: int, reason: str) -> None:
        task = asyncio.get_running_loop().create_task(ws.close(code, reason))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def start(self, host: str, port: int) -> Server:
        self.server = await serve(
            self.handler, host, port,
            process_request=self.process_request,
            max_size=self.max_message * HARD_LIMIT_FACTOR,
            ping_interval=20, ping_timeout=20,
            server_header="matchlobby",
        )
        return self.server

    @property
    def port(self) -> int:
        assert self.server is not None
        sock = next(iter(self.server.sockets))
        return int(sock.getsockname()[1])

    def process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == WS_PATH:
            return None
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return connection.respond(404, f"The WebSocket endpoint is {WS_PATH}.\n")
        return static_file(connection, path)

    async def handler(self, ws: ServerConnection) -> None:
        queue: asyncio.Queue[Outgoing] = asyncio.Queue(self.queue_size)
        self.connections.add(ws)

        def send(message: dict[str, Any]) -> None:
            if session.closed:
                return
            try:
                queue.put_nowait(encode(message))
            except asyncio.QueueFull:
                log.warning("closing %s: it does not read its messages", session.address)
                session.closed = True
                self._close_later(ws, 1008, "too many unread messages")

        def close(code: int, reason: str) -> None:
            """Close after the messages already queued (such as the reason) are sent."""
            if session.closed:
                return
            session.closed = True
            try:
                queue.put_nowait((code, reason))
            except asyncio.QueueFull:
                self._close_later(ws, code, reason)

        remote = ws.remote_address
        session = Session(send=send, close=close,
                          address=str(remote[0]) if remote else "?")
        writer = asyncio.create_task(self._drain(ws, queue))
        self.lobby.connect(session)
        try:
            async for frame in ws:
                if session.closed:
                    break
                # the limit is in bytes; a character takes 1 to 4 of them in UTF-8
                if len(frame) > self.max_message or (
                        isinstance(frame, str) and 4 * len(frame) > self.max_message
                        and len(frame.encode()) > self.max_message):
                    send(error("too_large", f"Messages are limited to {self.max_message} bytes."))
                    close(1009, "message too large")
                    break
                if isinstance(frame, bytes):
                    send(error("bad_request", "Binary frames are not understood; send text."))
                    continue
                await self.lobby.handle_frame(session, frame)
        except ConnectionClosed:
            pass
        finally:
            self.lobby.disconnect(session)
            self.connections.discard(ws)
            await self._stop_writer(queue, writer)

    async def _drain(self, ws: ServerConnection, queue: asyncio.Queue[Outgoing]) -> None:
        with contextlib.suppress(ConnectionClosed):
            while True:
                item = await queue.get()
                if item is None:
                    return
                if isinstance(item, tuple):
                    await ws.close(*item)
                    return
                await ws.send(item)

    async def _stop_writer(self, queue: asyncio.Queue[Outgoing], writer: asyncio.Task[None]
                           ) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(None)
        try:
            await asyncio.wait_for(writer, 2)
        except (TimeoutError, asyncio.CancelledError):
            writer.cancel()

    async def close(self) -> None:
        """Stop accepting, tell every client we are going away, and wait for them."""
        if self.server is None:
            return
        self.server.close(close_connections=True)
        await self.server.wait_closed()


def static_file(connection: ServerConnection, path: str) -> Response:
    """The web page's files from ``clients/web``; nothing outside it is ever served."""
    relative = "index.html" if path in ("", "/") else path.lstrip("/")
    target = (WEB_ROOT / relative).resolve()
    if not target.is_relative_to(WEB_ROOT) or not target.is_file():
        return connection.respond(404, "Not found.\n")
    body = target.read_bytes()
    ctype = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
    if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
        ctype += "; charset=utf-8"
    headers = Headers([
        ("Content-Type", ctype),
        ("Content-Length", str(len(body))),
        ("Cache-Control", "no-cache"),
        ("X-Content-Type-Options", "nosniff"),
        ("Content-Security-Policy", "default-src 'self'; connect-src 'self' ws: wss:; "
                                    "img-src 'self' data:; style-src 'self' 'unsafe-inline'"),
    ])
    return Response(200, "OK", headers, body)
