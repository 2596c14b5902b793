"""Shared pieces of ``bench/latency.py`` and ``bench/connections.py``, some also used by
``bench/live_matches.py`` (not a bench itself).

- accounts created offline in a fresh database with the server's own schema and
  hashing (:func:`seed_players`), so that a bench does not register thousands of
  players over the wire;
- the lobby (``matchlobby serve``) and a bare ``websockets`` server as
  subprocesses, with their RSS and CPU time read from ``/proc``;
- client worker processes: ``python bench/_harness.py worker`` holds many light
  raw ``websockets`` clients (one connection and one reader task each, no
  ``LobbyClient``) and takes orders as JSON lines on standard input.

The bare server (``python bench/_harness.py bare --port N``) is the baseline of
both benches: one handler per connection that echoes every frame back, with the
lobby's WebSocket settings (same ``websockets`` version and event loop, no
permessage-deflate, the same ping interval and timeout and size limit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import random
import resource
import signal
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from websockets.asyncio.connection import broadcast

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the repository's packages, whatever the venv's install holds
    sys.path.insert(0, str(ROOT))

PASSWORD = "bench-password"
ADMIN = "director"
# The lobby's WebSocket settings (server/net/transport.py with the default [limits]).
PING_INTERVAL = 20.0
PING_TIMEOUT = 20.0
MAX_SIZE = 64 * 1024 * 16


def clock() -> float:
    """CLOCK_MONOTONIC: on Linux one clock for the whole machine, so readings from
    different processes can be compared (and no NTP step can move it)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC)


