"""Memory under slow readers: what the server holds for a client that does not read.

First, a real ``matchlobby serve`` process whose RSS is read from /proc. Connections that
never read (a 4 KiB receive buffer, nothing read after ``hello``) ask for the
biggest replies again and again: ``ladder backgammon 1 1000 --all`` (800 players) or ``event
show`` of a 1,200-game event. Each connection may leave the server holding only its budget of
unread bytes (``limits.outgoing_bytes``) and one more reply; then it is disconnected. Measured:
the server's RSS before the attack (after the same requests were answered to a client that
reads: the baseline), its peak during the attack (until every slow reader has been
disconnected), and after the slow readers are gone (once the allocator has been told to give
their memory back), which must come back within a few MB of before: nothing they were sent
outlives them. Each step waits for what it waits for (the server's log, its connections, its
RSS), up to a liveness bound, never for a length of time that a loaded machine could
outlast. Meanwhile a bystander keeps asking ``whois`` and is answered every time within
:data:`testkit.constants.LIVENESS`.

Then, on a server in this process with the cyclic garbage collector off: once a connection
has ended, nothing of it (its session, its queue and the frames in it, the connection object)
is left for a collection to find; and a client over its budget gets a close frame 1008 if it
reads, or has its TCP connection cut if it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import shutil
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import admin_template
from testkit.constants import ADMIN, ADMIN_PASSWORD, LIVENESS
from testkit.figures import group
from testkit.logs import Capture, captured_logs
from testkit.probes import Prober, bystander, slow_socket, wait_until
from testkit.server_process import ServerProcess
from testkit.server_thread import ServerThread
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from server.config import Limits
from server.lobby import Session
from server.net.memory import TRIM_DELAY
from server.net.outbox import Outbox
from server.net.transport import UNREAD_GRACE

PLAYERS = 800
GAMES = 1200
SLOW_READERS = 8
REQUESTS = 200  # each slow reader's: more than the kernel's socket buffers take (up to 4 MB)
BUDGET = Limits().outgoing_bytes
CONFIG = ("[password_hashing]\nn = 1024\n"
          # the attack at full speed: the message rate and the read budget are other limits,
          # not the one under test
          "[limits]\nmessages_per_second = 1000.0\nburst = 1000\nread_units_per_second = 0\n")
MB = 1024 * 1024
AFTER_SLACK = 4 * MB  # "within a few MB": what the allocator may keep of a busy moment
WAIT = 60.0  # a liveness bound: only a stuck server (or one that keeps the memory) misses it
DURING_SLACK = 8 * MB  # the server's own work meanwhile (the requests' transient objects)
FIGURES = group("memory figures")
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/status"),
                                reason="the server's RSS is read from /proc")


def results() -> str:
    """GAMES backgammon games among PLAYERS players (FIBS: rated as they are imported)."""
    rows = []
    for g in range(GAMES):
        a = (g * 7 + 7) % PLAYERS
        b = (a + 1 + g % (PLAYERS - 1)) % PLAYERS
        rows.append(f"Open,2026-03-14,player{a:04d},player{b:04d},{g % 2},{1 - g % 2},1,")
    return "\n".join(["event,date,side_a,side_b,score_a,score_b,length,rated", *rows]) + "\n"


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A database with PLAYERS rated backgammon players and one event of GAMES games (id 1),
    made over the protocol by the admin of ``matchlobby user add --admin``."""
    folder = tmp_path_factory.mktemp("memory-template")
    db, config = admin_template(folder, CONFIG)
    server = ServerProcess(db, config).start()
    try:
        async def build() -> None:
            await server.ready()
            admin = await Prober.open(server.url)
            await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
            event = await admin.call("event create", name="Open", ladder="backgammon")
            assert event["id"] == 1
            await admin.request("event import", timeout=60, event=1, new=True, csv=results())
            await admin.close()
        asyncio.run(build())
    finally:
        server.stop()
    return db, config


@pytest.fixture
async def server(big_db: tuple[Path, Path], tmp_path: Path) -> AsyncIterator[ServerProcess]:
    db = tmp_path / "lobby.db"
    shutil.copyfile(big_db[0], db)
    proc = ServerProcess(db, big_db[1]).start()
    try:
        await proc.ready()
        yield proc
    finally:
        proc.stop()


