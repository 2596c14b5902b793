"""What the kernel holds for watchers that never read, while a big ladder changes.

A real ``matchlobby serve`` holds a backgammon ladder of PLAYERS players. WATCHERS
connections with a 4 KiB receive buffer watch it, then read nothing; the admin changes the
ladder again and again (ten games imported: one ``ladder_updated`` to each watcher), until
every watcher has been disconnected for not reading. Meanwhile the send queue of each of the
server's sockets is read from /proc/net/tcp (``tx_queue``, what ``SIOCOUTQ`` gives: bytes the
peer has not acknowledged, sent or not). It must stay within the socket's capped send buffer
(``limits.send_buffer``, which the kernel doubles), however big the ladder: the push is a few
KB, and the kernel may not keep more than the cap, which counts in the budget of unread bytes.
After the drop, once the watchers have had their grace, the server's sockets must be gone,
queues and all, while the watchers still hold their end (a closed socket would otherwise keep
its queue for as long as the peer keeps its window shut). A bystander is answered all along.

Then, with a send buffer bigger than the budget (``send_buffer`` of 4 MiB; 0 leaves it to the
kernel, which grows it as far), a client that never reads asks for pages of the ladder: what
the kernel holds for it counts in its budget, so it is disconnected before the kernel holds
more than the budget and one reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from testkit import kernel
from testkit.cli import admin_template
from testkit.constants import ADMIN, ADMIN_PASSWORD, LIVENESS
from testkit.figures import group
from testkit.probes import Prober, bystander, slow_socket
from testkit.server_process import ServerProcess
from websockets.asyncio.client import ClientConnection, connect

from server.config import Limits
from server.net.transport import UNREAD_GRACE

PLAYERS = 4000
WATCHERS = 16
BUDGET = 256 * 1024  # lowered, so that a hundred or so small pushes fill it
GAMES = 10  # a change: as many players moved as a ladder_updated lists
SEND_BUFFER = Limits().send_buffer
KERNEL_CAP = 2 * SEND_BUFFER  # the kernel doubles SO_SNDBUF for its bookkeeping
MAX_CHANGES = 1000
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"
CONFIG = ("[password_hashing]\nn = 1024\n"
          f"[limits]\nmessages_per_second = 1000.0\nburst = 1000\noutgoing_bytes = {BUDGET}\n"
          # the budget is the limit under test: no ping, whose timeout would close them too
          "ping_interval = 0\n")
ROOMY = (CONFIG.replace(f"outgoing_bytes = {BUDGET}", f"outgoing_bytes = {BUDGET // 2}")
         + f"send_buffer = {4 * 1024 * 1024}\n")
PAGE = "ladder backgammon 1 500 --all"
FIGURES = group("kernel buffer figures")
pytestmark = pytest.mark.skipif(not kernel.available(), reason="reads /proc/net/tcp")


def game(a: int, b: int, won: int = 1) -> str:
    return f"Open,2026-03-14,player{a:04d},player{b:04d},{won},{1 - won},1,"


@pytest.fixture(scope="module")
def big_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """PLAYERS rated backgammon players, from one event (id 1, still open), made over the
    protocol by the admin of ``matchlobby user add --admin``."""
    db, config = admin_template(tmp_path_factory.mktemp("kernel-template"), CONFIG)
    server = ServerProcess(db, config).start()
    try:
        async def build() -> None:
            await server.ready()
            admin = await Prober.open(server.url)
            await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
            assert (await admin.call("event create", name="Open", ladder="backgammon"))["id"] == 1
            rows = [game(2 * i, 2 * i + 1, i % 2) for i in range(PLAYERS // 2)]
            for start in range(0, len(rows), 500):  # a frame holds at most 64 KiB
                done = await admin.request("event import", timeout=60, event=1, new=True,
                                           csv="\n".join([HEADER, *rows[start:start + 500]]) + "\n")
                assert done["ok"], done
            await admin.close()
        asyncio.run(build())
    finally:
        server.stop()
    return db, config


async def started(big_db: tuple[Path, Path], folder: Path, config: str | None = None
                  ) -> ServerProcess:
    """A server on a copy of the big database (under another configuration, if given)."""
    db = folder / "lobby.db"
    shutil.copyfile(big_db[0], db)
    path = big_db[1]
    if config is not None:
        path = folder / "matchlobby.toml"
        path.write_text(config, encoding="utf-8")
    proc = ServerProcess(db, path).start()
    await proc.ready()
    return proc


@pytest.fixture
async def server(big_db: tuple[Path, Path], tmp_path: Path) -> AsyncIterator[ServerProcess]:
    proc = await started(big_db, tmp_path)
    try:
        yield proc
    finally:
        proc.stop()


async def deaf_watcher(server: ServerProcess) -> ClientConnection:
    """Watches the ladder, then reads nothing more: not even its library (a 4 KiB receive
    buffer, reading paused), so its window soon closes."""
    ws = await connect(server.url, sock=slow_socket(server.port), max_queue=1, max_size=None,
                       open_timeout=10, ping_interval=None)
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["event"] == "hello"
    await ws.send(json.dumps({"cmd": "watch", "args": {"ladder": "backgammon"}}))
    assert json.loads(await asyncio.wait_for(ws.recv(), LIVENESS))["ok"] is True
    ws.transport.pause_reading()
    return ws


def kb(n: float) -> str:
    return f"{n / 1024:,.0f} KB"


async def test_watchers_that_never_read_hold_little_in_the_kernel_and_nothing_once_dropped(
        server: ServerProcess) -> None:
    watchers = [await deaf_watcher(server) for _ in range(WATCHERS)]
    ports = {ws.local_address[1] for ws in watchers}

    def queues() -> dict[int, kernel.TcpSocket]:
        return {p: s for p, s in kernel.server_side(server.port).items() if p in ports}

    assert len(queues()) == WATCHERS
    tcp_before = tcp_peak = kernel.tcp_memory()
    each = total = changes = 0
    name = (f"{WATCHERS} watchers that never read, a {PLAYERS:,}-player ladder changed again and "
            f"again (send_buffer {SEND_BUFFER // 1024} KiB, budget {BUDGET // 1024} KiB)")
    reader = await Prober.open(server.url)  # a watcher that reads everything
    await reader.call("watch", ladder="backgammon")
    admin = await Prober.open(server.url)
    await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)

    async def dropped() -> int:
        """Watchers the server no longer holds (beside them: the reader and the bystander)."""
        return WATCHERS - (int((await admin.call("who"))["spectators"]) - 2)

    async with bystander(server.url) as good:
        assert await dropped() == 0
        while changes < MAX_CHANGES and await dropped() < WATCHERS:
            first = changes * 2 * GAMES % PLAYERS
            rows = [game(first + 2 * i, first + 2 * i + 1) for i in range(GAMES)]
            done = await admin.request("event import", timeout=30, event=1,
                                       csv="\n".join([HEADER, *rows]) + "\n")
            assert done["ok"], done
            changes += 1
            now = queues()
            each = max([each, *(s.queued for s in now.values())])
            total = max(total, sum(s.queued for s in now.values()))
            tcp_peak = max(tcp_peak, kernel.tcp_memory())
        async with asyncio.timeout(LIVENESS):  # the reading watcher has every update
            while sum(p["event"] == "ladder_updated" for p in reader.pushes) < changes:
                await asyncio.sleep(0.01)
        push = max(len(json.dumps(p)) for p in reader.pushes if p["event"] == "ladder_updated")
        FIGURES[name] = (
            f"{changes} changes, each a ladder_updated of {push:,} bytes; the kernel's send queue "
            f"of a watcher at most {kb(each)} (cap {kb(KERNEL_CAP)}), of all {WATCHERS} at most "
            f"{kb(total)}; {await dropped()} disconnected")
        assert push < 8 * 1024, "a ladder_updated grew with the ladder"
        assert each <= KERNEL_CAP, f"the kernel held {kb(each)} for a watcher (cap {kb(KERNEL_CAP)})"
        assert each >= SEND_BUFFER // 2, "the watchers' queues never filled: the test tests nothing"
        assert total <= WATCHERS * KERNEL_CAP
        assert await dropped() == WATCHERS, "some watchers were never disconnected"
        assert "does not read its messages" in server.output()

        # the watchers keep their end open, their window shut; the server's end must go
        let_go = time.monotonic()
        left = queues()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(UNREAD_GRACE + 3 * LIVENESS):
                while left:
                    await asyncio.sleep(0.05)
                    left = queues()
        gone_after = time.monotonic() - let_go
        tcp_after = kernel.tcp_memory()
    assert all(not ws.transport.is_closing() for ws in watchers)  # still held by the clients
    for ws in watchers:
        ws.transport.abort()
    await admin.close()
    await reader.close()
    FIGURES[name] += (
        f"; once the server had let them go (each cut {UNREAD_GRACE:g} s after its drop), "
        f"{len(left)} of their sockets left ({gone_after:.1f} s later) while the watchers still "
        f"held theirs"
        f"{'' if not left else ', holding ' + kb(sum(s.queued for s in left.values()))}; "
        f"host TCP memory {kb(tcp_before)} → peak {kb(tcp_peak)} → {kb(tcp_after)} (every "
        f"process's); bystander: {len(good.times)} whois answered, slowest "
        f"{max(good.times):.3f} s")
    assert not left, f"the kernel kept the sockets of watchers cut off: {left}"
    assert max(good.times) < LIVENESS



async def test_what_the_kernel_holds_counts_in_the_budget(big_db: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    budget = BUDGET // 2
    server = await started(big_db, tmp_path, ROOMY)
    try:
        reader = await Prober.open(server.url)
        reply = len(json.dumps(await reader.request("ladder", ladder="backgammon", count=500,
                                                    all=True)))
        await reader.close()
        deaf = await connect(server.url, sock=slow_socket(server.port), max_queue=1,
                             max_size=None, open_timeout=10, ping_interval=None)
        assert json.loads(await asyncio.wait_for(deaf.recv(), LIVENESS))["event"] == "hello"
        deaf.transport.pause_reading()
        port = deaf.local_address[1]
        held = 0

        def queued() -> int:
            return kernel.server_side(server.port).get(port, kernel.TcpSocket("?", 0)).queued

        async with bystander(server.url) as good:
            # one page at a time, each written whole to the kernel (it has room) before the
            # next is asked for, for up to 3 MB: nothing waits in the server
            for _ in range(3 * 1024 * 1024 // reply):
                if "does not read its messages" in server.output():
                    break
                before = queued()
                await deaf.send(PAGE)
                async with asyncio.timeout(30):
                    while queued() < before + reply // 2 and \
                            "does not read its messages" not in server.output():
                        await asyncio.sleep(0.005)
                held = max(held, queued())
            dropped = "does not read its messages" in server.output()
            assert (await good.call("whois", name=ADMIN))["player"] == ADMIN
        deaf.transport.abort()
    finally:
        server.stop()
    lines = [x for x in server.output().splitlines() if "does not read its messages" in x]
    line = lines[0].split(": ", 1)[1] if lines else "never disconnected"
    FIGURES[f"a client that never reads, a send buffer of 4 MiB (budget {budget // 1024} KiB, "
            f"replies of {reply // 1024} KiB)"] = (
        f"the kernel held at most {kb(held)} for it; {line}; bystander: "
        f"{len(good.times)} whois answered, slowest {max(good.times):.3f} s")
    assert held <= budget + reply, (
        f"the kernel held {kb(held)} for a client over its budget of {kb(budget)}")
    assert dropped
    assert max(good.times) < LIVENESS