def raise_nofile() -> int:
    """Raise this process's open-file limit to the hard limit; children inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def machine() -> str:
    import aiosqlite
    import websockets.version

    cpu = "?"
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as info:
        cpu = next((line.split(":", 1)[1].strip() for line in info
                    if line.startswith("model name")), cpu)
    mem = "?"
    with contextlib.suppress(OSError, StopIteration), open("/proc/meminfo", encoding="ascii") as f:
        kb = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
        mem = f"{kb / 2**20:.0f} GiB"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPUs ({cpu}), {mem} RAM, Python {platform.python_version()}, "
            f"websockets {websockets.version.version}, aiosqlite {aiosqlite.__version__}, "
            f"SQLite {aiosqlite.sqlite_version}; load average {load}")


def announce() -> int:
    """Raise the open-file limit (:func:`raise_nofile`) and print the ``machine:`` line that
    opens a bench's report; returns the limit."""
    nofile = raise_nofile()
    print(f"machine: {machine()}")
    return nofile


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (``None``: no such process)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _cpu(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (all its threads), from /proc."""
    fields = _stat(pid)
    return float("nan") if fields is None else _cpu(fields)


def thread_cpu(pid: int, tid: int) -> float:
    """User + system CPU seconds of thread ``tid`` of process ``pid`` (``nan``: gone)."""
    fields = _stat(f"{pid}/task/{tid}")
    return float("nan") if fields is None else _cpu(fields)


def tree_cpu(root: int) -> float:
    """CPU seconds of process ``root`` and of its children now alive (a PostgreSQL cluster: the
    postmaster and its backends, which run the statements a server sends)."""
    children = (fields for entry in os.listdir("/proc") if entry.isdigit()
                if (fields := _stat(entry)) is not None and int(fields[1]) == root)
    return process_cpu(root) + sum(_cpu(fields) for fields in children)


def rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (VmRSS of /proc/PID/status)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1), nearest rank; ``nan`` for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))
    return ordered[k]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# ---- configuration and accounts --------------------------------------------------------------


def config_text(connections: int, cost_n: int = 16) -> str:
    """The lobby's config for a bench: per-address and per-connection limits lifted.

    Every client connects from 127.0.0.1, which the default cap of 64 connections
    per address would refuse; the message rate and the logins per address are lifted too
    (logins, syncs).
    Everything else (idle timeout, ping, outgoing queue, size) keeps its default.
    """
    return (
        "# matchlobby configuration written by a bench (bench/_harness.py)\n"
        "[password_hashing]   # cheap: logging the clients in is not what is measured\n"
        f"n = {cost_n}\nr = 8\np = 1\n\n"
        "[limits]   # every client comes from 127.0.0.1\n"
        f"connections_per_address = {connections + 64}\n"
        "messages_per_second = 1000000.0\nburst = 1000000\n"
        "# logins in flight count against the address's budget until they succeed\n"
        f"login_address_failures = {connections + 64}\n"
        "address_logins_per_minute = 0   # every client logs in from here\n"
    )


def player_names(count: int) -> list[str]:
    return [f"p{i:05d}" for i in range(count)]


async def seed_players(db: Path, names: Sequence[str], cost_n: int = 16) -> None:
    """Create ``names`` (and the admin ``director``) in a fresh database, offline.

    Same schema (``server.store.schema.migrate``), same hash format
    (``server.accounts.hash_password``); one hash is shared by every account,
    since they share the password (login still verifies it every time).
    """
    from server.accounts import hash_password
    from server.config import PasswordHashing
    from server.store import now
    from server.store.connection import open_connection
    from server.store.schema import migrate

    hashed = hash_password(PASSWORD, PasswordHashing(cost_n, 8, 1))
    conn = open_connection(db)
    try:
        await migrate(conn)
        when = now()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO players (name, name_key, password_hash, role, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [(n, n.casefold(), hashed, "player", when) for n in names]
            + [(ADMIN, ADMIN, hashed, "admin", when)])
        conn.execute("COMMIT")
    finally:
        conn.close()


async def seed_results(url: str, backgammon: Sequence[str], scrabble: Sequence[str],
                       seed: int = 1) -> dict[str, Any]:
    """Give players ratings through the lobby itself, as the admin ``director``.

    One backgammon event with a game (length 1) for each pair of ``backgammon``
    (FIBS: rated at once), and one ČAS event on ``scrabble`` where each player
    plays three games, closed (rated as a batch). Returns the lobby's replies.
    """
    from datetime import UTC, datetime

    from clients.lobby_client import LobbyClient

    rng = random.Random(seed)
    day = datetime.now(UTC).date().isoformat()
    header = "event,date,side_a,side_b,score_a,score_b,length,rated\n"
    out: dict[str, Any] = {}
    async with LobbyClient(url, reconnect=False) as admin:
        await admin.login(ADMIN, PASSWORD)
        if len(backgammon) >= 2:
            event = await admin.call("event create", name="Bench backgammon", ladder="backgammon")
            rows = [f"Bench backgammon,{day},{a},{b},1,0,1,\n" if rng.random() < 0.5
                    else f"Bench backgammon,{day},{a},{b},0,1,1,\n"
                    for a, b in zip(backgammon[0::2], backgammon[1::2], strict=False)]
            for chunk in range(0, len(rows), 4000):
                await admin.call("event import", new=True, event=event["id"],
                                 csv=header + "".join(rows[chunk:chunk + 4000]))
            await admin.call("event close", event=event["id"])
            out["backgammon_games"] = len(rows)
        if len(scrabble) >= 2:
            event = await admin.call("event create", name="Bench scrabble", ladder="scrabble")
            rows = []
            n = len(scrabble)
            for shift in (1, 2, 3):
                for i in range(0, n, 2):
                    a, b = scrabble[i], scrabble[(i + shift * 2 - 1) % n]
                    if a != b:
                        rows.append(f"Bench scrabble,{day},{a},{b},{rng.randint(250, 500)},"
                                    f"{rng.randint(250, 500)},,\n")
            await admin.call("event import", new=True, event=event["id"], csv=header + "".join(rows))
            await admin.call("event close", event=event["id"])
            out["scrabble_games"] = len(rows)
    return out


# ---- servers ---------------------------------------------------------------------------------


@dataclass
class Served:
    url: str
    pid: int
    label: str

    def rss(self) -> int:
        return rss(self.pid)

    def cpu(self) -> float:
        return process_cpu(self.pid)

    def loop_cpu(self) -> float:
        """The CPU of the server's first thread: the one its event loop runs on."""
        return thread_cpu(self.pid, self.pid)


def bench_env(tree: Path = ROOT) -> dict[str, str]:
    """The environment for a `matchlobby` subprocess: the packages of ``tree`` (this
    repository's, or another commit's copy) on PYTHONPATH, ahead of the editable install."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(tree), os.environ.get("PYTHONPATH")) if p)}


def matchlobby_command() -> list[str]:
    """The `matchlobby` command of the venv (or `python -m server.cli` without one)."""
    exe = ROOT / ".venv" / "bin" / "matchlobby"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "server.cli"]


@contextlib.asynccontextmanager
async def _subprocess(cmd: list[str], tmp: Path, log_name: str, port: int, label: str,
                      tree: Path = ROOT) -> AsyncIterator[Served]:
    stderr = open(tmp / log_name, "wb")  # noqa: SIM115  (closed below)
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdout=asyncio.subprocess.PIPE, stderr=stderr, cwd=tmp, env=bench_env(tree),
        preexec_fn=raise_nofile)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if b"listening" not in line:
            raise RuntimeError(f"{label} did not start: {line!r}; see {tmp / log_name}:\n"
                               + (tmp / log_name).read_text(errors="replace")[-2000:])
        yield Served(f"ws://127.0.0.1:{port}/ws", proc.pid, label)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), 60)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        stderr.close()


def lobby_server(tmp: Path, db: Path, config: Path, tree: Path | None = None
                 ) -> contextlib.AbstractAsyncContextManager[Served]:
    """``matchlobby serve`` on a free port, as a subprocess (its own process and core).
    ``tree``: another commit's copy of the repository, whose server runs instead (with this
    venv's packages)."""
    port = free_port()
    exe = ROOT / ".venv" / "bin" / "matchlobby"
    # BENCH_LOBBY_WRAPPER: a Python script run instead of `matchlobby` (for diagnostics).
    wrapper = os.environ.get("BENCH_LOBBY_WRAPPER")
    program = ([sys.executable, "-m", "server.cli"] if tree is not None
               else [sys.executable, wrapper] if wrapper
               else [str(exe) if exe.exists() else "matchlobby"])
    cmd = [*program, "serve", "--db", str(db), "--port", str(port), "--config", str(config)]
    return _subprocess(cmd, tmp, f"lobby-{port}.log", port, "lobby", tree or ROOT)


def bare_server(tmp: Path) -> contextlib.AbstractAsyncContextManager[Served]:
    """The bare ``websockets`` echo server (this file, ``bare``) as a subprocess."""
    port = free_port()
    cmd = [sys.executable, str(Path(__file__).resolve()), "bare", "--port", str(port)]
    return _subprocess(cmd, tmp, f"bare-{port}.log", port, "bare websockets")


async def serve_bare(port: int) -> None:
    """Echo every frame; the lobby's WebSocket settings. Runs until SIGTERM.

    A frame ``{"fanout": [TEXT, ...], "id": ID}`` is not echoed: each TEXT is
    sent to every other connection with ``websockets.broadcast`` (the library's
    way to fan out: the frame is built once and written to each connection
    without waiting), then ``{"id": ID}`` goes back to the sender.
    """
    from websockets.asyncio.server import ServerConnection, broadcast, serve

    connections: set[ServerConnection] = set()

    async def echo(ws: ServerConnection) -> None:
        connections.add(ws)
        try:
            async for message in ws:
                if isinstance(message, str) and message.startswith('{"fanout"'):
                    order = json.loads(message)
                    others = [c for c in connections if c is not ws]
                    for text in order["fanout"]:
                        broadcast(others, text)
                    await ws.send(json.dumps({"id": order.get("id")}))
                    continue
                await ws.send(message)
        finally:
            connections.discard(ws)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with serve(echo, "127.0.0.1", port, compression=None, max_size=MAX_SIZE,
                     ping_interval=PING_INTERVAL, ping_timeout=PING_TIMEOUT):
        print(f"bare websockets echo server listening on ws://127.0.0.1:{port}/ws", flush=True)
        await stop.wait()


async def settle(served: Served, seconds: float = 0.5, quiet: float = 0.05,
                 limit: float = 120.0) -> None:
    """Wait until the server has been (nearly) idle for ``seconds``: its backlog is done."""
    start = time.monotonic()
    last = served.cpu()
    idle_since = time.monotonic()
    while time.monotonic() - start < limit:
        await asyncio.sleep(0.1)
        cpu = served.cpu()
        if cpu - last > quiet * 0.1:
            idle_since = time.monotonic()
        last = cpu
        if time.monotonic() - idle_since >= seconds:
            return


# ---- client workers (parent side) ------------------------------------------------------------


class Worker:
    """One client process; :meth:`ask` sends an order and returns its answer."""

    def __init__(self, proc: asyncio.subprocess.Process, index: int) -> None:
        self.proc = proc
        self.index = index

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def ask(self, op: str, **kwargs: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"op": op, **kwargs}).encode() + b"\n")
        await self.proc.stdin.drain()
        line = await self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"client worker {self.index} exited (status {await self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        if "fatal" in answer:
            raise RuntimeError(f"client worker {self.index}: {answer['fatal']}")
        return answer


