"""Abuse: each limit of the transport working while a well-behaved client is served.

For each kind of abuse — a slow reader, a flood of messages, a flood of connections, a
login brute force, oversized frames — the abuser runs into its limit, and meanwhile a
well-behaved client (a *bystander*, reading everything) keeps asking ``whois`` and every
one of its requests is answered. The bound on each reply (:data:`testkit.constants.LIVENESS`, 2 s)
is a liveness bound — the server is not stuck — not a claim about its speed.

Last, nothing a client sends makes the server log a password.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from testkit.constants import ADMIN, ADMIN_PASSWORD, LIVENESS, PASSWORD
from testkit.figures import group
from testkit.logs import Capture, captured_logs, render
from testkit.probes import Prober, bystander, slow_socket
from testkit.server_thread import ServerThread
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from server.config import Limits

LIMIT = 64 * 1024
FIGURES = group("abuse figures")


@pytest.fixture
async def serve(db_path: Path) -> AsyncIterator[Callable[[Limits], ServerThread]]:
    """Start a server with the given limits (on a copy of the template database)."""
    started: list[ServerThread] = []

    def start(limits: Limits) -> ServerThread:
        server = ServerThread(db_path, limits).start()
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            await server.astop()


async def raw(url: str, **kwargs: Any) -> ClientConnection:
    """A bare connection, past the ``hello``."""
    ws = await connect(url, max_size=None, open_timeout=10, **kwargs)
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    return ws


async def reply_to(ws: ClientConnection, frame: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(frame))
    async with asyncio.timeout(LIVENESS):
        while True:
            msg: dict[str, Any] = json.loads(await ws.recv())
            if "event" not in msg:
                return msg


async def drain(ws: ClientConnection, seconds: float = 10.0) -> tuple[list[dict[str, Any]], int]:
    """Everything still to come on ``ws`` and the code of the close that must end it in time.

    The closing handshake must complete too (the server reads on until the answer to its
    close frame, however much was sent before it): ``ws`` ends closed.
    """
    got: list[dict[str, Any]] = []
    with contextlib.suppress(ConnectionClosed):
        async with asyncio.timeout(seconds):
            async for frame in ws:
                got.append(json.loads(frame))
    close = ws.protocol.close_rcvd
    assert close is not None, "the connection ended without a close frame"
    return got, int(close.code)


def summary(prober: Prober) -> str:
    times = prober.times
    return f"{len(times)} whois answered, slowest {max(times):.3f} s" if times else "none"


def check_bystander(prober: Prober, at_least: int = 3) -> None:
    """Every request was answered (the loop raises otherwise), and there were some."""
    assert len(prober.times) >= at_least, prober.times
    assert max(prober.times) < LIVENESS


# ---- a slow reader --------------------------------------------------------------------------


async def test_a_slow_reader_is_disconnected_and_the_others_carry_on(
        serve: Callable[[Limits], ServerThread]) -> None:
    queue = 200
    # The admin records results 20 at a time, for as many as the slow reader's socket buffers
    # take to fill (about 500 on a quiet run): not the message rate under test here.
    server = serve(Limits(outgoing_queue=queue, messages_per_second=1000.0, burst=1000))
    slow = await raw(server.url, sock=slow_socket(server.port), max_queue=1)
    assert (await reply_to(slow, {"cmd": "watch", "args": {"ladder": "backgammon"}}))["ok"]
    # ... and from now on it reads nothing
    admin = await Prober.open(server.url)
    await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
    event = (await admin.call("event create", name="Night", ladder="backgammon"))["id"]
    results = 0
    with captured_logs(logging.WARNING) as logs:
        async with bystander(server.url) as good:
            await good.call("watch", ladder="backgammon")  # a watcher that reads
            while not dropped(logs) and results < 4000:
                # each rated at once: a rating_changed for each of its players to each watcher
                await asyncio.gather(*(admin.call(
                    "event result", event=event, side_a=f"a{results + i}",
                    side_b=f"b{results + i}", score_a=1, score_b=0, new=True) for i in range(20)))
                results += 20
            assert dropped(logs), f"the slow reader was never disconnected ({results} results)"
            assert drops_counted(server) == sum(
                "does not read its messages" in r.getMessage() for r in logs.server_records())
            async with asyncio.timeout(LIVENESS):  # the reading watcher got every change
                while sum(p["event"] == "rating_changed" for p in good.pushes) < 2 * results:
                    await asyncio.sleep(0.01)
            got_good = len(good.pushes)
        check_bystander(good)
    # the slow reader, reading at last, finds what was queued before the limit, then 1008
    late, code = await drain(slow)
    assert code == 1008, code
    assert len(late) < got_good
    await admin.close()
    FIGURES["slow reader (outgoing queue 200)"] = (
        f"disconnected with 1008 after {results} results rated at once ({len(late)} of the "
        f"{got_good} pushes the reading watcher got had reached it); bystander: {summary(good)}")


def drops_counted(server: ServerThread) -> float:
    """The operator's metric of connections dropped for not reading, whichever the limit."""
    assert server.server is not None
    registry = server.server.lobby.metrics.registry
    return sum(registry.get_sample_value("matchlobby_outgoing_drops_total", {"limit": limit})
               or 0.0 for limit in ("messages", "bytes"))


