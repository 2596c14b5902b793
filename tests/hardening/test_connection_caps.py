"""Sockets and file descriptors: the connection caps, the open-file limit and the log.

A real ``matchlobby serve`` under a low open-file limit is flooded with connections from
several loopback addresses (any 127.x.y.z is this host): every attempt gets an answer
(101, or a 503 with ``Retry-After``), the server's descriptors stay below its limit, a
new user gets a clear refusal and gets in once there is room, and the log grows by a few
lines. Servers in a thread of the test check the caps one by one (the handshake refusals,
sockets closed as soon as they are accepted, an IPv6 client counted by its /64), and the
counting and the log filter are checked on their own.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import io
import logging
import os
import re
import resource
import socket
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from testkit.cli import admin_template
from testkit.constants import FAST_CONFIG, LIVENESS
from testkit.figures import group
from testkit.logs import captured_logs
from testkit.probes import Prober
from testkit.server_process import ServerProcess
from testkit.server_thread import ServerThread

from server.config import Limits
from server.logfilter import RepeatFilter
from server.net.descriptors import RESERVE, connection_budget, handshake_room
from server.net.gate import RETRY_AFTER, Gate

FIGURES = group("connection cap figures")
FLOOD_ADDRESSES = [f"127.0.0.{i}" for i in range(10, 16)]
NEWCOMER = "127.0.0.3"


@dataclasses.dataclass
class Knock:
    """One opening handshake sent by hand: what came back, and the socket if it was let in."""

    outcome: str  # "101", "503", ...: the status; "closed": no reply; "no answer": timed out
    headers: str = ""
    writer: asyncio.StreamWriter | None = None


async def knock(port: int, source: str, host: str = "127.0.0.1", origin: str | None = None
                ) -> Knock:
    """A WebSocket opening handshake from ``source``; the socket is kept only on 101."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, local_addr=(source, 0)), LIVENESS)
    except TimeoutError:
        return Knock("no answer")
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write((f"GET /ws HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  f"Sec-WebSocket-Version: 13\r\n"
                  + (f"Origin: {origin}\r\n" if origin else "") + "\r\n").encode())
    try:
        head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), LIVENESS)).decode()
    except TimeoutError:
        writer.close()
        return Knock("no answer")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()
        return Knock("closed")
    status = head.split()[1]
    if status == "101":
        return Knock(status, head, writer)
    writer.close()
    return Knock(status, head)


def retry_after(head: str) -> int | None:
    found = re.search(r"^Retry-After: (\d+)\r$", head, re.MULTILINE | re.IGNORECASE)
    return int(found.group(1)) if found else None


def close_all(knocks: list[Knock]) -> None:
    for k in knocks:
        if k.writer is not None:
            k.writer.close()


# ---- matchlobby serve under a low open-file limit ---------------------------------------


