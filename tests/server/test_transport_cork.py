"""Corked writes (server/net/connection.py): the frames sent to a connection until the next flush (the
handler's, after a request, or at the loop's next pass) leave in one write, in the order they were
sent, whoever flushes them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from server.net.connection import Cork, CorkedConnection

pytestmark = pytest.mark.both_loops  # the server's sockets: on uvloop and asyncio's own loop

writes: list[bytes] = []


class CountedWrites:
    """A transport that records what reaches its socket, then writes it (uvloop's transport
    cannot have its ``write`` replaced: this stands in front of it)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def write(self, data: Any) -> None:
        writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class CountedConnection(CorkedConnection):
    """Records what reaches the socket (the real transport underneath still sends it)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.transport = CountedWrites(self.transport)  # type: ignore[assignment]


async def test_a_pass_of_frames_leaves_in_one_write_and_in_order() -> None:
    cork = Cork()
    flushed: list[int] = []
    counted: list[tuple[int, int]] = []  # the bytes held corked, before and after a flush

    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            writes.clear()
            if message == "count":  # the bytes held corked count in the connection's budget
                assert isinstance(ws, CorkedConnection)
                cork.send(ws, b"frame")
                cork.send(ws, b"frames")
                before = ws.corked
                cork.flush()
                counted.append((before, ws.corked))
            elif message == "flush":
                cork.send(ws, b"one")
                cork.send(ws, b"two")
                cork.flush()  # written now, before the handler waits again
                flushed.append(len(writes))
                cork.send(ws, b"three")  # written by the callback, at the loop's next pass
            elif message == "mixed":
                cork.send(ws, b"first")
                await ws.send("second")  # flushes the corked frame before its own
                cork.send(ws, b"third")
                cork.send(ws, b"fourth")
            else:
                for i in range(int(message)):
                    cork.send(ws, f"frame {i}".encode())

    # compression off, as the lobby's default: the frames' text is then visible in the writes
    async with serve(handler, "127.0.0.1", 0, create_connection=CountedConnection,
                     compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", compression=None) as client:
            await client.send("3")
            assert [await client.recv() for _ in range(3)] == ["frame 0", "frame 1", "frame 2"]
            assert len(writes) == 1 and writes[0].endswith(b"frame 2")

            await client.send("1")
            assert await client.recv() == "frame 0"
            assert len(writes) == 1

            await client.send("mixed")
            assert [await client.recv() for _ in range(4)] == ["first", "second", "third", "fourth"]
            assert len(writes) == 2  # "first" and "second" together, then the rest of the pass
            assert writes[0].endswith(b"second") and b"first" in writes[0]

            await client.send("flush")
            assert [await client.recv() for _ in range(3)] == ["one", "two", "three"]
            assert flushed == [1] and len(writes) == 2 and writes[0].endswith(b"two")

            await client.send("count")
            assert [await client.recv() for _ in range(2)] == ["frame", "frames"]
            assert counted == [(len("frame") + len("frames"), 0)]


async def test_a_connection_gone_before_the_flush_does_not_stop_the_others() -> None:
    cork = Cork()
    connections: list[ServerConnection] = []

    async def handler(ws: ServerConnection) -> None:
        connections.append(ws)
        async for message in ws:
            if message != "go":
                continue
            gone, other = connections
            cork.send(gone, b"lost")
            cork.send(other, b"kept")
            gone.transport.abort()  # before the pass ends and the frames are written

    async with serve(handler, "127.0.0.1", 0, create_connection=CorkedConnection,
                     compression=None) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        url = f"ws://127.0.0.1:{port}"
        async with connect(url, compression=None) as first:
            while len(connections) < 1:
                await asyncio.sleep(0.01)
            async with connect(url, compression=None) as second:
                while len(connections) < 2:
                    await asyncio.sleep(0.01)
                await first.send("go")
                assert await second.recv() == "kept"
                with pytest.raises(ConnectionClosed):
                    await first.recv()


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_a_text_frame_is_the_one_websockets_writes(size: int) -> None:
    """Frames written directly are byte for byte websockets' own (``Frame.serialize`` of a
    server's text frame, no extension), at each boundary of the length's encoding."""
    from websockets.frames import Frame, Opcode

    from server.net.connection import text_frame

    payload = bytes(ord("a") + i % 26 for i in range(size))
    assert text_frame(payload) == Frame(Opcode.TEXT, payload).serialize(mask=False, extensions=[])


@pytest.mark.parametrize("compression", [None, "deflate"])
async def test_corked_frames_of_every_size_reach_a_client_whole(compression: str | None) -> None:
    """Frames corked and framed directly (or by websockets, when compression is negotiated)
    are read back whole and in order by a real client."""
    cork = Cork()
    sizes = [0, 125, 126, 65535, 65536, 200_000]

    async def handler(ws: ServerConnection) -> None:
        assert isinstance(ws, CorkedConnection)
        await ws.recv()
        for size in sizes:
            cork.send(ws, b"x" * size)
        cork.flush()
        await ws.wait_closed()

    async with serve(handler, "127.0.0.1", 0, create_connection=CorkedConnection,
                     compression=compression, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", compression=compression,
                           max_size=None) as client:
            await client.send("go")
            got = [await asyncio.wait_for(client.recv(), 10) for _ in sizes]
    assert [len(m) for m in got] == sizes and all(set(m) <= {"x"} for m in got)
