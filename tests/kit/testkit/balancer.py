"""HAProxy in front of the lobby's servers, as ``docs/haproxy.cfg`` says: the very file an
operator starts from, its addresses given in the environment."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from testkit.children import die_with_parent
from testkit.server_process import free_port

CONFIG = Path(__file__).resolve().parents[3] / "docs" / "haproxy.cfg"
MISSING = "HAProxy is not installed (as root: apt-get install haproxy; make test installs it)"


def executable() -> str | None:
    """Where HAProxy is (Debian puts it in /usr/sbin, off a user's PATH)."""
    found = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
    return found


def installed() -> bool:
    return executable() is not None


class Balancer:
    """``haproxy -f docs/haproxy.cfg`` in the foreground, for three servers' ports."""

    def __init__(self, ports: Sequence[int], log: Path) -> None:
        assert len(ports) == 3, "docs/haproxy.cfg names three servers"
        self.port = free_port()
        self.ports = list(ports)
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def start(self) -> Balancer:
        env = {"LOBBY_BIND": f"127.0.0.1:{self.port}",
               **{f"NODE{i + 1}": f"127.0.0.1:{p}" for i, p in enumerate(self.ports)}}
        haproxy = executable()
        assert haproxy is not None, MISSING
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([haproxy, "-db", "-f", str(CONFIG)], env=env,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         preexec_fn=die_with_parent())
        return self

    async def ready(self, timeout: float = 20.0) -> None:
        """Listening (the servers behind it are checked by HAProxy itself)."""
        began = time.monotonic()
        while True:
            assert self.proc is not None and self.proc.poll() is None, self.log.read_text()
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if time.monotonic() - began > timeout:
                    raise AssertionError(
                        f"HAProxy did not listen:\n{self.log.read_text()}") from None
                await asyncio.sleep(0.05)
                continue
            writer.close()
            return

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