async def slow_reader(server: ServerProcess) -> ClientConnection:
    """Past ``hello``, it reads nothing more (``max_queue=1``: its library stops reading too)."""
    ws = await connect(server.url, sock=slow_socket(server.port), max_queue=1, max_size=None,
                       open_timeout=10, ping_interval=None)
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    return ws


@contextlib.asynccontextmanager
async def peak_rss(server: ServerProcess) -> AsyncIterator[list[int]]:
    """Samples the server's RSS every 10 ms for the block; yields [peak so far]."""
    peak = [server.rss()]

    async def sample() -> None:
        while True:
            peak[0] = max(peak[0], server.rss())
            await asyncio.sleep(0.01)

    task = asyncio.create_task(sample())
    try:
        yield peak
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    peak[0] = max(peak[0], server.rss())


async def settled_rss(server: ServerProcess, seconds: float = 0.5) -> int:
    """The RSS once it has stopped changing for ``seconds`` (at most 10 s)."""
    last, since, began = server.rss(), time.monotonic(), time.monotonic()
    while time.monotonic() - since < seconds and time.monotonic() - began < 10:
        await asyncio.sleep(0.05)
        now = server.rss()
        if abs(now - last) > 64 * 1024:
            last, since = now, time.monotonic()
    return last


async def connections(prober: Prober) -> int:
    """Connections the server holds (nobody is logged in: all spectators)."""
    data = await prober.call("who")
    return int(data["spectators"]) + len(data["players"])


def drops(server: ServerProcess) -> int:
    """Connections the server has disconnected for not reading (its log says so, once each)."""
    return server.output().count("does not read its messages")


def mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


async def attack(server: ServerProcess, name: str, line: str, reply_size: int) -> None:
    """SLOW_READERS connections each send ``line`` REQUESTS times and read nothing; then they
    go away. Records the figures as ``name``, then asserts the bounds."""
    async with bystander(server.url) as good:
        for _ in range(5):  # the same requests answered to a reader: the server's working set
            reply = await good.request("help")  # (a round trip first: the bystander is in)
            assert reply["ok"]
            await good.ws.send(line)
        assert (await good.request("help"))["ok"]  # answered after the five: all handled
        before = await settled_rss(server)
        slow = [await slow_reader(server) for _ in range(SLOW_READERS)]
        async with peak_rss(server) as peak:
            for ws in slow:
                with contextlib.suppress(Exception):  # the server may close it meanwhile
                    for _ in range(REQUESTS):
                        await ws.send(line)
            await wait_until(lambda: drops(server) >= SLOW_READERS, WAIT,
                             f"the {SLOW_READERS} slow readers to be disconnected")
        during = peak[0]
        dropped = drops(server)
        for ws in slow:  # the attacker leaves
            ws.transport.abort()

        async def alone() -> bool:
            return await connections(good) == 1

        await wait_until(alone, WAIT, "the slow readers to be gone", every=0.05)
        # the allocator is told to give memory back TRIM_DELAY after they went
        await wait_until(lambda: server.rss() - before <= AFTER_SLACK, WAIT + TRIM_DELAY,
                         "the memory to be given back", every=0.05)
        after = await settled_rss(server)
    answered = len(good.times)
    assert answered >= 3 and max(good.times) < LIVENESS, good.times
    figures = {"before": before, "during": during, "after": after, "dropped": dropped,
               "answered": answered, "slowest": max(good.times), "reply": reply_size}
    record(name, figures)
    bound = SLOW_READERS * (BUDGET + reply_size) + DURING_SLACK
    assert during - before <= bound, (
        f"the slow readers grew the server by {mb(during - before)}, more than "
        f"{SLOW_READERS} × ({mb(BUDGET)} + one reply of {mb(reply_size)}) + {mb(DURING_SLACK)}")
    assert after - before <= AFTER_SLACK, (
        f"after the slow readers left the server held {mb(after - before)} more than before")
    assert dropped == SLOW_READERS, f"{dropped} of {SLOW_READERS} slow readers were disconnected"


