"""Looking at a running server from outside: a small client that times its replies, a
bystander asking in the background, a socket that stops reading, and waiting for a condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from testkit.constants import ADMIN, LIVENESS


async def wait_until(check: Callable[[], bool | Awaitable[bool]], timeout: float = 10.0,
                     what: str = "the condition", every: float = 0.01) -> None:
    """Poll ``check`` until it holds; fail, naming ``what``, if it does not within ``timeout``
    (a liveness bound: only a stuck server misses it)."""
    deadline = time.monotonic() + timeout
    while True:
        held = check()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(every)


class Prober:
    """A well-behaved client: it reads everything at once (a task of its own), and times
    each of its requests from sending to the reply."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.times: list[float] = []
        self.pushes: list[dict[str, Any]] = []
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._n = 0
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> Prober:
        ws = await connect(url, max_size=None, open_timeout=10, **kwargs)
        hello = json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))
        assert hello["event"] == "hello", hello
        return cls(ws)

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                msg = json.loads(frame)
                if "event" in msg:
                    self.pushes.append(msg)
                elif (fut := self._waiting.pop(msg.get("id"), None)) is not None:
                    fut.set_result(msg)
        except ConnectionClosed:
            pass
        for fut in self._waiting.values():  # closed: nothing will answer them
            fut.set_exception(ConnectionError(f"closed: {self.ws.close_code} {self.ws.close_reason}"))
        self._waiting.clear()

    async def request(self, cmd: str, timeout: float = LIVENESS, **args: Any) -> dict[str, Any]:
        """Send one command; its reply within ``timeout`` seconds."""
        if self._reader.done():
            raise ConnectionError(f"closed: {self.ws.close_code} {self.ws.close_reason}")
        self._n += 1
        rid = f"probe-{self._n}"
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        started = time.monotonic()
        await self.ws.send(json.dumps({"id": rid, "cmd": cmd, "args": args}))
        try:
            reply = await asyncio.wait_for(fut, timeout)
        except TimeoutError:
            raise AssertionError(f"no reply to {cmd!r} within {timeout} s") from None
        self.times.append(time.monotonic() - started)
        return reply

    async def call(self, cmd: str, **args: Any) -> Any:
        reply = await self.request(cmd, **args)
        assert reply["ok"] is True, reply
        return reply["data"]

    async def keep_asking(self, stop: asyncio.Event, cmd: str, pause: float, **args: Any) -> None:
        """Ask ``cmd`` again and again until ``stop``; every reply must be a good one, in time.
        The pause between two requests paces the load; nothing waits on it."""
        while not stop.is_set():
            reply = await self.request(cmd, **args)
            assert reply["ok"] is True, reply
            await asyncio.sleep(pause)

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


@contextlib.asynccontextmanager
async def bystander(url: str, cmd: str = "whois", pause: float = 0.1, **kwargs: Any
                    ) -> AsyncIterator[Prober]:
    """A prober asking ``cmd`` (``whois root`` by default) in the background for the block.

    ``kwargs`` go to ``connect`` (``local_addr``, say). On exit the loop is stopped and its
    failure, if any (a refusal, a reply later than :data:`LIVENESS`), is raised here.
    """
    prober = await Prober.open(url, **kwargs)
    stop = asyncio.Event()
    args = {"name": ADMIN} if cmd == "whois" else {}
    task = asyncio.create_task(prober.keep_asking(stop, cmd, pause, **args))
    try:
        yield prober
    finally:
        stop.set()
        try:
            await asyncio.wait_for(task, 10)
        finally:
            await prober.close()


def slow_socket(port: int) -> socket.socket:
    """A TCP connection with a tiny receive buffer, so that not reading soon stops the sender."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    return sock
