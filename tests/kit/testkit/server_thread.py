"""A real server on an event loop of its own, in a thread of the test's process.

A test (or hypothesis, which is synchronous) drives it with ordinary clients while it keeps
serving everyone else, exactly as a separate process would; the test can still reach into
it (:meth:`ServerThread.acall`) to look at what it holds.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from server import eventloop
from server.app import RunningServer, start_server
from server.config import Config, Limits, PasswordHashing
from testkit.constants import FAST_HASHING

T = TypeVar("T")


def _test_loop_kind() -> eventloop.Kind | None:
    """The kind of the test's own loop, when it has one (a ``both_loops`` test serves on each
    kind in turn); else None, the loop `matchlobby serve` runs on."""
    try:
        return eventloop.kind_of(asyncio.get_running_loop())
    except RuntimeError:
        return None


class ServerThread:
    """``server.app.start_server`` on port 0, on an event loop of its own."""

    def __init__(self, db: Path, limits: Limits | None = None, drop_timeout: float = 600.0,
                 password: PasswordHashing = FAST_HASHING) -> None:
        self.config = Config(database=str(db), password=password, drop_timeout=drop_timeout,
                             limits=limits or Limits())
        self.db = db
        self.loop = eventloop.new_loop(_test_loop_kind())
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