class Workers:
    def __init__(self, workers: list[Worker]) -> None:
        self.workers = workers

    def __len__(self) -> int:
        return len(self.workers)

    async def ask(self, op: str, per_worker: Sequence[dict[str, Any]] | None = None,
                  **kwargs: Any) -> list[dict[str, Any]]:
        """The same order to every worker (``per_worker`` adds each one's own arguments)."""
        return list(await asyncio.gather(*(
            w.ask(op, **kwargs, **(per_worker[i] if per_worker else {}))
            for i, w in enumerate(self.workers))))

    def cpu(self) -> float:
        return sum(process_cpu(w.pid) for w in self.workers)


@contextlib.asynccontextmanager
async def client_workers(count: int, tmp: Path) -> AsyncIterator[Workers]:
    procs: list[asyncio.subprocess.Process] = []
    logs = []
    try:
        for i in range(count):
            log = open(tmp / f"worker-{i}.log", "wb")  # noqa: SIM115  (closed below)
            logs.append(log)
            procs.append(await asyncio.create_subprocess_exec(
                sys.executable, str(Path(__file__).resolve()), "worker",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=log,
                env=bench_env(), preexec_fn=raise_nofile, limit=2**26))
        yield Workers([Worker(p, i) for i, p in enumerate(procs)])
    finally:
        for p in procs:
            if p.returncode is None and p.stdin is not None:
                with contextlib.suppress(Exception):
                    p.stdin.write(b'{"op": "exit"}\n')
                    await p.stdin.drain()
        for p in procs:
            try:
                await asyncio.wait_for(p.wait(), 60)
            except TimeoutError:
                p.kill()
                await p.wait()
        for log in logs:
            log.close()


