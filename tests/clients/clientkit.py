"""Helpers for the client tests: a real server on a free port with recording clients, a
request held in flight, the command line and the terminal client as real processes.

Imported by ``conftest.py`` and the test modules (pytest puts this directory on
``sys.path``; the tests have no ``__init__.py``). What every suite shares (the
accounts, the FIBS formula, starting a match, the command line) is in
``tests/kit/sharedkit.py``; the names the client tests use are also here.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import re
import select
import struct
import termios
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sharedkit import (
    ADMIN,
    ADMIN_PASSWORD,
    FAST_HASHING,
    PASSWORD,
    ROOT,
    FibsModel,
    LobbyServer,
    check_changes,
    cli_env,
    close,
    expect_error,
    fibs_changes,
    matchlobby_command,
    name_of,
    rate_file,
    results_text,
    start_match,
    today,
)

from clients.lobby_client import LobbyClient, Push
from server.app import RunningServer
from server.config import Config

__all__ = [  # this folder's helpers, and the shared ones (tests/kit/sharedkit.py) its tests use
    "ADMIN", "ADMIN_PASSWORD", "DROP_TIMEOUT", "PASSWORD", "PROCESS_TIMEOUT", "REQUEST_TIMEOUT",
    "ROOT", "Completed", "FibsModel", "Gate", "Lobby", "RecordingClient", "Terminal",
    "check_changes", "cli_env", "close", "expect_error", "fibs_changes", "matchlobby_command",
    "rate_file", "results_text", "run_batch", "run_matchlobby", "screen_text", "settle",
    "start_match", "today", "wait_for",
]

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
        return name_of(self)


# ---- one test's server ------------------------------------------------------------------


class Lobby(LobbyServer[RecordingClient]):
    """A server on a real SQLite file: start, stop, start again on the same port and file."""

    def __init__(self, db: Path, drop_timeout: float = DROP_TIMEOUT) -> None:
        super().__init__(db, RecordingClient)
        self.config = Config(database=str(db), password=FAST_HASHING, drop_timeout=drop_timeout)

    async def start(self) -> RunningServer:
        """Start on a free port the first time, on the same port afterwards."""
        return await self.serve(self.config, self.port or 0)


# ---- holding a request in flight -------------------------------------------------------


class Gate:
    """A stand-in handler that waits until released: a request the server is still working on.

    Installed for one command (see the ``gate`` fixture) so that a test can drop the
    connection, or close the client, while a request is certainly in flight.
    """

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def handler(self, call: Any) -> Any:
        self.entered.set()
        await self.release.wait()
        return {"held": True}


# ---- playing ------------------------------------------------------------------------------


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


# ---- the command line ---------------------------------------------------------------------


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
        *matchlobby_command(), *args, cwd=cwd, env=cli_env(),
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
