"""A process on a pseudo-terminal, read as a person would see its screen."""

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
from collections.abc import Sequence

from testkit.children import die_with_parent
from testkit.constants import ROOT

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\x08|\x07")


def screen_text(raw: bytes) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return ANSI.sub("", raw.decode("utf-8", "replace")).replace("\r", "")


class Terminal:
    """A process on a pseudo-terminal (80 columns would wrap tables; it gets 200 unless told)."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self.proc = proc
        self.master = master
        self.raw = b""
        self.mark = 0  # where the next expect starts, in screen_text(raw)

    @classmethod
    async def spawn(cls, args: Sequence[str], env: dict[str, str], columns: int = 200
                    ) -> Terminal:
        import pty

        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
        proc = await asyncio.create_subprocess_exec(
            *args, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT,
            start_new_session=True, preexec_fn=die_with_parent())
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


def help_rows(lines: Sequence[str]) -> list[list[str]]:
    """``help``'s listing (from its ``usage who what`` header on) read back into rows of
    usage, role and summary, the cells that wrapped joined again."""
    who_at, what_at = lines[0].index("who"), lines[0].index("what")
    assert lines[0] == "usage".ljust(who_at) + "who".ljust(what_at - who_at) + "what"
    rows: list[list[str]] = []
    for line in lines[1:]:
        usage, who, what = (line[:who_at].strip(), line[who_at:what_at].strip(),
                            line[what_at:].strip())
        if who:
            rows.append([usage, who, what])
        else:
            rows[-1] = [" ".join(filter(None, (rows[-1][0], usage))), rows[-1][1],
                        " ".join(filter(None, (rows[-1][2], what)))]
    return rows
