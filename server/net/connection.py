"""The websockets connection as the lobby uses it: frames corked into one write, text that is
not UTF-8 handed over to be answered rather than closing the connection."""

from __future__ import annotations

import asyncio
import logging
from typing import TypeVar, cast

from websockets.asyncio.messages import Assembler
from websockets.asyncio.server import ServerConnection
from websockets.protocol import Protocol, State
from websockets.typing import Data

from server.net.sockets import cap_send_buffer, reset_on_close, unsent

log = logging.getLogger(__name__)
C = TypeVar("C", bound="CorkedConnection")


class CorkedConnection(ServerConnection):
    """A connection whose pending frames leave in one write (one ``send`` system call).

    websockets writes each frame it has buffered with its own
    ``transport.write``; a reply and the pushes that go with it (``resign``:
    the reply, ``match_finished``, the rating changes) would each cost a
    system call on the server and a wake-up on the client.
    """

    corked = 0
    """Bytes framed by :meth:`Cork.send` and not yet handed to the transport."""
    send_buffer = 0
    """The cap on the socket's send buffer, in bytes (0: the kernel's own): :func:`capped`."""

    def connection_lost(self, exc: Exception | None) -> None:
        # Called before the socket is closed. A peer that ends without answering our close
        # (cut off for not reading, or for not answering a ping or the closing handshake in
        # time) and has not taken what we sent would have the kernel keep it, for as long as
        # the peer keeps its window shut: a reset drops it at once.
        if self.protocol.close_rcvd is None and unsent(self.transport):
            reset_on_close(self.transport)
        super().connection_lost(exc)
        # websockets keeps the exceptions that ended the connection, and their tracebacks hold
        # the frames that were running: this connection, the frame it was writing. A cycle
        # only a full collection would free; without the tracebacks it goes at once.
        for ended in (self.connection_exc, self.protocol.parser_exc, exc):
            for _ in range(8):  # the chain of causes, in practice one or two long
                if ended is None:
                    break
                ended.__traceback__ = None
                ended = ended.__cause__ or ended.__context__

    def send_data(self) -> None:
        self.corked = 0
        writes = self.protocol.writes
        if len(writes) > 1 and all(writes):  # an empty item stands for end of stream
            self.protocol.writes = [b"".join(writes)]
        super().send_data()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        cap_send_buffer(transport, self.send_buffer)
        super().connection_made(transport)
        # The assembler websockets made, with its own arguments (they differ between versions),
        # as the subclass that answers text that is not UTF-8 instead of closing.
        self.recv_messages.__class__ = TolerantAssembler


def capped(base: type[C], send_buffer: int) -> type[C]:
    """``base`` with each socket's send buffer capped at ``send_buffer`` bytes
    (``limits.send_buffer``; 0: the kernel's default)."""
    return cast("type[C]", type(base.__name__, (base,), {"send_buffer": send_buffer}))


class NotUtf8(bytes):
    """The payload of a text frame that is not UTF-8, handed to the handler to be answered.

    websockets would close the connection with 1007; the lobby answers ``bad_request``
    instead, as it does every other bad frame.
    """

    position: int  # of the first byte that is not UTF-8


class TolerantAssembler(Assembler):
    """websockets' message assembler, returning :class:`NotUtf8` where it would raise.

    The message is already taken off the queue when its decoding fails, so the next
    ``recv`` reads the next message as usual.
    """

    async def get(self, decode: bool | None = None) -> Data:  # type: ignore[override]
        try:
            return await super().get(decode)
        except UnicodeDecodeError as e:
            payload = NotUtf8(e.object)
            payload.position = e.start
            return payload


def text_frame(payload: bytes) -> bytes:
    """A whole, unmasked text frame of ``payload`` (a server's, with no extension), as
    websockets' ``Frame.serialize`` writes it, for a fraction of its cost."""
    n = len(payload)
    if n < 126:
        return bytes((0x81, n)) + payload
    if n < 65536:
        return b"\x81\x7e" + n.to_bytes(2, "big") + payload
    return b"\x81\x7f" + n.to_bytes(8, "big") + payload


def send_text(protocol: Protocol, payload: bytes) -> None:
    """``protocol.send_text(payload)``: framed here when nothing else is asked of the frame
    (no extension such as compression, no debug log of frames, no fragmented message under
    way), else by websockets."""
    if (protocol.state is State.OPEN and not protocol.extensions and not protocol.debug
            and not protocol.expect_continuation_frame):
        protocol.writes.append(text_frame(payload))
    else:
        protocol.send_text(payload)


class Cork:
    """Frames sent directly, held until the task sending them is done, then written together.

    :meth:`send` frames the message into the connection's buffer and
    :meth:`flush` writes every such buffer once (:class:`CorkedConnection`).
    The connection's handler flushes when it has answered a frame (the reply
    and the pushes it caused), so nothing waits for other tasks; a callback
    scheduled by the first held frame flushes what was sent anywhere else
    (at the latest at the loop's next pass). The frames leave in the order
    they were sent, as websockets writes its buffer in order whoever flushes
    it (a close, or the connection's queued writer, may flush first).
    """

    def __init__(self) -> None:
        self._pending: dict[CorkedConnection, None] = {}
        self._scheduled = False  # a fallback flush is due (one at a time, however many send)

    def send(self, ws: CorkedConnection, frame: bytes) -> None:
        send_text(ws.protocol, frame)
        ws.corked += len(frame)
        self._pending[ws] = None
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._fallback)

    def _fallback(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        pending, self._pending = self._pending, {}
        for ws in pending:
            try:
                ws.send_data()
            except Exception as e:  # as websockets' broadcast: one connection's failure is its own
                log.warning("could not write to a connection: %s", e)