def record(name: str, f: dict[str, Any]) -> None:
    FIGURES[name] = (
        f"RSS before {mb(f['before'])}, peak during {mb(f['during'])} "
        f"(+{mb(f['during'] - f['before'])}), after {mb(f['after'])} "
        f"({(f['after'] - f['before']) / MB:+.1f} MB); {f['dropped']} of {SLOW_READERS} slow readers "
        f"disconnected for not reading; a reply {f['reply'] / 1024:.0f} KB; bystander: "
        f"{f['answered']} whois answered, slowest {f['slowest']:.3f} s")


async def reply_bytes(server: ServerProcess, frame: dict[str, Any]) -> int:
    """The size of the reply to ``frame``, as sent."""
    ws = await connect(server.url, max_size=None, open_timeout=10)
    try:
        await ws.recv()  # hello
        await ws.send(json.dumps(frame))
        return len((await asyncio.wait_for(ws.recv(), LIVENESS)).encode())
    finally:
        await ws.close()


async def test_slow_readers_asking_for_the_whole_ladder(server: ServerProcess) -> None:
    size = await reply_bytes(server, {"cmd": "ladder", "args": {"ladder": "backgammon", "from": 1,
                                                                 "count": 1000, "all": True}})
    await attack(server, f"{SLOW_READERS} slow readers × {REQUESTS} 'ladder backgammon 1 1000 "
                         f"--all' ({PLAYERS} players, budget {BUDGET // 1024} KiB)",
                 "ladder backgammon 1 1000 --all", size)


async def test_slow_readers_asking_for_a_big_event(server: ServerProcess) -> None:
    size = await reply_bytes(server, {"cmd": "event show", "args": {"event": 1}})
    await attack(server, f"{SLOW_READERS} slow readers × {REQUESTS} 'event show 1' ({GAMES} "
                         f"games, budget {BUDGET // 1024} KiB)", "event show 1", size)


# ---- in this process, with the collector off -----------------------------------------------


FAST = {"messages_per_second": 10_000.0, "burst": 10_000, "read_units_per_second": 0.0}


@pytest.fixture
async def ladder_server(db_path: Path) -> AsyncIterator[Callable[[Limits], ServerThread]]:
    """A server in this process on a database whose backgammon ladder has 400 players."""
    started: list[ServerThread] = []

    async def start(limits: Limits) -> ServerThread:
        server = ServerThread(db_path, limits)
        await asyncio.to_thread(server.start)
        started.append(server)
        admin = await Prober.open(server.url)
        await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
        await admin.call("event create", name="Open", ladder="backgammon")
        rows = [f"Open,2026-03-14,p{i:03d},p{(i + 1) % 400:03d},1,0,1," for i in range(400)]
        csv = "\n".join(["event,date,side_a,side_b,score_a,score_b,length,rated", *rows]) + "\n"
        await admin.request("event import", timeout=60, event=1, new=True, csv=csv)
        await admin.close()
        return server

    try:
        yield start  # type: ignore[misc]
    finally:
        for server in started:
            await server.astop()


@contextlib.contextmanager
def no_collector() -> Iterator[None]:
    """The cyclic collector off: what is freed in the block is freed by reference counting."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Remains:
    """Weak references to what the server holds for one connection."""

    def __init__(self, ws: ServerConnection, session: Session, outbox: Outbox) -> None:
        self.refs = {"the connection": weakref.ref(ws), "its session": weakref.ref(session),
                     "its queue": weakref.ref(outbox)}

    def alive(self) -> list[str]:
        return [name for name, ref in self.refs.items() if ref() is not None]

    def queued(self) -> int:
        """Bytes waiting in its queue (0 once the queue is gone)."""
        outbox = self.refs["its queue"]()
        return outbox.bytes if isinstance(outbox, Outbox) else 0


async def remains_of(server: ServerThread, client: ClientConnection) -> Remains:
    """The server's objects for ``client`` (found by its port)."""
    port = client.local_address[1]

    async def find() -> Remains:
        assert server.server is not None
        for ws, session in server.server.transport.sessions.items():
            if ws.remote_address[1] == port:
                cells = [cell.cell_contents for cell in session.send.__closure__ or ()]
                outbox = next(obj for obj in cells if type(obj) is Outbox)
                return Remains(ws, session, outbox)
        raise AssertionError(f"no session for the client at port {port}")

    return await server.acall(find())