def dropped(logs: Capture) -> bool:
    return any("does not read its messages" in r.getMessage() for r in logs.server_records())


async def test_a_burst_of_pushes_does_not_drop_a_reader(serve: Callable[[Limits], ServerThread]) -> None:
    server = serve(Limits(outgoing_queue=50))
    watcher = await Prober.open(server.url)
    await watcher.call("watch", ladder="backgammon")
    admin = await Prober.open(server.url)
    await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
    eid = (await admin.call("event create", name="Day", ladder="backgammon"))["id"]
    rows = [f"Day,2026-03-14,a{i},b{i},1,0,," for i in range(40)]  # 80 players: one push to watchers
    csv = "\n".join(["event,date,side_a,side_b,score_a,score_b,length,rated", *rows]) + "\n"
    await admin.call("event import", new=True, event=eid, csv=csv)
    try:
        assert (await watcher.call("who"))["spectators"] == 1  # still connected, still served
        updated = [p for p in watcher.pushes if p.get("event") == "ladder_updated"]
        assert len(updated) == 1 and updated[0]["data"]["total"] == 80
    finally:
        await admin.close()
        await watcher.close()


# ---- a flood of messages --------------------------------------------------------------------


async def test_a_message_flood_is_refused_then_closed(serve: Callable[[Limits], ServerThread]) -> None:
    # 20 a second, bursts of 60, closed after 20 refusals in a row; the read budget of the
    # address (the floods' and the bystander's) is another limit, lifted
    limits = Limits(read_units_per_second=0)
    server = serve(limits)
    floods: list[tuple[int, int, int]] = []  # (answered, refused, sent) per flooding connection
    async with bystander(server.url) as good:
        loop = asyncio.get_running_loop()
        started = loop.time()
        while loop.time() - started < 1.0:  # one flooding connection after another, for 1 s
            flood = await raw(server.url)
            sent = 0
            with contextlib.suppress(ConnectionClosed):
                for i in range(300):
                    await flood.send(json.dumps({"id": i, "cmd": "who"}))
                    sent += 1
            got, code = await drain(flood, seconds=LIVENESS)  # closed at once, handshake and all
            assert code == 1008, code
            answered = [m for m in got if "event" not in m]
            ok = [m for m in answered if m["ok"]]
            limited = [m for m in answered if not m["ok"]]
            assert {m["error"]["code"] for m in limited} == {"rate_limited"}, limited[:3]
            assert len(ok) >= limits.burst
            assert len(limited) >= limits.strikes + 1
            assert "closing" in limited[-1]["error"]["message"]
            assert answered[-1] is limited[-1]  # nothing is answered after the last refusal
            assert len(answered) < sent  # what came after the close was never read
            floods.append((len(ok), len(limited), sent))
    check_bystander(good)
    answered_, refused_ = max(f[0] for f in floods), max(f[1] for f in floods)
    FIGURES["message flood (20/s, burst 60, 20 strikes)"] = (
        f"{len(floods)} flooding connections in 1 s, each sending 300: at most {answered_} "
        f"answered, then at most {refused_} rate_limited, then closed 1008; "
        f"bystander: {summary(good)}")


# ---- idle connections -----------------------------------------------------------------------


