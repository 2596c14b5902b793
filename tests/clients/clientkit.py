"""Helpers for the client tests: a real server on a free port, recording clients, the FIBS
formula written out from RATINGS.md §1, and the terminal client as a real process.

Imported by ``conftest.py`` and the test modules (pytest puts this directory on
``sys.path``; the tests have no ``__init__.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import math
import os
import re
import select
import struct
import sys
import termios
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clients.lobby_client import LobbyClient, LobbyError, Push
from clients.models import RatingChange
from server.app import RunningServer, start_server
from server.config import Config, PasswordHashing

ROOT = Path(__file__).resolve().parents[2]
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"
PASSWORD = "pw-secret"
ADMIN = "root"
ADMIN_PASSWORD = "root-secret"
FAST_HASHING = PasswordHashing(n=2**10)
FAST_CONFIG = "[password_hashing]\nn = 1024\n"
DROP_TIMEOUT = 0.4
"""The servers' drop timeout: short, so that ``claim`` can be tested without waiting."""
REQUEST_TIMEOUT = 10.0
PROCESS_TIMEOUT = 30.0


# ---- clients that remember every reply --------------------------------------------------


class RecordingClient(LobbyClient):
    """A :class:`LobbyClient` that keeps every reply it was handed (``ok`` or not)."""

    def __init__(self, url: str, **kwargs: Any) -> None:
        super().__init__(url, **kwargs)
        self.replies: list[dict[str, Any]] = []

    async def request(self, cmd: str, args: dict[str, Any] | None = None,
                      timeout: float = REQUEST_TIMEOUT, retry: bool = False,
                      request_id: str | None = None) -> dict[str, Any]:
        reply = await super().request(cmd, args, timeout, retry=retry, request_id=request_id)
        self.replies.append(reply)
        return reply

    async def send_line(self, line: str, timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        reply = await super().send_line(line, timeout)
        self.replies.append(reply)
        return reply

    @property
    def name(self) -> str:
        assert self.credentials is not None, "not logged in"
        return self.credentials[0]


# ---- one test's server ------------------------------------------------------------------


class Lobby:
    """A server on a real SQLite file: start, stop, start again on the same port and file."""

    def __init__(self, db: Path, drop_timeout: float = DROP_TIMEOUT) -> None:
        self.db = db
        self.config = Config(database=str(db), password=FAST_HASHING, drop_timeout=drop_timeout)
        self.server: RunningServer | None = None
        self.port: int | None = None
        self.clients: list[RecordingClient] = []

    async def start(self) -> RunningServer:
        """Start on a free port the first time, on the same port afterwards."""
        assert self.server is None, "already running"
        self.server = await start_server(self.config, port=self.port or 0)
        self.port = self.server.port
        return self.server

    async def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop()

    @property
    def url(self) -> str:
        assert self.port is not None
        return f"ws://127.0.0.1:{self.port}/ws"

    async def client(self, reconnect: bool = False,
                     backoff: tuple[float, float] = (0.02, 0.2)) -> RecordingClient:
        c = RecordingClient(self.url, reconnect=reconnect, backoff=backoff)
        self.clients.append(c)
        hello = await c.connect()
        assert hello["server"] == "matchlobby" and hello["protocol"] == 1
        return c

    async def player(self, name: str, reconnect: bool = False) -> RecordingClient:
        """A new account ``name``, logged in on its own connection."""
        c = await self.client(reconnect=reconnect)
        assert await c.register(name, PASSWORD) == {"player": name, "role": "player"}
        return c

    async def players(self, *names: str) -> list[RecordingClient]:
        return [await self.player(n) for n in names]

    async def admin(self) -> RecordingClient:
        c = await self.client()
        data = await c.login(ADMIN, ADMIN_PASSWORD)
        assert data["role"] == "admin"
        return c

    async def aclose(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()
        await self.stop()


# ---- holding a request in flight -------------------------------------------------------


class Gate:
    """A stand-in handler that waits until released: a request the server is still working on.

    Installed for one command (see the ``gate`` fixture) so that a test can drop the
    connection, or close the client, while a request is certainly in flight.
    """

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def handler(self, lobby: Any, session: Any, args: dict[str, Any]) -> Any:
        self.entered.set()
        await self.release.wait()
        return {"held": True}


# ---- the FIBS formula of RATINGS.md §1, written out independently ----------------------


def fibs_deltas(r_winner: float, e_winner: int, r_loser: float, e_loser: int, n: int
                ) -> tuple[float, float]:
    """(Δ winner, Δ loser) for a rated match of length ``n``, from the pre-match values."""
    d = abs(r_winner - r_loser)
    underdog = 1 / (10 ** (d * math.sqrt(n) / 2000) + 1)
    favourite = 1 - underdog

    def win_probability(own: float, other: float) -> float:
        if own == other:
            return 0.5
        return favourite if own > other else underdog

    def experience_factor(e: int) -> float:
        return max(1.0, 5 - (e + n) / 100)

    dw = 4 * experience_factor(e_winner) * math.sqrt(n) * (1 - win_probability(r_winner, r_loser))
    dl = 4 * experience_factor(e_loser) * math.sqrt(n) * (0 - win_probability(r_loser, r_winner))
    return dw, dl


@dataclass
class FibsEntry:
    rating: float = 1500.0
    experience: int = 0
    games: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)


class FibsLadder:
    """What a FIBS ladder should hold, advanced match by match."""

    def __init__(self) -> None:
        self.players: dict[str, FibsEntry] = {}

    def play(self, winner: str, loser: str, n: int) -> dict[str, tuple[float, float]]:
        """Rate one match; returns ``{player: (before, after)}``."""
        w = self.players.setdefault(winner, FibsEntry())
        lo = self.players.setdefault(loser, FibsEntry())
        dw, dl = fibs_deltas(w.rating, w.experience, lo.rating, lo.experience, n)
        out = {winner: (w.rating, w.rating + dw), loser: (lo.rating, lo.rating + dl)}
        for entry, delta in ((w, dw), (lo, dl)):
            entry.history.append((entry.rating, entry.rating + delta))
            entry.rating += delta
            entry.experience += n
            entry.games += 1
        return out

    def ranking(self) -> list[str]:
        return [n for n, _ in sorted(self.players.items(),
                                     key=lambda x: (-x[1].rating, x[0].casefold()))]

    def rank(self, name: str) -> int:
        return self.ranking().index(name) + 1


def close(a: float | None, b: float | None) -> bool:
    """Equal up to floating-point noise (the server may evaluate the formula in another order)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def check_changes(changes: Sequence[RatingChange | dict[str, Any]],
                  expected: dict[str, tuple[float, float]]) -> None:
    """A reply's or push's ``changes`` against ``{player: (before, after)}``."""
    rows = [c if isinstance(c, RatingChange) else
            RatingChange(c["player"], c["before"], c["after"], c["change"]) for c in changes]
    assert sorted(c.player for c in rows) == sorted(expected)
    for c in rows:
        before, after = expected[c.player]
        assert close(c.before, before), (c, before)
        assert close(c.after, after), (c, after)
        assert c.change is not None and close(c.change, after - before), c


# ---- playing ------------------------------------------------------------------------------


async def start_match(a: RecordingClient, b: RecordingClient, length: int | str = 1,
                      ladder: str = "backgammon") -> int:
    """``a`` invites ``b``, ``b`` joins; returns the match id."""
    await a.call("invite", name=b.name, ladder=ladder, length=length)
    await b.next_push("invited", where=lambda p: p["data"]["from"] == a.name)
    started = await b.call("join", name=a.name)
    assert (await a.next_push("match_started"))["data"] == started
    return int(started["match"])


async def expect_error(aw: Awaitable[Any], code: str) -> LobbyError:
    """``aw`` must raise :class:`LobbyError` with ``code`` and a message for people."""
    try:
        await aw
    except LobbyError as e:
        assert e.code == code, (e.code, e.message)
        assert e.message.strip(), "a refusal explains itself"
        assert e.reply["ok"] is False and e.reply["error"]["code"] == code
        return e
    raise AssertionError(f"expected a {code!r} refusal")


async def settle(c: LobbyClient) -> list[Push]:
    """Every push already on its way to ``c``: one round trip, then what has arrived.

    The server answers a connection's frames in order and queues the pushes a
    command causes before it reads the next frame, so after this round trip
    every push caused earlier (by anyone) has been delivered.
    """
    await c.call("help", command="help")
    return c.drain_pushes()


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float = 10.0,
                   what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def results_text(rows: Iterable[str]) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


# ---- the command line ---------------------------------------------------------------------


def matchlobby_command() -> list[str]:
    script = Path(sys.executable).with_name("matchlobby")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "server.cli"]


def process_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()


async def run_matchlobby(args: Sequence[str], stdin: str = "", cwd: Path = ROOT) -> Completed:
    """``matchlobby ARGS`` as a real process, without blocking the loop the server runs in."""
    proc = await asyncio.create_subprocess_exec(
        *matchlobby_command(), *args, cwd=cwd, env=process_env(),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin.encode()), PROCESS_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return Completed(proc.returncode, out.decode(), err.decode())


async def run_batch(url: str, commands: Sequence[str], *flags: str) -> Completed:
    """``matchlobby client URL --batch [FLAGS]`` with one command per standard-input line."""
    done = await run_matchlobby(["client", url, "--batch", *flags], "".join(
        c + "\n" for c in commands))
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


async def rate_offline(system: str, rows: Iterable[str], tmp: Path) -> dict[str, Any]:
    """``matchlobby rate SYSTEM FILE --format json``: the same results rated with no server."""
    path = tmp / f"{system}-results.csv"
    path.write_text(results_text(rows), encoding="utf-8")
    done = await run_matchlobby(["rate", system, str(path), "--format", "json"], cwd=tmp)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# ---- a terminal for the interactive client ------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x08|\x07")


def screen_text(raw: bytes) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return ANSI.sub("", raw.decode("utf-8", "replace")).replace("\r", "")


class Terminal:
    """A process on a pseudo-terminal (80 columns would wrap tables; it gets 200)."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self.proc = proc
        self.master = master
        self.raw = b""
        self.mark = 0  # where the next expect starts, in screen_text(raw)

    @classmethod
    async def spawn(cls, args: Sequence[str], env: dict[str, str]) -> Terminal:
        import pty

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        proc = await asyncio.create_subprocess_exec(
            *args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT,
            start_new_session=True)
        os.close(slave)
        return cls(proc, master)

    def _read_some(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError as e:  # EIO: the other side is closed
            if e.errno != errno.EIO:
                raise
            return False
        self.raw += chunk
        return bool(chunk)

    async def expect(self, pattern: str, timeout: float = 10.0) -> str:
        """Wait until the text written after the previous match matches; return that text."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = screen_text(self.raw)
            found = regex.search(text, self.mark)
            if found:
                start, self.mark = self.mark, found.end()
                return text[start:found.end()]
            if time.monotonic() > deadline:
                raise AssertionError(f"{pattern!r} did not appear; the terminal shows:\n"
                                     f"{text[self.mark:]}")
            if not await asyncio.to_thread(self._read_some, 0.05):
                await asyncio.sleep(0.05)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    async def wait(self, timeout: float = 10.0) -> int:
        async def drain() -> None:
            while await asyncio.to_thread(self._read_some, 0.05):
                if self.proc.returncode is not None:
                    break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drain(), timeout)
        return await asyncio.wait_for(self.proc.wait(), timeout)

    async def aclose(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        with contextlib.suppress(OSError):
            os.close(self.master)
