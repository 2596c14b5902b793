"""Helpers for the hardening suites: a real server in its own thread, a small prober client,
database snapshots and log capture.

The server runs on its own event loop in a thread, so a test (or hypothesis, which
is synchronous) can drive it with ordinary clients while it keeps serving everyone
else, exactly as a separate process would. Kept apart from ``conftest.py`` so the
test modules can import plain functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

from sharedkit import ADMIN, ADMIN_PASSWORD, FAST_HASHING, PASSWORD
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from server.app import RunningServer, start_server
from server.config import Config, Limits, PasswordHashing

T = TypeVar("T")

__all__ = [  # this folder's helpers, and the shared ones (tests/kit/sharedkit.py) its tests use
    "ADMIN", "ADMIN_PASSWORD", "ERROR_CODES", "FAST_HASHING", "LIVENESS", "PASSWORD", "Capture",
    "Prober", "ServerThread", "bystander", "captured_logs", "dump_db", "render", "slow_socket",
]

ERROR_CODES = frozenset({"bad_request", "unknown_command", "not_logged_in", "forbidden", "not_found",
                         "conflict", "rate_limited", "too_large", "internal"})
# A liveness bound, not a performance claim: a reply slower than this means the server
# (or the connection) is stuck, whatever the machine.
LIVENESS = 2.0


class ServerThread:
    """``server.app.start_server`` on port 0, on an event loop of its own."""

    def __init__(self, db: Path, limits: Limits | None = None, drop_timeout: float = 600.0,
                 password: PasswordHashing = FAST_HASHING) -> None:
        self.config = Config(database=str(db), password=password, drop_timeout=drop_timeout,
                             limits=limits or Limits())
        self.db = db
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="matchlobby-server",
                                       daemon=True)
        self.server: RunningServer | None = None

    def start(self) -> ServerThread:
        self.thread.start()
        self.server = self.call(start_server(self.config, port=0))
        return self

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coro`` on the server's loop and wait for it (from a thread without a loop)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def acall(self, coro: Coroutine[Any, Any, T], timeout: float = 30.0) -> T:
        """Run ``coro`` on the server's loop, awaiting it from another event loop."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            self.call(server.stop())
        self._end_loop()

    async def astop(self) -> None:
        """Stop from inside another event loop (which must keep running its clients' closes)."""
        if self.server is not None:
            server, self.server = self.server, None
            await self.acall(server.stop())
        self._end_loop()

    def _end_loop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
        if not self.loop.is_running():
            self.loop.close()

    async def count_sessions(self) -> int:
        async def count() -> int:
            assert self.server is not None
            return len(self.server.lobby.sessions)
        return await self.acall(count())


def dump_db(path: Path) -> str:
    """Every table's rows (and the schema), in a stable text form."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


# ---- log capture --------------------------------------------------------------------------


class Capture(logging.Handler):
    """Every log record emitted while installed, from any thread."""

    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []
        self.error_records: list[logging.LogRecord] = []
        self._lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_:
            self.records.append(record)
            if record.levelno >= logging.ERROR and not _from_client(record):
                self.error_records.append(record)

    def server_records(self) -> list[logging.LogRecord]:
        """Records from the server side (the test's own clients log to ``websockets.client``)."""
        with self._lock_:
            return [r for r in self.records if not _from_client(r)]

    def errors(self) -> list[str]:
        with self._lock_:
            return [render(r) for r in self.error_records]


def _from_client(record: logging.LogRecord) -> bool:
    return record.name.startswith(("websockets.client", "clients"))


def render(record: logging.LogRecord) -> str:
    """A record as a handler would write it, traceback included."""
    text = f"{record.name} {record.levelname}: {record.getMessage()}"
    if record.exc_info:
        text += "\n" + logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        text += "\n" + record.exc_text
    if record.stack_info:
        text += "\n" + record.stack_info
    return text


@contextlib.contextmanager
def captured_logs(level: int = logging.DEBUG) -> Iterator[Capture]:
    """Install a handler on the root logger (and lower the root level to ``level``)."""
    root = logging.getLogger()
    handler = Capture(level)
    old = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


# ---- a small client that measures its replies ---------------------------------------------


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
        """Ask ``cmd`` again and again until ``stop``; every reply must be a good one, in time."""
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