def split(items: Sequence[Any], parts: int) -> list[list[Any]]:
    """``items`` in ``parts`` contiguous slices of nearly equal size."""
    n = len(items)
    bounds = [n * i // parts for i in range(parts + 1)]
    return [list(items[bounds[i]:bounds[i + 1]]) for i in range(parts)]


# ---- client worker (child side) --------------------------------------------------------------


class Conn:
    """One light raw client: a ``websockets`` connection and a task reading it.

    Replies (frames not starting with ``{"event"``) are parsed and matched to
    their request by ``id``; pushes are only counted, except that the arrival of
    a ``ladder_updated`` push is timed. Pushes are never parsed.
    """

    __slots__ = ("ladder_at", "pending", "pushes", "reader", "reply_bytes", "ws")

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.pending: dict[Any, asyncio.Future[tuple[float, dict[str, Any]]]] = {}
        self.pushes = 0
        self.ladder_at: float | None = None
        self.reply_bytes = 0
        self.reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        from websockets.exceptions import ConnectionClosed

        with contextlib.suppress(ConnectionClosed):
            async for frame in self.ws:
                if frame.startswith('{"event"'):
                    self.pushes += 1
                    if frame.startswith('{"event":"ladder_updated"'):
                        self.ladder_at = clock()
                    continue
                at = time.perf_counter()
                message = orjson.loads(frame)
                self.reply_bytes = len(frame)
                future = self.pending.pop(message.get("id"), None)
                if future is not None and not future.done():
                    future.set_result((at, message))
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError("connection closed"))

    async def call(self, frame: str, rid: Any, timeout: float = 120.0
                   ) -> tuple[float, dict[str, Any]]:
        """Send ``frame`` (whose id is ``rid``); (perf_counter at the reply, the reply)."""
        future: asyncio.Future[tuple[float, dict[str, Any]]] = \
            asyncio.get_running_loop().create_future()
        self.pending[rid] = future
        broadcast((self.ws,), frame)  # written at once, as the server writes; no send lock
        return await asyncio.wait_for(future, timeout)