async def freed(remains: Remains, within: float) -> float:
    """Wait until nothing of a connection is left (at most ``within`` seconds); how long."""
    began = time.monotonic()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            while remains.alive():
                await asyncio.sleep(0.02)
    assert remains.alive() == [], f"{remains.alive()} outlived the connection"
    return time.monotonic() - began


async def test_nothing_of_a_closed_connection_outlives_it(
        ladder_server: Callable[[Limits], Any]) -> None:
    # no byte budget: the frames pile up in the queue, as many as the client asks for
    server = await ladder_server(Limits(outgoing_bytes=0, **FAST))
    with no_collector():
        slow = await slow_reader(server)  # type: ignore[arg-type]
        remains = await remains_of(server, slow)
        for _ in range(300):  # ~40 KB each: more than the kernel's buffers take
            await slow.send("ladder backgammon 1 500 --all")
        async with asyncio.timeout(10):
            while (queued := remains.queued()) < 1024 * 1024:
                await asyncio.sleep(0.05)
        slow.transport.abort()  # the client goes away with megabytes queued for it
        took = await freed(remains, LIVENESS)
    FIGURES["a client gone with frames queued (collector off)"] = (
        f"{mb(queued)} or more were queued; {took:.2f} s after it went, its connection, session "
        f"and queue had all been freed, with no collection")


def dropped_lines(logs: Capture) -> list[str]:
    return [r.getMessage() for r in logs.server_records()
            if "does not read its messages" in r.getMessage()]


async def test_a_client_over_its_budget_is_closed_and_one_that_never_reads_is_cut_off(
        ladder_server: Callable[[Limits], Any]) -> None:
    budget = 256 * 1024
    server = await ladder_server(Limits(outgoing_bytes=budget, **FAST))
    with captured_logs(logging.WARNING) as logs:
        async with bystander(server.url) as good:
            with no_collector():
                deaf, late = await slow_reader(server), await slow_reader(server)  # type: ignore[arg-type]
                deaf.transport.pause_reading()  # not even its library reads any more
                remains = {ws: await remains_of(server, ws) for ws in (deaf, late)}
                for ws in (deaf, late):
                    with contextlib.suppress(ConnectionClosed):
                        for _ in range(300):
                            await ws.send("ladder backgammon 1 500 --all")
                assert await good.call("whois", name=ADMIN)
                async with asyncio.timeout(10):
                    while len(dropped_lines(logs)) < 2:
                        await asyncio.sleep(0.02)
                dropped_at = time.monotonic()
                assert remains[deaf].queued() == remains[late].queued() == 0  # dropped at once
                assert await good.call("whois", name=ADMIN)
                # `late` reads at last: what had reached the socket, then the close frame
                replies = 0
                with contextlib.suppress(ConnectionClosed):
                    async with asyncio.timeout(UNREAD_GRACE):
                        async for _frame in late:
                            replies += 1
                close = late.protocol.close_rcvd
                assert close is not None, "no close frame"
                assert (close.code, close.reason) == (1008, "too much unread data")
                await freed(remains[late], LIVENESS)
                # `deaf` never reads: its TCP connection is cut after the grace, then it is freed
                await freed(remains[deaf], UNREAD_GRACE + LIVENESS)
                cut_after = time.monotonic() - dropped_at
                assert await good.call("whois", name=ADMIN)
        lines = dropped_lines(logs)
    assert len(lines) == 2, lines  # once each
    assert f"limit {budget}" in lines[0], lines
    assert max(good.times) < LIVENESS
    FIGURES[f"a client over a budget of {budget // 1024} KiB"] = (
        f"logged once ({lines[0]!r}), its queue emptied at once; one that read at last got "
        f"{replies} replies then close 1008 'too much unread data'; one that never read was cut "
        f"off and freed {cut_after:.1f} s after (grace {UNREAD_GRACE:g} s); bystander: "
        f"{len(good.times)} whois answered, slowest {max(good.times):.3f} s")
