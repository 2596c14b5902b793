"""Running the server: open storage, start the lobby and the transport, stop cleanly."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from dataclasses import dataclass

from server.config import Config
from server.lobby import Lobby
from server.storage import Database
from server.transport import Transport

log = logging.getLogger("matchlobby")


@dataclass
class RunningServer:
    config: Config
    db: Database
    lobby: Lobby
    transport: Transport

    @property
    def port(self) -> int:
        return self.transport.port

    async def stop(self) -> None:
        """Close connections, then let the writer finish every queued job and close the file."""
        await self.transport.close()
        await self.db.close()


async def start_server(config: Config, host: str | None = None, port: int | None = None
                       ) -> RunningServer:
    db = Database(config.database, batch_max=config.commit_batch)
    await db.open()
    lobby = Lobby(config, db)
    await lobby.start()
    transport = Transport(lobby, config.limits, config.tls, config.compression)
    await transport.start(host or config.host, config.port if port is None else port)
    return RunningServer(config, db, lobby, transport)


def tune_gc() -> None:
    """Keep the collector off what start-up loaded (players, books, ČAS history).

    Without this, every full collection walks those objects again (about 100 ms
    with a modest database, every 20-40 s under load): the tail of command
    latency. Objects made later are collected as usual, in larger young batches.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)


async def serve_forever(config: Config, host: str | None = None, port: int | None = None) -> None:
    server = await start_server(config, host, port)
    tune_gc()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    scheme = "wss" if config.tls.enabled else "ws"
    print(f"matchlobby listening on {scheme}://{host or config.host}:{server.port}/ws "
          f"(database {config.database}; {len(config.ladders)} ladders)", flush=True)
    await stop.wait()
    log.info("stopping")
    await server.stop()
    print("matchlobby stopped; everything is saved.", flush=True)
