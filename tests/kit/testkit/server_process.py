"""``matchlobby serve`` as a process of its own: what an operator runs, killed or stopped and
started again, its memory and CPU read from /proc."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from testkit.children import die_with_parent
from testkit.cli import cli_env, matchlobby_command

ANNOUNCEMENT = "matchlobby listening on "
"""What ``matchlobby serve`` prints once it listens."""


def free_port() -> int:
    """A port nobody listens on now (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``matchlobby serve`` on a fixed port (a free one unless given) and file; its standard
    output and error go to ``log`` (``db`` with ``.log`` unless given), each start marked."""

    def __init__(self, db: Path, config: Path, port: int | None = None, log: Path | None = None,
                 env: dict[str, str] | None = None,
                 preexec: Callable[[], None] | None = None) -> None:
        self.db, self.config = db, config
        self.port = port or free_port()
        self.log = log or db.with_suffix(".log")
        self.env = env or {}  # added to the environment (cli_env)
        self.preexec = preexec  # run in the child before it starts (resource limits, say)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.began_at = 0  # where the last start's output begins in the log

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> ServerProcess:
        with open(self.log, "ab") as out:
            out.write(f"---- start {self.starts + 1}\n".encode())
            out.flush()
            self.began_at = out.tell()
            self.proc = subprocess.Popen(
                [*matchlobby_command(), "serve", "--db", str(self.db), "--config",
                 str(self.config), "--port", str(self.port)],
                cwd=self.db.parent, env=cli_env(**self.env), stdout=out, stderr=subprocess.STDOUT,
                preexec_fn=self._in_child())
        self.starts += 1
        return self

    def _in_child(self) -> Callable[[], None] | None:
        """The child dies with this process, then applies the test's own preparation."""
        steps = [step for step in (die_with_parent(), self.preexec) if step is not None]
        if not steps:
            return None

        def run() -> None:
            for step in steps:
                step()
        return run

    async def ready(self, timeout: float = 30.0) -> float:
        """Wait until this start has said it listens (after it does); the seconds it took."""
        began = time.monotonic()
        while ANNOUNCEMENT not in self.output(self.began_at):
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited with {self.proc.returncode}:\n"
                                     f"{self.tail()}")
            if time.monotonic() - began > timeout:
                raise AssertionError(f"the server did not listen within {timeout} s:\n"
                                     f"{self.tail()}")
            await asyncio.sleep(0.02)
        return time.monotonic() - began

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        assert self.proc.returncode == -signal.SIGKILL

    def terminate(self) -> int:
        """SIGTERM, as an operator stops it; its exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)

    def stop(self) -> None:
        """Stopped if still running (a test's clean-up): SIGTERM, SIGKILL if that fails."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def output(self, start: int = 0) -> str:
        """What it wrote from byte ``start`` of the log on (every start's, by default)."""
        try:
            with open(self.log, "rb") as f:
                f.seek(start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:]) or "(no log)"

    def rss(self) -> int:
        """Resident memory in bytes (VmRSS of /proc/PID/status)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        kb = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert kb is not None
        return int(kb.group(1)) * 1024

    def cpu(self) -> float:
        """CPU seconds used so far (user + system, /proc/PID/stat)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    async def idle(self, window: float = 0.3, timeout: float = 60.0) -> None:
        """Wait until it uses under a fifth of a core over ``window`` seconds: it has handled
        what it was sent (a bystander's few requests cost far less)."""
        began = time.monotonic()
        while time.monotonic() - began < timeout:
            cpu = self.cpu()
            await asyncio.sleep(window)
            if self.cpu() - cpu < window / 5:
                return
        raise AssertionError(f"the server was still busy after {timeout} s")
