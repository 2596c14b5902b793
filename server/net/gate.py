"""How many connections the server holds: in all, and per client (an IPv6 client per /64).

Two places refuse, both before any work is spent on the connection:

- at the opening handshake (:meth:`Gate.admit`): past ``connections_per_address`` for the
  client, HTTP 429; past ``max_connections`` in all, HTTP 503 with ``Retry-After``;
- when the socket is accepted (:class:`GatedConnection`): past either limit plus its
  handshake room (:func:`~server.net.descriptors.handshake_room`, for sockets still in
  their handshake), the socket is closed at once, before a byte is read. This is what
  keeps the server's descriptors below the open-file limit, whatever arrives.

Refusals are logged once, then as one count a minute while they go on.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import cast

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Response

from server.limits import client_key
from server.net.connection import CorkedConnection
from server.net.descriptors import handshake_room

log = logging.getLogger(__name__)

RETRY_AFTER = 10
"""Seconds a client refused for a full server is told to wait (``Retry-After``)."""
REPORT_INTERVAL = 60.0
"""Seconds between the log lines counting refusals while they go on."""


class Gate:
    """Counts the sockets and admitted connections, in all and per client key."""

    def __init__(self, max_connections: int, per_address: int) -> None:
        self.max_connections = max_connections
        self.max_sockets = max_connections + handshake_room(max_connections)
        self.allow_per_address(per_address)
        self.sockets: Counter[str] = Counter()
        self.admitted: Counter[str] = Counter()
        self.open_sockets = 0
        self.open_connections = 0
        self.refused: Counter[str] = Counter()  # since the last log line, by reason
        self._report: asyncio.TimerHandle | None = None

    def allow_per_address(self, per_address: int) -> None:
        """Connections one client key may hold (at start, and after a reload), and the
        sockets in their handshake beside them."""
        self.per_address = per_address
        self.max_sockets_per_address = per_address + handshake_room(per_address)

    def accept(self, address: str) -> str | None:
        """A socket from ``address`` was accepted: its client key, counted; ``None`` when it
        must be closed at once."""
        key = client_key(address)
        if self.open_sockets >= self.max_sockets:
            self._refuse("the server is full")
            return None
        if self.sockets[key] >= self.max_sockets_per_address:
            self._refuse("too many from one address")
            return None
        self.open_sockets += 1
        self.sockets[key] += 1
        return key

    def take(self, key: str) -> int | None:
        """A WebSocket handshake from ``key``: ``None`` when admitted (and counted), else the
        HTTP status refusing it."""
        if self.admitted[key] >= self.per_address:
            return 429
        if self.open_connections >= self.max_connections:
            self._refuse("the server is full")
            return 503
        self.admitted[key] += 1
        self.open_connections += 1
        return None

    def release(self, key: str, admitted: bool) -> None:
        """A counted socket was closed."""
        self.open_sockets -= 1
        _decrement(self.sockets, key)
        if admitted:
            self.open_connections -= 1
            _decrement(self.admitted, key)

    def admit(self, connection: ServerConnection) -> Response | None:
        """``process_request``'s last check: ``None`` to go on with the handshake."""
        assert isinstance(connection, GatedConnection)
        status = self.take(connection.key)
        if status is None:
            connection.admitted = True
            return None
        if status == 429:
            return connection.respond(429, "Too many connections from your address.\n")
        response = connection.respond(503, "The server is full; try again in a moment.\n")
        response.headers["Retry-After"] = str(RETRY_AFTER)
        return response

    def connection_class(self) -> type[CorkedConnection]:
        """The connection websockets makes for each accepted socket, counted by this gate."""
        gate = self

        class Counted(GatedConnection):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                peer = transport.get_extra_info("peername")
                key = gate.accept(str(peer[0]) if peer else "?")
                if key is None:
                    self.key = ""
                    # before websockets sees it: no task, no handshake (uvloop's transport
                    # has abort() without being an asyncio.Transport)
                    cast(asyncio.Transport, transport).abort()
                    return
                self.key = key
                super().connection_made(transport)

            def connection_lost(self, exc: Exception | None) -> None:
                if not self.key:
                    return
                gate.release(self.key, self.admitted)
                super().connection_lost(exc)

        return Counted

    def _refuse(self, reason: str) -> None:
        """Count a refusal; the first of a run is logged at once, the rest once a minute."""
        self.refused[reason] += 1
        if self._report is not None:
            return
        if sum(self.refused.values()) == 1:
            log.warning("refusing connections (%s): %d connections, %d sockets open; limits "
                        "max_connections = %d, connections_per_address = %d",
                        reason, self.open_connections, self.open_sockets,
                        self.max_connections, self.per_address)
            self.refused.clear()
        self._report = asyncio.get_running_loop().call_later(REPORT_INTERVAL, self._log_count)

    def _log_count(self) -> None:
        self._report = None
        if not self.refused:
            return  # a quiet minute: the next refusal is logged at once again
        log.warning("refused %s in the last %.0f s; %d connections, %d sockets open",
                    ", ".join(f"{n} ({reason})" for reason, n in self.refused.items()),
                    REPORT_INTERVAL, self.open_connections, self.open_sockets)
        self.refused.clear()
        self._report = asyncio.get_running_loop().call_later(REPORT_INTERVAL, self._log_count)

    def close(self) -> None:
        if self._report is not None:
            self._report.cancel()
            self._report = None


class GatedConnection(CorkedConnection):
    """A connection counted by a :class:`Gate` (see :meth:`Gate.connection_class`)."""

    key = ""
    """The client key it is counted under; empty for a socket closed when accepted."""
    admitted = False
    """Whether its handshake was admitted (and counted) by :meth:`Gate.admit`."""


def _decrement(counter: Counter[str], key: str) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]
