"""The server's HTTP side, tried as an attacker would: raw requests over a socket.

- **Origin.** A browser's WebSocket handshake is accepted only from the configured origins
  or, by default, the server's own (its address and port; every loopback name for a
  loopback address). A DNS-rebinding page sends a ``Host`` naming its own site, which
  proves nothing: the handshakes here forge both headers.
- **Static files.** Only GET and HEAD (405 with ``Allow`` otherwise); HEAD answers the
  headers alone; no other site may frame the page (``frame-ancestors 'none'``,
  ``X-Frame-Options: DENY``).

Each test also asks the server a question afterwards: what it refused left it serving.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.constants import ADMIN, LIVENESS
from testkit.logs import captured_logs
from testkit.probes import Prober
from testkit.server_thread import ServerThread

from server.config import Limits
from server.net.origins import OriginPolicy, own_origins
from server.net.static import WEB_ROOT

PAGE = (WEB_ROOT / "index.html").read_bytes()


@pytest.fixture
def server(db_path: Path) -> Iterator[ServerThread]:
    s = ServerThread(db_path).start()
    try:
        yield s
    finally:
        s.stop()


def exchange(port: int, request: bytes, host: str = "127.0.0.1") -> tuple[str, dict[str, str], bytes]:
    """Send ``request`` as is; the status line, the headers and everything after them."""
    with socket.create_connection((host, port), timeout=LIVENESS) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            assert chunk, f"closed before a response: {data!r}"
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        status, *lines = head.decode("iso-8859-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        if status.split()[1] == "101":
            return status, headers, rest  # a WebSocket now: nothing more comes unasked
        while chunk := sock.recv(65536):  # the server closes after any other response
            rest += chunk
    return status, headers, rest


def handshake(port: int, host_header: str, origin: str | None) -> int:
    """A browser's WebSocket handshake to /ws with the given ``Host`` and ``Origin``: the status."""
    lines = ["GET /ws HTTP/1.1", f"Host: {host_header}", "Upgrade: websocket",
             "Connection: Upgrade", f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
             "Sec-WebSocket-Version: 13"]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    status, _, _ = exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode())
    return int(status.split()[1])


async def still_serving(server: ServerThread) -> None:
    prober = await Prober.open(server.url)
    try:
        assert (await prober.call("whois", name=ADMIN))["player"] == ADMIN
    finally:
        await prober.close()


# ---- Origin ---------------------------------------------------------------------------------


async def test_a_dns_rebinding_page_is_refused_whatever_its_host_header(server: ServerThread) -> None:
    port = server.port
    evil = f"evil.example:{port}"
    # The rebinding page: its origin and the Host its browser sends agree, and name the attacker.
    assert handshake(port, evil, f"http://{evil}") == 403
    for origin in (f"http://evil.example:{port}", "http://evil.example", f"https://127.0.0.1:{port}",
                   f"http://127.0.0.1:{port + 1}", f"http://127.0.0.2:{port}", "null",
                   f"http://127.0.0.1:{port}.evil.example", f"http://127.0.0.1.evil.example:{port}"):
        for host in (evil, f"127.0.0.1:{port}"):
            assert handshake(port, host, origin) == 403, (host, origin)
    # The server's own page, under every loopback name, whatever the Host says.
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}",
                   f"HTTP://LocalHost:{port}"):
        for host in (evil, f"127.0.0.1:{port}"):
            assert handshake(port, host, origin) == 101, (host, origin)
    # A client that sends no Origin is no browser: not concerned.
    assert handshake(port, evil, None) == 101
    await still_serving(server)


@pytest.mark.parametrize(("configured", "allowed", "refused"), [
    (("https://lobby.example.org",), ["https://lobby.example.org", "https://LOBBY.example.org"],
     ["http://lobby.example.org", "http://127.0.0.1:{port}", "https://evil.example"]),
    (("https://lobby.example.org/", "http://localhost:8000"),
     ["https://lobby.example.org", "http://localhost:8000"], ["http://localhost:{port}"]),
    (("*",), ["https://evil.example", "null", "http://127.0.0.1:{port}"], []),
])
async def test_configured_origins_replace_the_default(db_path: Path, configured: tuple[str, ...],
                                                       allowed: list[str], refused: list[str]) -> None:
    server = ServerThread(db_path, Limits(origins=configured)).start()
    try:
        port = server.port
        for origin in allowed:
            assert handshake(port, "evil.example", origin.format(port=port)) == 101, origin
        for origin in refused:
            assert handshake(port, f"127.0.0.1:{port}", origin.format(port=port)) == 403, origin
        await still_serving(server)
    finally:
        await server.astop()


async def test_a_configured_entry_that_is_no_origin_is_reported(db_path: Path) -> None:
    """``lobby.example.org`` (no scheme) or a path never matches what a browser sends."""
    limits = Limits(origins=("lobby.example.org", "https://lobby.example.org/lobby",
                             "https://ok.example.org"))
    with captured_logs(logging.INFO) as logs:
        server = ServerThread(db_path, limits).start()
    try:
        warned = [r.getMessage() for r in logs.server_records() if r.levelno == logging.WARNING]
        assert len(warned) == 2, warned
        assert "'lobby.example.org'" in warned[1] and "'https://lobby.example.org/lobby'" in warned[0]
        assert handshake(server.port, "lobby.example.org", "http://lobby.example.org") == 403
        assert handshake(server.port, "ok.example.org", "https://ok.example.org") == 101
    finally:
        await server.astop()


