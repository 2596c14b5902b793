"""A real server in the test's own event loop, on a real SQLite file, and its clients."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from server.app import RunningServer, start_server
from server.config import Config, Limits, load_config
from testkit.clients import RecordingClient
from testkit.constants import ADMIN, ADMIN_PASSWORD, FAST_HASHING, HELLO, PASSWORD, PLAY_FREELY


class LobbyServer:
    """One test's server: started, stopped and started again on the same port and file, with
    the clients (:class:`RecordingClient`) that talked to it, closed with it by :meth:`aclose`.

    Its configuration is :data:`FAST_HASHING`, ``drop_timeout`` and ``limits`` (by default
    :data:`PLAY_FREELY`: every test registers and logs in its players from one address, and
    many invite the same player again and again), then ``configure`` (more ladders, say) applied at each
    start.
    """

    def __init__(self, db: Path, *, drop_timeout: float = 600.0,
                 limits: Limits | None = None,
                 configure: Callable[[Config], Config] | None = None,
                 admin: tuple[str, str] = (ADMIN, ADMIN_PASSWORD)) -> None:
        self.db = db
        self.drop_timeout = drop_timeout
        self.limits = limits or Limits(**PLAY_FREELY)
        self.configure = configure
        self.admin_name, self.admin_password = admin
        self.server: RunningServer | None = None
        self.port: int | None = None
        self.clients: list[RecordingClient] = []

    def config(self) -> Config:
        config = Config(database=str(self.db), password=FAST_HASHING,
                        drop_timeout=self.drop_timeout, limits=self.limits)
        return config if self.configure is None else self.configure(config)

    async def start(self, drop_timeout: float | None = None) -> RunningServer:
        """Start on the port of the last start (a free one the first time)."""
        assert self.server is None, "already running"
        if drop_timeout is not None:
            self.drop_timeout = drop_timeout
        self.server = await start_server(self.config(), host="127.0.0.1", port=self.port or 0)
        self.port = self.server.port
        return self.server

    async def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop()

    async def restart(self, drop_timeout: float | None = None) -> RunningServer:
        """Stop (dropping every connection) and start again on the same port and file."""
        await self.stop()
        return await self.start(drop_timeout)

    @property
    def url(self) -> str:
        """The WebSocket URL (that of the last start while the server is stopped)."""
        assert self.port is not None
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def http_url(self) -> str:
        """The web page's address."""
        assert self.port is not None
        return f"http://127.0.0.1:{self.port}/"

    async def client(self, reconnect: bool = False,
                     backoff: tuple[float, float] = (0.02, 0.2)) -> RecordingClient:
        """A connected client (no automatic reconnect unless asked)."""
        c = RecordingClient(self.url, reconnect=reconnect, backoff=backoff)
        self.clients.append(c)
        assert await c.connect() == HELLO
        return c

    async def player(self, name: str, password: str = PASSWORD,
                     reconnect: bool = False) -> RecordingClient:
        """A new account ``name``, logged in on its own connection."""
        c = await self.client(reconnect=reconnect)
        data = await c.register(name, password)
        assert {k: data[k] for k in ("player", "role")} == {"player": name, "role": "player"}
        return c

    async def players(self, *names: str) -> list[RecordingClient]:
        return [await self.player(n) for n in names]

    async def login(self, name: str, password: str = PASSWORD) -> RecordingClient:
        """An existing account ``name``, logged in on a new connection."""
        c = await self.client()
        await c.login(name, password)
        return c

    async def admin(self) -> RecordingClient:
        c = await self.client()
        data = await c.login(self.admin_name, self.admin_password)
        assert data["role"] == "admin"
        return c

    async def aclose(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()
        await self.stop()


def with_ladders(config_file: Path) -> Callable[[Config], Config]:
    """A ``configure`` for :class:`LobbyServer`: the ladders of ``config_file``."""
    ladders = load_config(config_file).ladders
    return lambda config: replace(config, ladders=ladders)