async def test_an_idle_connection_is_closed_and_a_talking_one_is_not(
        serve: Callable[[Limits], ServerThread]) -> None:
    timeout = 0.6
    server = serve(Limits(idle_timeout=timeout))
    async with bystander(server.url) as good:
        loop = asyncio.get_running_loop()
        silent, talking = await raw(server.url), await raw(server.url)
        opened = loop.time()
        answered = 0
        while loop.time() - opened < 3 * timeout:  # talks every third of the timeout
            assert (await reply_to(talking, {"id": answered, "cmd": "who"}))["ok"]
            answered += 1
            await asyncio.sleep(timeout / 3)
        got, code = await drain(silent, seconds=LIVENESS)
        assert (got, code) == ([], 1000)
        assert silent.protocol.close_rcvd is not None
        assert silent.protocol.close_rcvd.reason == "idle for too long"
        assert (await reply_to(talking, {"id": "last", "cmd": "who"}))["ok"]
        await talking.close()
    check_bystander(good)
    FIGURES[f"idle connections ({timeout} s)"] = (
        f"a silent connection closed 1000 'idle for too long'; one talking every {timeout / 3:.1f} s "
        f"kept open ({answered + 1} answers); bystander: {summary(good)}")


# ---- a flood of connections -----------------------------------------------------------------


async def test_a_connection_flood_is_refused_per_address(serve: Callable[[Limits], ServerThread]) -> None:
    limit = 8
    server = serve(Limits(connections_per_address=limit))
    # the bystander and a latecomer come from other addresses (any 127.x.y.z is this host)
    async with bystander(server.url, local_addr=("127.0.0.2", 0)) as good:
        flood: list[ClientConnection] = []
        refused = 0
        loop = asyncio.get_running_loop()
        started = loop.time()
        # new connections, as fast as it can, for half a second and until 20 were refused
        async with asyncio.timeout(10 * LIVENESS):
            while refused < 20 or loop.time() - started < 0.5:
                try:
                    flood.append(await raw(server.url))
                except InvalidStatus as e:
                    assert e.response.status_code == 429, e
                    refused += 1
        took = loop.time() - started
        assert len(flood) == limit, (len(flood), refused)
        latecomer = await Prober.open(server.url, local_addr=("127.0.0.3", 0))
        assert (await latecomer.call("who"))["spectators"] >= limit + 2
        await latecomer.close()
        for ws in flood:  # the flood's connections still work, up to the limit
            assert (await reply_to(ws, {"cmd": "ladders"}))["ok"]
        for ws in flood:
            await ws.close()
        async with asyncio.timeout(LIVENESS):  # the address's slots come back
            while True:
                try:
                    again = await raw(server.url)
                    break
                except InvalidStatus:
                    await asyncio.sleep(0.02)
        await again.close()
    check_bystander(good)
    FIGURES[f"connection flood ({limit} per address)"] = (
        f"{limit} accepted, the next {refused} (in {took:.2f} s) refused with HTTP 429; other addresses "
        f"unaffected; "
        f"bystander: {summary(good)}")


# ---- a login brute force --------------------------------------------------------------------


async def login(ws: ClientConnection, name: str, password: str) -> str:
    reply = await reply_to(ws, {"cmd": "login", "args": {"name": name, "password": password}})
    return "ok" if reply["ok"] else str(reply["error"]["code"])


async def test_a_login_brute_force_is_throttled(serve: Callable[[Limits], ServerThread]) -> None:
    free = 5
    server = serve(Limits(login_free_failures=free))
    victim, passer = "victim", "passer"
    for name in (victim, passer):
        ws = await raw(server.url, local_addr=("127.0.0.9", 0))
        assert (await reply_to(ws, {"cmd": "register", "args": {"name": name, "password": PASSWORD}}))["ok"]
        await ws.close()
    async with bystander(server.url, local_addr=("127.0.0.2", 0)) as good:
        attacker = await raw(server.url)  # from 127.0.0.1
        outcomes = [await login(attacker, victim, f"guess-{i}") for i in range(free + 10)]
        assert outcomes[:free] == ["forbidden"] * free, outcomes
        assert outcomes[free:] == ["rate_limited"] * 10, outcomes
        # while throttled, the guessing address is refused even the right password ...
        assert await login(attacker, victim, PASSWORD) == "rate_limited"
        # ... but not the account from another address, nor the address for another account
        # (spraying and guessers on many addresses: tests/hardening/test_login_limits.py)
        elsewhere = await raw(server.url, local_addr=("127.0.0.3", 0))
        assert await login(elsewhere, victim, PASSWORD) == "ok"
        assert await login(attacker, passer, PASSWORD) == "ok"
        # after the wait (1 s after the fifth failure) the guessing address is heard again
        await asyncio.sleep(1.1)
        assert await login(attacker, victim, PASSWORD) == "ok"
        for ws in (attacker, elsewhere):
            await ws.close()
    check_bystander(good)
    FIGURES[f"login brute force ({free} free failures)"] = (
        f"{free} wrong passwords refused (forbidden), then rate_limited for that account from that "
        f"address, the right password included, taken again after the 1 s wait; the account from "
        f"another address and another account from that address unaffected; "
        f"bystander: {summary(good)}")