async def test_listening_on_every_address_allows_only_this_machine_and_says_so(db_path: Path) -> None:
    """0.0.0.0: the server cannot know the names it is reached by; a browser elsewhere is
    refused until ``limits.origins`` lists the page's address, and the log says so at start."""
    server = ServerThread(db_path)
    server.config = dataclasses.replace(server.config, host="0.0.0.0")
    with captured_logs(logging.INFO) as logs:
        server.start()
    try:
        port = server.port
        warnings = [r.getMessage() for r in logs.server_records()
                    if r.levelno == logging.WARNING and "limits.origins" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in logs.server_records()]
        assert "every address" in warnings[0] and f"http://127.0.0.1:{port}" in warnings[0]
        assert handshake(port, f"192.0.2.7:{port}", f"http://127.0.0.1:{port}") == 101
        assert handshake(port, f"localhost:{port}", f"http://localhost:{port}") == 101
        for origin in (f"http://192.0.2.7:{port}", f"http://lobby.example.org:{port}",
                       f"http://0.0.0.0:{port}"):
            assert handshake(port, origin.removeprefix("http://"), origin) == 403, origin
        await still_serving(server)
    finally:
        await server.astop()


def test_the_default_origins_of_other_addresses() -> None:
    """What a server listening on a given address allows when ``limits.origins`` is empty."""
    assert own_origins("lobby.example.org", [8765], tls=False) == {"http://lobby.example.org:8765"}
    assert own_origins("Lobby.Example.org", [443], tls=True) == {
        "https://lobby.example.org:443", "https://lobby.example.org"}
    assert own_origins("192.0.2.7", [80], tls=False) == {"http://192.0.2.7:80", "http://192.0.2.7"}
    assert own_origins("2001:db8::7", [8765], tls=False) == {"http://[2001:db8::7]:8765"}
    loopback = {"http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"}
    assert own_origins("::1", [8765], tls=False) == loopback
    assert own_origins("localhost", [8765], tls=False) == loopback
    assert own_origins("127.0.0.5", [8765], tls=False) == loopback | {"http://127.0.0.5:8765"}
    assert own_origins("::", [8765], tls=False) == loopback
    policy = OriginPolicy((), "lobby.example.org", [8765], tls=True)
    assert policy.allows("https://lobby.example.org:8765")
    assert not policy.allows("http://lobby.example.org:8765")
    assert not policy.allows("https://lobby.example.org.evil.example:8765")


# ---- static files -----------------------------------------------------------------------


async def test_the_page_cannot_be_framed_and_head_answers_headers_only(server: ServerThread) -> None:
    status, headers, body = exchange(server.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.split()[1] == "200" and body == PAGE
    csp = [d.strip() for d in headers["content-security-policy"].split(";")]
    assert "frame-ancestors 'none'" in csp
    assert headers["x-frame-options"] == "DENY"
    assert int(headers["content-length"]) == len(PAGE)
    status, head_headers, body = exchange(server.port, b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.split()[1] == "200"
    assert body == b"", "HEAD is answered without a body"
    assert int(head_headers["content-length"]) == len(PAGE)
    assert {k: v for k, v in head_headers.items() if k != "date"} == \
        {k: v for k, v in headers.items() if k != "date"}
    status, _, body = exchange(server.port, b"HEAD /no-such-file HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status.split()[1] == "404" and body == b""
    await still_serving(server)


@pytest.mark.parametrize("method", ["POST", "PUT", "TRACE", "DELETE", "PATCH", "OPTIONS", "CONNECT",
                                    "PROPFIND", "get"])
@pytest.mark.parametrize("path", ["/", "/index.html", "/js/app.js", "/no-such-file"])
async def test_only_get_and_head_reach_the_static_files(server: ServerThread, method: str,
                                                        path: str) -> None:
    for extra in ("", "Content-Length: 0\r\n"):
        status, headers, body = exchange(
            server.port, f"{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode())
        assert status.split()[1] == "405", (method, path, status)
        assert headers["allow"] == "GET, HEAD"
        assert PAGE not in body and b"<html" not in body
    await still_serving(server)


async def test_a_request_with_a_body_is_dropped_and_harms_nothing(server: ServerThread) -> None:
    """websockets' parser takes no request body: the connection ends without a response."""
    for request in (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
                    b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                    b"5\r\nhello\r\n0\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", server.port), timeout=LIVENESS) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert PAGE not in answer and not answer.startswith(b"HTTP/1.1 200"), answer[:100]
    await still_serving(server)


async def test_the_websocket_endpoint_takes_only_get(server: ServerThread) -> None:
    for method in ("POST", "HEAD", "PUT"):
        status, headers, body = exchange(server.port, f"{method} /ws HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        assert status.split()[1] == "405", (method, status)
        assert headers["allow"] == "GET"
        assert (body == b"") == (method == "HEAD")
    await still_serving(server)
