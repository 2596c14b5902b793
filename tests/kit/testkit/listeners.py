"""Anonymous connections that listed ``who``, in a process of their own (as the web page does).

Run as ``python -m testkit.listeners URL COUNT``: it connects COUNT listeners, each sends
``who``, prints ``ready``, then records every presence push each one gets, with the moment it
came (``time.monotonic()``: the same clock as the test's on Linux), until a line arrives on its
standard input; then it prints them as one JSON list (one list of ``[moment, push]`` a
listener) and exits. Apart from the test's process, reading them costs the test nothing: what
a bystander measures is the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

PRESENCE = {"presence", "player_online", "player_offline", "player_status"}
"""The presence pushes, today's and those of servers before it."""


async def listen(ws: ClientConnection, got: list[tuple[float, Any]]) -> None:
    with contextlib.suppress(ConnectionClosed):
        async for frame in ws:
            msg = json.loads(frame)
            if msg.get("event") in PRESENCE:
                got.append((time.monotonic(), msg))


async def main(url: str, count: int) -> None:
    sockets: list[ClientConnection] = []
    records: list[list[tuple[float, Any]]] = []
    for _ in range(count):
        ws = await connect(url, max_size=None, open_timeout=30)
        assert json.loads(await ws.recv())["event"] == "hello"
        await ws.send(json.dumps({"id": 1, "cmd": "who", "args": {}}))
        while "event" in (reply := json.loads(await ws.recv())):
            pass
        assert reply["ok"], reply
        sockets.append(ws)
        records.append([])
    readers = [asyncio.create_task(listen(ws, got)) for ws, got in zip(sockets, records, strict=True)]
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    for ws in sockets:
        await ws.close()
    for task in readers:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    print(json.dumps(records), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