# ---- oversized frames -----------------------------------------------------------------------


async def test_oversized_frames_are_refused_and_closed(serve: Callable[[Limits], ServerThread]) -> None:
    server = serve(Limits())
    codes: list[int] = []
    frames = ("help " + "x" * LIMIT, b"\x00" * (LIMIT + 1), "é" * (LIMIT // 2 + 1), "x" * (20 * LIMIT))
    async with bystander(server.url) as good:
        started = asyncio.get_running_loop().time()
        while asyncio.get_running_loop().time() - started < 0.5:  # for half a second
            for data in frames:
                ws = await raw(server.url)
                with contextlib.suppress(ConnectionClosed):
                    await ws.send(data)
                got, code = await drain(ws)
                if len(data) <= 16 * LIMIT:  # read, then refused
                    assert [m["error"]["code"] for m in got] == ["too_large"], got
                else:  # beyond 16× the limit, websockets closes before reading it
                    assert got == [] or got[0]["error"]["code"] == "too_large", got
                codes.append(code)
    assert codes == [1009] * len(codes), codes
    check_bystander(good)
    FIGURES["oversized frames (64 KiB)"] = (
        f"{len(codes)} frames of 64 KiB + 1 byte to 1.25 MiB (text, UTF-8, binary): too_large, "
        f"then closed 1009; bystander: {summary(good)}")


# ---- no password in the logs ----------------------------------------------------------------


SECRET = "Zq-7-SECRET-hunter2"


async def test_nothing_a_client_sends_makes_the_server_log_a_password(
        serve: Callable[[Limits], ServerThread]) -> None:
    server = serve(Limits(login_free_failures=2, messages_per_second=1000, burst=1000))
    s = SECRET
    frames: list[str | bytes] = [
        json.dumps({"cmd": "register", "args": {"name": "leaky", "password": s}}),
        json.dumps({"cmd": "logout"}),
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s}}),
        json.dumps({"cmd": "logout"}),
        *[json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s + str(i)}}) for i in range(4)],
        f"login leaky {s}",
        f"register other {s}",
        f'login leaky "{s}',  # broken quoting
        f'{{"cmd": "login", "args": {{"name": "leaky", "password": "{s}"',  # bad JSON
        f'{{"cmd": "login", "args": {{"name": "leaky", "password": "{s}", "x": NaN}}}}',
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s * 10}}),  # too long
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s + "\x00\x1b"}}),
        json.dumps({"cmd": "login", "args": {"name": s, "password": s}}),  # not a valid name
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s, s: s}}),
        json.dumps({"cmd": f"log in {s}", "args": {"password": s}}),  # unknown command
        json.dumps({"id": s, "cmd": "frobnicate", s: s}),
        json.dumps({"cmd": "whois", "args": {"name": "leaky", "password": s}}),
        json.dumps({"cmd": "register", "args": {"name": "leaky2", "password": s[:3]}}),  # too short
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s + "\\ud800"}}),
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": [s]}}),
        f"{s}",
        s.encode(),  # binary
        json.dumps({"cmd": "login", "args": {"name": "leaky", "password": s + "x" * LIMIT}}),  # 1009
    ]
    with captured_logs(logging.DEBUG) as logs:
        ws = await raw(server.url)
        for frame in frames:
            if ws.close_code is not None or ws.state.name != "OPEN":
                ws = await raw(server.url)
            with contextlib.suppress(ConnectionClosed):
                await ws.send(frame)
                async with asyncio.timeout(LIVENESS):
                    while "event" in json.loads(await ws.recv()):
                        pass
        await ws.close()
        # something is logged at all: a connection from a refused origin
        with pytest.raises(InvalidStatus):
            await connect(server.url, origin="http://evil.example")  # type: ignore[arg-type]
        records = logs.server_records()
    assert records, "nothing was logged at all: the capture is not working"
    leaks = [render(r) for r in records if SECRET in render(r)]
    assert leaks == [], leaks
    FIGURES["passwords in the log"] = (
        f"{len(frames)} frames carrying the password (good, malformed, oversized): "
        f"{len(records)} server log records at DEBUG, none contains it")
