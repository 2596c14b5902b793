"""A logging filter that lets a repeated line through a few times a minute, then counts it.

What a client can make the server log, it can make it log many times: a refused origin
per handshake, asyncio's ``socket.accept() out of system resource`` many times a
second. Neither the standard library nor a well-kept library has a filter for this
(``logging`` has none; the packages that do are one-author snippets), so it is these
few lines: at most ``burst`` records of one logger, level and message template per
``interval`` seconds; the last of those says that more will be held back, and the
first one let through after the interval says how many were.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_KEYS = 10_000
"""Templates tracked at once; past it the ones whose interval is over are forgotten."""


@dataclass(slots=True)
class _Window:
    start: float
    passed: int = 0
    held: int = 0


class RepeatFilter(logging.Filter):
    """At most ``burst`` records of one logger, level and template per ``interval`` seconds."""

    def __init__(self, burst: int = 10, interval: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst, self.interval, self.clock = burst, interval, clock
        self._windows: dict[tuple[str, int, str], _Window] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = self.clock()
        key = (record.name, record.levelno, str(record.msg))
        window = self._windows.get(key)
        if window is None or now - window.start >= self.interval:
            held = window.held if window is not None else 0
            if window is None and len(self._windows) >= MAX_KEYS:
                self._sweep(now)
            self._windows[key] = _Window(now, passed=1)
            if held:
                _append(record, f" ({held} more like this were not logged in the "
                                f"{self.interval:.0f} s before)")
            return True
        if window.passed < self.burst:
            window.passed += 1
            if window.passed == self.burst:
                _append(record, f" (more like this in the next "
                                f"{window.start + self.interval - now:.0f} s are counted, "
                                "not logged)")
            return True
        window.held += 1
        return False

    def _sweep(self, now: float) -> None:
        self._windows = {k: w for k, w in self._windows.items()
                         if now - w.start < self.interval}
        if len(self._windows) >= MAX_KEYS:
            self._windows.clear()


def _append(record: logging.LogRecord, note: str) -> None:
    """``note`` after the record's message (formatted now: a ``%`` in it is text)."""
    record.msg = record.getMessage() + note
    record.args = None


def install(burst: int = 10, interval: float = 60.0) -> RepeatFilter:
    """Put one filter on every handler of the root logger (where every record ends up)."""
    repeat = RepeatFilter(burst, interval)
    for handler in logging.getLogger().handlers:
        handler.addFilter(repeat)
    return repeat