def nofile(soft: int, hard: int) -> Callable[[], None]:
    """What the child runs before ``matchlobby serve``: ``ulimit -Sn soft -Hn hard``."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return limit


@pytest.fixture
async def low_limit_server(tmp_path: Path) -> AsyncIterator[Callable[[int, int], ServerProcess]]:
    started: list[ServerProcess] = []

    def start(soft: int, hard: int) -> ServerProcess:
        db, config = admin_template(tmp_path / f"lobby{len(started)}", FAST_CONFIG)
        server = ServerProcess(db, config, preexec=nofile(soft, hard)).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


def process_limit(pid: int) -> tuple[int, int]:
    """The soft and hard open-file limits of process ``pid`` (/proc/PID/limits)."""
    text = Path(f"/proc/{pid}/limits").read_text()
    found = re.search(r"^Max open files\s+(\d+)\s+(\d+)", text, re.MULTILINE)
    assert found, text
    return int(found.group(1)), int(found.group(2))


async def test_serve_raises_its_open_file_limit_to_the_hard_limit(
        low_limit_server: Callable[[int, int], ServerProcess]) -> None:
    server = low_limit_server(128, 320)
    await server.ready()
    assert process_limit(server.pid) == (320, 320), server.tail()
    assert "open-file limit raised from 128 to 320" in server.output()
    budget = int(re.findall(r"at most (\d+) connections", server.output())[-1])
    # what is left once the server is up, less the reserve and the handshake room
    assert budget > 100 and budget + handshake_room(budget) <= 320 - RESERVE, budget
    FIGURES["open-file limit"] = f"started with 128 (hard 320): raised to 320, {budget} connections"


async def test_a_connection_flood_stays_under_the_open_file_limit(
        low_limit_server: Callable[[int, int], ServerProcess]) -> None:
    limit = 256
    server = low_limit_server(limit, limit)
    await server.ready()
    budget = int(re.findall(r"at most (\d+) connections", server.output())[-1])
    assert len(FLOOD_ADDRESSES) * Limits().connections_per_address > limit  # more than fits
    log_before = server.log.stat().st_size
    peak_fds = 0
    sampling = True

    async def sample_fds() -> None:
        nonlocal peak_fds
        while sampling:
            with contextlib.suppress(OSError):
                peak_fds = max(peak_fds, len(os.listdir(f"/proc/{server.pid}/fd")))
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample_fds())
    held: list[Knock] = []
    outcomes: Counter[str] = Counter()
    bad_503: list[str] = []

    async def flood(source: str, until: float) -> None:
        """New connections from ``source`` one after the other: 70, then on until ``until``."""
        loop = asyncio.get_running_loop()
        n = 0
        while n < 70 or loop.time() < until:
            k = await knock(server.port, source)
            n += 1
            outcomes[k.outcome] += 1
            if k.writer is not None:
                held.append(k)
            elif k.outcome == "503" and retry_after(k.headers) != RETRY_AFTER:
                bad_503.append(k.headers)
            if k.outcome == "no answer":
                return

    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        flooding = [asyncio.create_task(flood(a, started + 3.0)) for a in FLOOD_ADDRESSES]
        while outcomes["101"] < budget and not all(t.done() for t in flooding):
            await asyncio.sleep(0.05)
        newcomer = await knock(server.port, NEWCOMER)  # while the flood goes on
        await asyncio.gather(*flooding)
        took = loop.time() - started
        log_growth = server.log.stat().st_size - log_before
        sampling = False
        await sampler
        assert outcomes["no answer"] == 0, (outcomes, server.tail())
        assert outcomes["101"] == budget, (outcomes, budget)
        assert set(outcomes) <= {"101", "503", "429"}, outcomes
        assert outcomes["503"] > 100 and not bad_503, (outcomes, bad_503[:1])
        assert newcomer.outcome == "503" and retry_after(newcomer.headers) == RETRY_AFTER, \
            newcomer
        assert peak_fds < limit, peak_fds
        output = server.output(server.began_at)
        assert "out of system resource" not in output
        assert output.count("refusing connections") == 1, output[-3000:]
        assert log_growth < 8000, server.output(log_before)

        close_all(held[:10])  # room again: the newcomer gets in
        async with asyncio.timeout(LIVENESS):
            while True:
                k = await knock(server.port, NEWCOMER)
                if k.outcome == "101":
                    close_all([k])
                    break
                assert k.outcome == "503", k
                await asyncio.sleep(0.02)
        prober = await Prober.open(server.url, local_addr=(NEWCOMER, 0))
        assert (await prober.call("who"))["spectators"] == budget - 10 + 1
        await prober.close()
    finally:
        sampling = False
        close_all(held)
    FIGURES[f"connection flood under ulimit -n {limit}"] = (
        f"{sum(outcomes.values())} handshakes from {len(FLOOD_ADDRESSES)} addresses in "
        f"{took:.1f} s: {outcomes['101']} let in (the cap for this limit), "
        f"{outcomes['503']} HTTP 503 with Retry-After, {outcomes['429']} 429, 0 unanswered; "
        f"peak {peak_fds} descriptors; log +{log_growth} bytes; the newcomer refused with 503, "
        f"in once 10 left")


async def test_a_line_a_client_can_repeat_is_logged_a_few_times_a_minute(
        low_limit_server: Callable[[int, int], ServerProcess]) -> None:
    server = low_limit_server(1024, 1024)
    await server.ready()
    log_before = server.log.stat().st_size
    refused = Counter([(await knock(server.port, "127.0.0.40", origin="http://evil.example")
                        ).outcome for _ in range(300)])
    assert refused == {"403": 300}
    added = server.output(log_before)
    lines = [line for line in added.splitlines() if "refused a connection from origin" in line]
    assert len(lines) == 10, added
    assert "more like this in the next" in lines[-1] and "counted, not logged" in lines[-1]
    assert len(added) < 8000, added
    FIGURES["300 handshakes from a refused origin"] = (
        f"{len(lines)} log lines, +{len(added)} bytes (was one line, ~100 bytes, each)")


# ---- the caps one by one, in a server thread --------------------------------------------


@pytest.fixture
async def serve(db_path: Path) -> AsyncIterator[Callable[..., ServerThread]]:
    started: list[ServerThread] = []

    def start(limits: Limits, host: str = "127.0.0.1") -> ServerThread:
        server = ServerThread(db_path, limits)
        server.config = dataclasses.replace(server.config, host=host)
        started.append(server.start())
        return server

    try:
        yield start
    finally:
        for server in started:
            await server.astop()


@pytest.mark.both_loops  # the gate's sockets, on uvloop and asyncio's own loop
async def test_past_max_connections_the_handshake_gets_503_with_retry_after(
        serve: Callable[..., ServerThread]) -> None:
    server = serve(Limits(max_connections=4))
    with captured_logs(logging.INFO) as logs:
        held = [await knock(server.port, f"127.0.0.{50 + i}") for i in range(4)]
        assert [k.outcome for k in held] == ["101"] * 4
        refusals = [await knock(server.port, f"127.0.0.{60 + i % 5}") for i in range(30)]
        assert {k.outcome for k in refusals} == {"503"}
        assert {retry_after(k.headers) for k in refusals} == {RETRY_AFTER}
        close_all(held[:1])
        async with asyncio.timeout(LIVENESS):
            while (k := await knock(server.port, "127.0.0.70")).outcome != "101":
                await asyncio.sleep(0.02)
        held.append(k)
        close_all(held)
    warnings = [r.getMessage() for r in logs.server_records() if "refusing connections" in
                r.getMessage() or "refused" in r.getMessage()]
    assert len(warnings) == 1 and "the server is full" in warnings[0], warnings


@pytest.mark.both_loops  # the gate's sockets, on uvloop and asyncio's own loop
async def test_sockets_past_the_handshake_room_are_closed_as_soon_as_accepted(
        serve: Callable[..., ServerThread]) -> None:
    server = serve(Limits(max_connections=4))
    member = await Prober.open(server.url, local_addr=("127.0.0.80", 0))
    room = 4 + handshake_room(4) - 1  # the member holds one
    idle = [socket.create_connection(("127.0.0.1", server.port),
                                     source_address=(f"127.0.0.{81 + i % 4}", 0))
            for i in range(room)]  # never send a request: each holds a socket until timed out
    try:
        await asyncio.sleep(0.2)  # let the server accept them all
        k = await knock(server.port, "127.0.0.90")
        assert k.outcome == "closed", k  # at once: no reply, no wait for a handshake
        assert (await member.call("who"))["spectators"] == 1  # those let in are served
    finally:
        for sock in idle:
            sock.close()
    async with asyncio.timeout(LIVENESS):  # their sockets are free again
        while (k := await knock(server.port, "127.0.0.90")).outcome != "101":
            await asyncio.sleep(0.02)
    close_all([k])
    await member.close()


@pytest.mark.both_loops  # the gate's sockets, on uvloop and asyncio's own loop
async def test_one_address_holds_few_sockets_in_their_handshake(
        serve: Callable[..., ServerThread]) -> None:
    per_address = 2
    server = serve(Limits(connections_per_address=per_address))
    idle = [socket.create_connection(("127.0.0.1", server.port),
                                     source_address=("127.0.0.100", 0))
            for _ in range(per_address + handshake_room(per_address))]
    try:
        await asyncio.sleep(0.2)
        assert (await knock(server.port, "127.0.0.100")).outcome == "closed"
        other = await knock(server.port, "127.0.0.101")
        assert other.outcome == "101", other
        close_all([other])
    finally:
        for sock in idle:
            sock.close()


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.both_loops  # the gate's sockets, on uvloop and asyncio's own loop
@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this host")
async def test_an_ipv6_client_is_counted_by_its_slash_64(serve: Callable[..., ServerThread]) -> None:
    server = serve(Limits(connections_per_address=2), host="::1")
    held = [await knock(server.port, "::1", host="::1") for _ in range(3)]
    assert [k.outcome for k in held] == ["101", "101", "429"]
    transport = server.server.transport if server.server else None
    assert transport is not None and transport.gate is not None
    assert dict(transport.gate.admitted) == {"::/64": 2}
    close_all(held)


async def test_the_gate_counts_an_ipv6_network_as_one_client() -> None:
    gate = Gate(max_connections=100, per_address=2)
    one = [gate.accept(a) for a in ("2001:db8::1", "2001:db8::2", "2001:db8::ff:3")]
    assert one == ["2001:db8::/64"] * 3
    assert [gate.take(k) for k in one if k] == [None, None, 429]
    assert gate.take(gate.accept("2001:db8:0:1::1") or "") is None  # the next /64 is another
    assert gate.take(gate.accept("::ffff:192.0.2.7") or "") is None  # mapped IPv4: the IPv4
    assert dict(gate.admitted) == {"2001:db8::/64": 2, "2001:db8:0:1::/64": 1, "192.0.2.7": 1}
    gate.release("2001:db8::/64", admitted=True)
    assert gate.take("2001:db8::/64") is None
    # at accept: as many again as the per-address limit, then closed at once
    many = [gate.accept(f"2001:db8:1:2::{i:x}") for i in range(2 + handshake_room(2) + 1)]
    assert many[-1] is None and all(many[:-1])
    gate.close()


def test_the_budget_fits_under_the_open_file_limit() -> None:
    for limit in (256, 1024, 4096, 65536, 1 << 20):
        budget = connection_budget(0, limit, in_use=30)
        assert budget + handshake_room(budget) <= limit - 30 - RESERVE
        assert budget >= (limit - 30 - RESERVE) * 0.9
    assert connection_budget(500, 1024, in_use=30) == 500  # what fits is kept
    assert connection_budget(5000, 1024, in_use=30) == connection_budget(0, 1024, in_use=30)


# ---- the log filter -----------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_repeated_lines_are_counted_not_logged() -> None:
    clock = Clock()
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RepeatFilter(burst=3, interval=60.0, clock=clock))
    logger = logging.getLogger("test_connection_caps.repeat")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        for i in range(1000):
            logger.warning("refused %s (%d%%)", f"client {i}", i)
        logger.warning("another line")
        clock.now += 61
        logger.warning("refused %s (%d%%)", "client late", 7)
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert out.getvalue().splitlines() == [
        "refused client 0 (0%)",
        "refused client 1 (1%)",
        "refused client 2 (2%) (more like this in the next 60 s are counted, not logged)",
        "another line",
        "refused client late (7%) (997 more like this were not logged in the 60 s before)",
    ]