class ClientSide:
    """The connections of one worker process, in named groups (one per server)."""

    def __init__(self) -> None:
        self.groups: dict[str, list[Conn]] = {}
        self.next_id = 0

    def rid(self) -> int:
        self.next_id += 1
        return self.next_id

    async def connect(self, group: str, url: str, count: int, concurrency: int, hello: bool,
                      logins: list[str] | None = None, password: str = PASSWORD
                      ) -> dict[str, Any]:
        """Open ``count`` connections; with ``logins``, each logs in as soon as it is open."""
        from websockets.asyncio.client import connect

        sem = asyncio.Semaphore(concurrency)
        failed: list[str] = []

        async def one(i: int) -> Conn | None:
            async with sem:
                conn = None
                for attempt in range(5):
                    try:
                        # No client-side pings, as from a browser; the server pings every 20 s.
                        ws = await connect(url, compression=None, max_size=2**24, open_timeout=120,
                                           ping_interval=None, close_timeout=10)
                        if hello:
                            first = await asyncio.wait_for(ws.recv(), 60)
                            assert str(first).startswith('{"event":"hello"'), first
                        conn = Conn(ws)
                        break
                    except Exception as e:
                        if attempt == 4:
                            failed.append(repr(e))
                        await asyncio.sleep(0.2 * (attempt + 1))
                if conn is not None and logins is not None:
                    rid = self.rid()
                    frame = json.dumps({"id": rid, "cmd": "login",
                                        "args": {"name": logins[i], "password": password}})
                    try:
                        _, message = await conn.call(frame, rid)
                    except Exception as e:
                        message = {"error": repr(e)}
                    if not message.get("ok"):
                        failed.append(json.dumps(message)[:200])
                return conn

        start = time.perf_counter()
        conns = await asyncio.gather(*(one(i) for i in range(count)))
        self.groups.setdefault(group, []).extend(c for c in conns if c is not None)
        return {"connected": sum(c is not None for c in conns), "failed": len(failed),
                "errors": failed[:3], "seconds": time.perf_counter() - start}

    async def call_all(self, group: str, cmd: str, args: dict[str, Any] | None = None,
                       args_list: list[dict[str, Any]] | None = None, concurrency: int = 100
                       ) -> dict[str, Any]:
        """Every connection sends ``cmd`` once (``args_list[i]`` for the i-th) and awaits the reply.

        Against the bare server the frame comes back as it went: that is its reply.
        """
        sem = asyncio.Semaphore(concurrency)
        errors: list[str] = []

        async def one(i: int, conn: Conn) -> bool:
            async with sem:
                rid = self.rid()
                frame = json.dumps({"id": rid, "cmd": cmd,
                                    "args": args_list[i] if args_list is not None else args or {}})
                try:
                    _, message = await conn.call(frame, rid)
                except Exception as e:
                    errors.append(repr(e))
                    return False
                if message.get("ok") is False:
                    errors.append(json.dumps(message.get("error"))[:200])
                    return False
                return True

        start = time.perf_counter()
        ok = await asyncio.gather(*(one(i, c) for i, c in enumerate(self.groups.get(group, []))))
        return {"ok": sum(ok), "failed": len(ok) - sum(ok), "errors": errors[:3],
                "seconds": time.perf_counter() - start}

    async def load(self, group: str, seconds: float, kinds: list[str], names: list[str], pad: int,
                   seed: int) -> dict[str, Any]:
        """Each connection sends one command a second, at a random phase, for ``seconds``.

        ``kinds`` are taken in turn per connection (``whois``/``rating`` against the
        lobby, ``echo`` against the bare server: a JSON frame padded with ``pad``
        characters). A round trip runs from just before ``send`` to the reader
        task's first look at the reply. Lag: how late each send left against its
        schedule (this process's own delay).
        """
        # The clients are the instrument: their own garbage collector must not stop them in
        # the middle of a run (a full collection of this process takes 100+ ms on a busy VM).
        gc.collect()
        gc.disable()
        rng = random.Random(seed)
        rtts: dict[str, list[float]] = {k: [] for k in kinds}
        lags: list[float] = []
        errors: list[str] = []
        start = time.perf_counter() + 0.5
        end = start + seconds
        padding = "x" * pad
        conns = self.groups.get(group, [])
        for c in conns:
            c.reply_bytes = 0

        async def client(conn: Conn, phase: float, first_kind: int) -> None:
            tick = 0
            while True:
                due = start + phase + tick
                if due >= end:
                    return
                delay = due - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                kind = kinds[(first_kind + tick) % len(kinds)]
                rid = self.rid()
                if kind == "echo":
                    frame = json.dumps({"id": rid, "cmd": "echo", "args": {"pad": padding}})
                else:
                    frame = json.dumps({"id": rid, "cmd": kind, "args": {"name": rng.choice(names)}})
                sent = time.perf_counter()
                lags.append(sent - due)
                try:
                    at, message = await conn.call(frame, rid)
                except Exception as e:
                    errors.append(repr(e))
                    return
                if message.get("ok") is False:
                    errors.append(json.dumps(message.get("error"))[:200])
                rtts[kind].append(at - sent)
                tick += 1

        cpu = time.process_time()
        try:
            await asyncio.gather(*(client(c, rng.random(), i % len(kinds))
                                   for i, c in enumerate(conns)))
        finally:
            gc.enable()
        wall = time.perf_counter() - start
        sizes = [c.reply_bytes for c in conns if c.reply_bytes]
        return {"rtts": {k: [round(x * 1e6) for x in v] for k, v in rtts.items()},
                "lags": [round(x * 1e6) for x in lags], "errors": errors[:3],
                "error_count": len(errors), "cpu": time.process_time() - cpu, "wall": wall,
                "reply_bytes": statistics.mean(sizes) if sizes else 0}

    def arm(self, group: str) -> dict[str, Any]:
        for c in self.groups.get(group, []):
            c.ladder_at = None
        return {"armed": len(self.groups.get(group, []))}

    async def wait_ladder(self, group: str, timeout: float) -> dict[str, Any]:
        """Wait until every connection has had ``ladder_updated`` (or ``timeout``); the times."""
        conns = self.groups.get(group, [])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(c.ladder_at is None for c in conns):
            await asyncio.sleep(0.01)
        return {"times": [c.ladder_at for c in conns],
                "open": sum(c.ws.close_code is None for c in conns)}

    def stats(self, group: str) -> dict[str, Any]:
        conns = self.groups.get(group, [])
        return {"connections": len(conns), "open": sum(c.ws.close_code is None for c in conns),
                "pushes": sum(c.pushes for c in conns)}

    async def close(self, group: str | None = None, concurrency: int = 200) -> dict[str, Any]:
        sem = asyncio.Semaphore(concurrency)
        names = [group] if group is not None else list(self.groups)
        # Last connected first: spectators before logged-in players, whose sign-outs push
        # presence to every session still there that listed `who`.
        conns = [c for g in names for c in reversed(self.groups.pop(g, []))]

        async def one(c: Conn) -> None:
            async with sem:
                with contextlib.suppress(Exception):
                    await c.ws.close()
                c.reader.cancel()

        start = time.perf_counter()
        await asyncio.gather(*(one(c) for c in conns))
        return {"closed": len(conns), "seconds": time.perf_counter() - start}


async def worker_main() -> None:
    raise_nofile()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**26)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    side = ClientSide()

    def answer(obj: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    while True:
        line = await reader.readline()
        if not line:
            break
        order = json.loads(line)
        op = order.pop("op")
        try:
            if op == "exit":
                await side.close()
                break
            handlers: dict[str, Callable[..., Any]] = {
                "connect": side.connect, "call": side.call_all, "load": side.load, "arm": side.arm,
                "wait_ladder": side.wait_ladder, "stats": side.stats, "close": side.close}
            if op not in handlers:
                answer({"fatal": f"unknown order {op!r}"})
                continue
            result = handlers[op](**order)
            answer(await result if asyncio.iscoroutine(result) else result)
        except Exception as e:  # report, keep serving
            answer({"fatal": f"{op}: {e!r}"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bench helper: a bare server or a client worker")
    sub = parser.add_subparsers(dest="what", required=True)
    bare = sub.add_parser("bare")
    bare.add_argument("--port", type=int, required=True)
    sub.add_parser("worker")
    args = parser.parse_args(argv)
    raise_nofile()
    if args.what == "bare":
        asyncio.run(serve_bare(args.port))
    else:
        asyncio.run(worker_main())
    return 0


if __name__ == "__main__":
    sys.exit(main())
