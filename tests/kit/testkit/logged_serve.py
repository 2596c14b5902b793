"""``matchlobby serve`` as a process whose standard error is kept apart (its log), signalled
as an operator would (SIGHUP to reload, SIGTERM to stop)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from testkit.children import die_with_parent
from testkit.cli import cli_env, matchlobby_command
from testkit.server_process import ANNOUNCEMENT, free_port


class LoggedServe:
    def __init__(self, folder: Path, config: Path, *flags: str, db: str | None = None) -> None:
        self.folder, self.config, self.flags = folder, config, flags
        self.db = db or str(folder / "lobby.db")
        self.port = free_port()
        self.out, self.err = folder / "serve.out", folder / "serve.err"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    async def start(self) -> LoggedServe:
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [*matchlobby_command(), "serve", "--db", self.db,
                 "--config", str(self.config), "--port", str(self.port), *self.flags],
                cwd=self.folder, env=cli_env(), stdout=out, stderr=err,
                preexec_fn=die_with_parent())
        await self.until(lambda: ANNOUNCEMENT in self.out.read_text(), "it listens")
        return self

    def stderr(self) -> str:
        return self.err.read_text(encoding="utf-8", errors="replace")

    def lines(self) -> list[str]:
        return self.stderr().splitlines()

    async def until(self, done: object, what: str, timeout: float = 30.0) -> None:
        """Wait for ``done()`` (a callable) to be true while the server runs."""
        assert callable(done)
        began = time.monotonic()
        while not done():
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited with {self.proc.returncode} before "
                                     f"{what}:\n{self.stderr()[-3000:]}")
            if time.monotonic() - began > timeout:
                raise AssertionError(f"not within {timeout} s: {what}\n{self.stderr()[-3000:]}")
            await asyncio.sleep(0.02)

    async def reload(self, *expected: str) -> list[str]:
        """SIGHUP, then the log lines after it once one of them has each of ``expected``."""
        assert self.proc is not None
        before = len(self.lines())
        self.proc.send_signal(signal.SIGHUP)

        def said() -> bool:
            new = self.lines()[before:]
            return all(any(e in line for line in new) for e in expected)
        await self.until(said, f"the reload said {expected}")
        return self.lines()[before:]

    def stop(self) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)


def config_file(path: Path, *sections: str) -> Path:
    """A configuration file with fast password hashing and ``sections``."""
    path.write_text("\n".join(("[password_hashing]\nn = 1024", *sections)) + "\n")
    return path


def grep(lines: Sequence[str], *words: str) -> list[str]:
    return [line for line in lines if all(w in line for w in words)]
