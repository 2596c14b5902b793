"""Costly reads: whatever one address asks the server to read, the others are served as fast
as before, and nothing it asked for is worked on once it has gone.

First, a real ``matchlobby serve`` (on SQLite and on PostgreSQL) holding an open event of
:data:`GAMES` games and a player with :data:`HISTORY` rating changes. :data:`ATTACKERS`
connections from one address (127.0.0.2) each send, 19 times a second (the limit is 20), the
costliest reads there are, in turn: both ends of the event's pages (its standings on each),
both ends of the long history (with and without a ladder), 500 rows of the ladder with
``--all`` (what the web page's exports and the clients' paging send, flat out). A bystander
from another address (127.0.0.3) asks ``whois`` :data:`SAMPLES` times before, during and
after the flood: the median of its reply times during the flood must stay within
:data:`SLOWDOWN` times the median of those before and after, measured in the same run (a
machine whose load changes meanwhile moves both; when another job's load fills the flood's
window all the same, a second flood is measured, with the bystander's times after it as its
baseline, and it decides). Then the attackers leave (they shut their
end of the connections, behind what they sent and the server has not read yet), and the
server must be idle within a second.

Then, on a server in this process: the read budget is the address's, shared by all its
connections (an IPv6 /64 is one address) and refused with ``rate_limited`` and when to try
again, while other addresses and commands that change something are not refused; and the
reads a client sent before it went away are not run, while what it sent to change something
still is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import statistics
import struct
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from testkit.constants import ADMIN, ADMIN_PASSWORD, LIVENESS
from testkit.figures import group
from testkit.postgres import PgDb
from testkit.postgres import query as pg_query
from testkit.probes import Prober, wait_until
from testkit.server_loop import LobbyServer
from testkit.server_process import ServerProcess
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State

from server.config import Limits

PLAYERS = 200
GAMES = 3000  # the open event's: its standings read all of them
HISTORY = 1200  # rating changes of the player whose history is read
IMPORT_ROWS = 1000  # a results file of this many rows fits in a 64 KiB frame
ATTACKERS = 16
RATE = 19.0  # requests a second per attacker: under the 20 a connection may send
WARM_UP = 20.0  # seconds at most until the budget is spent
SAMPLES = 40
PAUSE = 0.05  # between two of the bystander's requests
SLOWDOWN = 5.0
IDLE_WINDOW = 0.2  # seconds over which the server must use under a fifth of a core
FIGURES = group("costly reads figures")
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated\n"
READS = (
    "event show 1",  # the first page: 200 games and 200 standings
    f"event show 1 {GAMES - 199}",  # the last page
    "history p000",  # 500 entries, all ladders (sorted over all of them)
    f"history p000 backgammon {HISTORY - 499}",
    "ladder backgammon 1 500 --all",
)


def name(i: int) -> str:
    return f"p{i:03d}"


async def fill(url: str) -> None:
    """Event 1: GAMES scrabble games among PLAYERS players, open; event 2: HISTORY backgammon
    games of p000 (each rated at once, a history entry each)."""
    admin = await Prober.open(url)
    await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
    assert (await admin.call("event create", name="Open", ladder="scrabble"))["id"] == 1
    rows = [f"Open,2026-03-14,{name(g % PLAYERS)},{name((g * 7 + 1 + g // PLAYERS) % PLAYERS)},"
            f"{300 + g % 97},{300 + g % 89},,\n" for g in range(GAMES * 2)]
    rows = [r for r in rows if r.split(",")[2] != r.split(",")[3]][:GAMES]
    assert len(rows) == GAMES
    assert (await admin.call("event create", name="Day", ladder="backgammon"))["id"] == 2
    games = [f"Day,2026-03-14,p000,{name(1 + g % (PLAYERS - 1))},{g % 2},{1 - g % 2},1,\n"
             for g in range(HISTORY)]
    for event, lines in ((1, rows), (2, games)):
        for chunk in range(0, len(lines), IMPORT_ROWS):
            reply = await admin.request("event import", timeout=120, event=event, new=True,
                                        csv=HEADER + "".join(lines[chunk:chunk + IMPORT_ROWS]))
            assert reply["ok"], reply
    await admin.close()


async def attacker(url: str, stop: asyncio.Event, start: int, codes: Counter[str]
                   ) -> ClientConnection:
    """Sends READS in turn (from ``start``) at RATE until ``stop``; returns its connection,
    still open. Counts the replies' codes."""
    ws = await connect(url, max_size=None, open_timeout=10, ping_interval=None,
                       local_addr=("127.0.0.2", 0))
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"

    async def read() -> None:
        with contextlib.suppress(ConnectionClosed):
            async for frame in ws:
                if len(frame) > 4096:  # a page: only a good reply is that long
                    codes["ok"] += 1
                    continue
                msg = json.loads(frame)
                if "event" not in msg:
                    codes["ok" if msg["ok"] else msg["error"]["code"]] += 1

    reader = asyncio.create_task(read())
    ws.reader = reader  # type: ignore[attr-defined]  # kept alive with the connection
    loop = asyncio.get_running_loop()
    sent, began = 0, loop.time()
    try:
        while not stop.is_set():
            await ws.send(READS[(start + sent) % len(READS)])
            sent += 1
            await asyncio.sleep(max(0.0, began + sent / RATE - loop.time()))
    except ConnectionClosed:
        # a backlog read at once breaks the message rate (`strikes`): closed 1008
        codes[f"closed {ws.close_code}"] += 1
    codes["sent"] += sent
    return ws


