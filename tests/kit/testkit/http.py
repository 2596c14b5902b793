"""Plain HTTP requests to the lobby's port, as a load balancer's health probe makes them."""

from __future__ import annotations

import asyncio

from testkit.probes import wait_until


async def http_get(port: int, path: str, method: str = "GET",
                   headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One request on a connection of its own: the status, the headers (names in lower case)
    and the body. The server closes the connection after answering."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        writer.write(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{extra}\r\n".encode())
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("iso-8859-1").split("\r\n")
    parsed = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status.split()[1]), parsed, body.decode()


async def until_ready(port: int, status: int, timeout: float = 30.0) -> str:
    """Ask ``/readyz`` until it answers ``status``; its body then."""
    seen: list[str] = []

    async def answers() -> bool:
        code, _, body = await http_get(port, "/readyz")
        seen[:] = [body]
        return code == status

    await wait_until(answers, timeout, f"/readyz to answer {status}", every=0.1)
    return seen[0]
