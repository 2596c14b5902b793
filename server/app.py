"""Running the server: open storage, start the lobby and the transport, stop cleanly."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import sqlite3
import ssl
import sys
from dataclasses import dataclass

from server import eventloop, reload
from server.config import Config
from server.handlers import HANDLERS
from server.lobby import Lobby, Router
from server.lobby.sharing import SharedPushes
from server.metrics import Metrics
from server.net.descriptors import raise_open_file_limit
from server.net.health import READY, Health
from server.net.metrics_listener import MetricsListener
from server.net.transport import Transport
from server.plugins import load_plugins
from server.store.backends import is_postgres, lobby_database, shown
from server.store.dbcheck import DatabaseProblem, check_database, pg_problem, problem
from server.store.probe import database_probe
from server.store.serve_lock import serving
from server.store.storage import LobbyDatabase

log = logging.getLogger("matchlobby")


@dataclass
class RunningServer:
    config: Config
    db: LobbyDatabase
    lobby: Lobby
    transport: Transport
    metrics_listener: MetricsListener | None = None  # [metrics] address: where they are read

    @property
    def port(self) -> int:
        return self.transport.port

    async def drain(self, hurry: asyncio.Event | None = None) -> None:
        """A graceful stop's first part: every client told to come back and its last
        commands answered, within ``[server] shutdown_grace`` (or until ``hurry`` is set)."""
        await self.transport.drain(self.config.shutdown_grace, hurry)

    async def stop(self) -> None:
        """Close connections, then let the writer finish every queued job and close the file."""
        if self.metrics_listener is not None:
            await self.metrics_listener.close()
        await self.transport.close()
        if self.lobby.sharing is not None:
            await self.lobby.sharing.stop()
        await self.lobby.stop()
        await self.db.close()


async def start_server(config: Config, host: str | None = None, port: int | None = None
                       ) -> RunningServer:
    """Check the database file, open it, load the lobby, listen.

    Raises :class:`~server.store.dbcheck.DatabaseProblem` for a file it cannot use and
    ``OSError`` when it cannot listen; whatever it opened is closed again first
    (an open connection's thread would keep the process alive without serving).
    """
    plugins = load_plugins(config)
    if not is_postgres(config.database):
        await check_database(config.database, quick_check=config.startup_check == "quick")
    node = config.node_name
    db = lobby_database(config.database, config.commit_batch,
                        [plugin.schema for plugin in plugins], node)
    lobby: Lobby | None = None
    try:
        await db.open()
        lobby = Lobby(config, db, plugins, Metrics(node if is_postgres(config.database) else None))
        await lobby.start(other_writers=is_postgres(config.database))
        if is_postgres(config.database):
            lobby.sharing = SharedPushes(lobby, config.database, node)
            lobby.requests.shared = True
            await lobby.sharing.start()
    except BaseException as e:  # what the check cannot see, found while loading
        fault = db.fault
        if lobby is not None:
            if lobby.sharing is not None:
                await lobby.sharing.stop()
            await lobby.stop()
        await db.close()
        if isinstance(e, sqlite3.Error):
            raise problem(config.database, e, "loading it") from None
        if is_postgres(config.database) and not isinstance(e, asyncio.CancelledError):
            pg = pg_problem(config.database, e)
            if pg is not None:
                raise pg from None
        if fault is not None:
            raise DatabaseProblem(f"{config.database}: the database failed while loading it "
                                  f"({fault})") from None
        raise
    transport: Transport | None = None
    try:
        transport = Transport(Router(lobby, HANDLERS), config.limits, config.tls,
                              config.compression,
                              Health(database_probe(config.database, db)))
        await transport.start(host or config.host, config.port if port is None else port)
        listener = await _metrics_listener(config, lobby, transport)
        transport.health.state = READY
    except BaseException:
        if transport is not None:
            await transport.close()
        if lobby.sharing is not None:
            await lobby.sharing.stop()
        await lobby.stop()
        await db.close()
        raise
    return RunningServer(config, db, lobby, transport, listener)


async def _metrics_listener(config: Config, lobby: Lobby, transport: Transport
                            ) -> MetricsListener | None:
    """The metrics' gauges follow the lobby and the transport; served only where
    ``[metrics] address`` says."""
    lobby.metrics.follow(lambda: len(transport.connections), lambda: len(lobby.online),
                         lambda: [m.status for m in lobby.matches.values()])
    if config.metrics.address is None:
        return None
    listener = MetricsListener(lobby.metrics.exposition)
    try:
        await listener.start(*config.metrics.host_port)
    except OSError as e:
        raise OSError(f"metrics address {config.metrics.address}: {e.strerror or e}") from None
    log.info("metrics at http://%s/metrics", config.metrics.address)
    return listener


def tune_gc() -> None:
    """Keep the collector off what start-up loaded (players, books, ČAS history).

    Without this, every full collection walks those objects again (about 100 ms
    with a modest database, every 20-40 s under load): the tail of command
    latency. Objects made later are collected as usual, in larger young batches.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)


class CannotListen(Exception):
    """The server could not listen (the port is taken, the TLS files are unreadable)."""


async def serve_forever(config: Config, host: str | None = None, port: int | None = None) -> int:
    """Serve until SIGINT or SIGTERM; the exit status (1: the database failed while serving).
    Raises ``DatabaseProblem`` when another ``serve`` holds the SQLite file, or this node's
    name on PostgreSQL (:mod:`serve_lock`)."""
    before, after = raise_open_file_limit()
    if after > before:
        log.info("open-file limit raised from %d to %d", before, after)
    async with serving(config.database, config.node_name):
        return await _serve(config, host, port)


async def _serve(config: Config, host: str | None, port: int | None) -> int:
    try:
        server = await start_server(config, host, port)
    except OSError as e:
        reason = " ".join(str(e).split())
        if config.tls.enabled and isinstance(e, FileNotFoundError | IsADirectoryError | ssl.SSLError):
            reason += f" (TLS certificate {config.tls.certificate}, key {config.tls.key})"
        raise CannotListen(reason) from None
    tune_gc()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    log.info("event loop: %s", eventloop.kind_of(loop))
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload.on_hangup, server)
    scheme = "wss" if config.tls.enabled else "ws"
    print(f"matchlobby listening on {scheme}://{host or config.host}:{server.port}/ws "
          f"(database {shown(config.database)}; {len(config.ladders)} ladders)", flush=True)
    await stop.wait()
    log.info("stopping")
    stop.clear()  # a second signal cuts the drain short
    await server.drain(hurry=stop)
    fault = server.db.fault
    await server.stop()
    if fault is not None:
        print(f"matchlobby stopped; the database failed while serving ({fault}) and every "
              "change since was refused. Check and repair the file before starting again.",
              file=sys.stderr, flush=True)
        return 1
    print("matchlobby stopped; everything is saved.", flush=True)
    return 0