def leave(ws: ClientConnection) -> None:
    """The attacker stops and leaves: its end of the TCP connection is shut (FIN), after what
    it sent and the server has not read yet, which the server reads before it can tell. (It
    still reads what comes back, so its kernel never answers with a reset, which would drop
    that backlog at once.)"""
    if not ws.transport.is_closing():
        ws.transport.write_eof()


def gone(ws: ClientConnection) -> None:
    ws.reader.cancel()  # type: ignore[attr-defined]
    ws.transport.abort()


async def whois_times(prober: Prober, count: int) -> list[float]:
    first = len(prober.times)
    while len(prober.times) - first < count:
        reply = await prober.request("whois", name=ADMIN)
        assert reply["ok"], reply
        await asyncio.sleep(PAUSE)
    return prober.times[first:]


def database_busy(db: Path) -> bool:
    """On PostgreSQL: a query of the lobby's still running (the work may be there)."""
    if not isinstance(db, PgDb):
        return False
    rows = pg_query(db, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND state = 'active' AND pid <> pg_backend_pid()")
    return bool(rows[0][0])


async def idle_after(server: ServerProcess, db: Path, timeout: float = 60.0) -> float:
    """Seconds from now until the server uses under a fifth of a core over IDLE_WINDOW (and,
    on PostgreSQL, runs no query): the start of the first such window."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        start, cpu = time.monotonic(), server.cpu()
        await asyncio.sleep(IDLE_WINDOW)
        if server.cpu() - cpu < IDLE_WINDOW / 5 and not database_busy(db):
            return start - began
    return float("inf")


async def flooded(server: ServerProcess, db: Path, prober: Prober, codes: Counter[str]
                  ) -> tuple[list[float], float]:
    """One flood: the bystander's reply times at its height, and the seconds until the server
    is idle once the attackers have left."""
    stop = asyncio.Event()
    attack = [asyncio.create_task(attacker(server.url, stop, i, codes))
              for i in range(ATTACKERS)]
    # the flood at its height: the address has spent what it had saved up (a server
    # without a budget never refuses: then the flood has been going for a while)
    with contextlib.suppress(AssertionError):
        await wait_until(lambda: codes["rate_limited"] > 0, WARM_UP, "refusals")
    busy = await whois_times(prober, count=SAMPLES)
    stop.set()
    connections = await asyncio.gather(*attack)
    for ws in connections:
        leave(ws)
    after = await idle_after(server, db)
    for ws in connections:
        gone(ws)
    return busy, after


@pytest.mark.both_backends
async def test_costly_reads_from_one_address_do_not_slow_down_the_others(
        db_path: Path, fast_config: Path, backend: str, tmp_path: Path) -> None:
    # the default [limits]
    server = ServerProcess(db_path, fast_config, log=tmp_path / "serve.log").start()
    codes: Counter[str] = Counter()
    try:
        await server.ready()
        await fill(server.url)
        prober = await Prober.open(server.url, local_addr=("127.0.0.3", 0))
        await whois_times(prober, count=5)  # warm up
        idle = await whois_times(prober, count=SAMPLES)
        busy, after = await flooded(server, db_path, prober, codes)
        idle += await whois_times(prober, count=SAMPLES)  # a machine whose load changed moves both
        ratio = statistics.median(busy) / statistics.median(idle)
        floods = 1
        if ratio >= SLOWDOWN:  # another job's load may fill one flood's window: once more
            busy, again = await flooded(server, db_path, prober, codes)
            idle = await whois_times(prober, count=SAMPLES)
            ratio, after, floods = statistics.median(busy) / statistics.median(idle), \
                max(after, again), 2
        await prober.close()
    finally:
        server.stop()
    FIGURES[f"{ATTACKERS} connections × {RATE:g}/s of costly reads ({backend})"] = (
        f"{codes['sent']} sent: {codes['ok']} answered, {codes['rate_limited']} rate_limited, "
        f"{codes['closed 1008']} connections closed for their rate; "
        f"bystander whois median {statistics.median(idle) * 1000:.2f} ms before and after, "
        f"{statistics.median(busy) * 1000:.2f} ms during ({ratio:.2f}x, {len(busy)} samples, "
        f"slowest {max(busy) * 1000:.1f} ms, flood {floods} of 2); server idle {after:.2f} s "
        "after they left")
    assert ratio < SLOWDOWN, (statistics.median(busy), statistics.median(idle), busy)
    assert after <= 1.0, f"the server was still busy {after:.1f} s after the attackers left"
    assert set(codes) <= {"sent", "ok", "rate_limited", "closed 1008"}, codes  # no internal
    assert codes["ok"] > 0 and codes["rate_limited"] > 0, codes


# ---- on a server in this process -------------------------------------------------------------


def test_the_budget_is_the_address_s_and_an_ipv6_64_is_one_address() -> None:
    from server.limits import ReadBudget

    budget = ReadBudget(per_second=10.0, burst=30.0)
    budget.pay("2001:db8::1", 40.0, now=100.0)  # 10 units in debt
    for address in ("2001:db8::1", "2001:db8::ffff:1", "2001:db8:0:0:1:2:3:4"):
        assert budget.wait(address, now=100.0) == pytest.approx(1.0, abs=0.01)
    assert budget.wait("2001:db8:0:1::1", now=100.0) == 0.0  # another /64
    assert budget.wait("192.0.2.1", now=100.0) == 0.0
    assert budget.wait("2001:db8::1", now=101.01) == 0.0  # paid back at 10 a second
    assert ReadBudget(per_second=0.0, burst=0.0).wait("192.0.2.1") == 0.0  # 0: no limit


async def ladder_of(lobby: LobbyServer, players: int) -> None:
    admin = await lobby.admin()
    await admin.call("event create", name="Day", ladder="backgammon")
    rows = [f"Day,2026-03-14,{name(i)},{name((i + 1) % players)},1,0,1,\n"
            for i in range(players)]
    await admin.call("event import", new=True, event=1, csv=HEADER + "".join(rows))


RETRY = re.compile(r"try again in (\d+\.\d) s")


async def test_a_read_budget_per_address_shared_by_its_connections(db_path: Path) -> None:
    # 29 units saved up, 1 more a second; a read of 300 ladder rows costs 1 + 3
    lobby = LobbyServer(db_path, limits=Limits(registrations_per_hour=0, read_units_per_second=1,
                                               read_units_burst=29))
    await lobby.start()
    try:
        await ladder_of(lobby, 300)
        first, second, third = [await Prober.open(lobby.url, local_addr=("127.0.0.2", 0))
                                for _ in range(3)]
        other = await Prober.open(lobby.url, local_addr=("127.0.0.3", 0))
        answered = 0
        while (reply := await first.request("ladder", ladder="backgammon", count=500,
                                            all=True))["ok"]:
            assert len(reply["data"]["players"]) == 300
            answered += 1
        # the eighth read went 3 units into debt (a ninth if the reads took 3 s or more)
        assert answered in (8, 9), answered
        refused = await second.request("whois", name=ADMIN)  # another connection, same address
        assert refused["ok"] is False and refused["error"]["code"] == "rate_limited", refused
        retry = RETRY.search(refused["error"]["message"])
        assert retry is not None, refused
        assert refused["error"]["retry_after"] == float(retry.group(1)) > 0
        assert (await third.request("watch", ladder="backgammon"))["ok"]  # not a read
        assert (await other.request("whois", name=ADMIN))["ok"]  # another address
        await asyncio.sleep(refused["error"]["retry_after"])
        assert (await second.request("whois", name=ADMIN))["ok"]
        for prober in (first, second, third, other):
            await prober.close()
    finally:
        await lobby.aclose()


async def test_reads_sent_by_a_client_that_has_gone_are_not_run(
        db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client sends reads behind one the server is still working on, and a change among
    them, then its connection is reset: the change is made, the reads are not."""
    from server.handlers import HANDLERS
    from server.handlers.events import events as list_events

    ran: list[int] = []
    release = asyncio.Event()

    async def counted(call: Any) -> Any:
        ran.append(1)
        if len(ran) == 1:
            await release.wait()
        return await list_events(call)

    monkeypatch.setitem(HANDLERS, "events", counted)
    lobby = LobbyServer(db_path)
    await lobby.start()
    try:
        ws = await connect(lobby.url, open_timeout=10, ping_interval=None)
        assert json.loads(await ws.recv())["event"] == "hello"
        await ws.send(json.dumps({"cmd": "login", "args": {"name": ADMIN,
                                                            "password": ADMIN_PASSWORD}}))
        assert json.loads(await ws.recv())["ok"]
        await ws.send("events")
        await wait_until(lambda: len(ran) == 1, what="the first read to run")
        for _ in range(5):
            await ws.send("events")
        await ws.send(json.dumps({"cmd": "event create", "args": {"name": "Left behind",
                                                                   "ladder": "scrabble"}}))
        for _ in range(5):
            await ws.send("events")
        await (await ws.ping())  # answered once the server has taken every frame before it
        server = lobby.server
        assert server is not None
        [held] = server.transport.connections
        reset(ws)
        await wait_until(lambda: held.protocol.state is State.CLOSED, LIVENESS,
                         "the server to see the connection reset")
        release.set()
        await wait_until(lambda: not server.transport.connections, LIVENESS,
                         "the server to end the connection")
        admin = await lobby.admin()
        listed = await admin.call("events")
    finally:
        await lobby.aclose()
    assert [e["name"] for e in listed["events"]] == ["Left behind"]  # the change was made
    assert len(ran) == 2, f"{len(ran) - 2} reads of a client that had gone were run"


def reset(ws: ClientConnection) -> None:
    """Close the client's socket with a reset (SO_LINGER 0), as a crashed client's kernel
    does: the server's socket fails at once."""
    sock = ws.transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    ws.transport.abort()

