"""The metrics' own HTTP listener (``[metrics] address``): ``GET /metrics`` and nothing else.

A tiny HTTP/1.1 server on the event loop, apart from the lobby's port, so the metrics are
never public by accident and a scrape reads the lobby's state on the thread that changes it.
One request a connection; a request that is slow, large or malformed is cut short.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)
PATH = "/metrics"
# What generate_latest writes (the newest type prometheus_client names may be one that older
# Prometheus servers do not know).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
READ_TIMEOUT = 10.0  # seconds a scraper has to send its request
MAX_HEAD = 16 * 1024  # bytes of request line and headers read at most


class MetricsListener:
    """Serves ``exposition()`` at ``http://HOST:PORT/metrics`` until :meth:`close`."""

    def __init__(self, exposition: Callable[[], bytes]) -> None:
        self.exposition = exposition
        self.server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> None:
        self.server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEAD)

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and end the requests being answered."""
        if self.server is None:
            return
        self.server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self.server.wait_closed()
        self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            async with asyncio.timeout(READ_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            status, body, content_type = self._answer(head)
            writer.write(_response(status, body, content_type,
                                   with_body=not head.startswith(b"HEAD ")))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                ConnectionError):
            pass
        except Exception:
            log.exception("answering a metrics request failed")
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, head: bytes) -> tuple[str, bytes, str]:
        parts = head.split(b"\r\n", 1)[0].split()
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            return "400 Bad Request", b"Bad request.\n", "text/plain; charset=utf-8"
        method, target = parts[0], parts[1].split(b"?", 1)[0]
        if target != PATH.encode():
            return "404 Not Found", f"The metrics are at {PATH}.\n".encode(), \
                "text/plain; charset=utf-8"
        if method not in (b"GET", b"HEAD"):
            return "405 Method Not Allowed", b"GET only.\n", "text/plain; charset=utf-8"
        return "200 OK", self.exposition(), CONTENT_TYPE


def _response(status: str, body: bytes, content_type: str, with_body: bool) -> bytes:
    head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n")
    if status.startswith("405"):
        head += "Allow: GET, HEAD\r\n"
    return (head + "\r\n").encode() + (body if with_body else b"")

