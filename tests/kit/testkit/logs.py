"""Log records captured from the server (and the rest of the process), from any thread."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator


class Capture(logging.Handler):
    """Every log record emitted while installed, from any thread."""

    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []
        self.error_records: list[logging.LogRecord] = []
        self._lock_ = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock_:
            self.records.append(record)
            if record.levelno >= logging.ERROR and not _from_client(record):
                self.error_records.append(record)

    def server_records(self) -> list[logging.LogRecord]:
        """Records from the server side (the test's own clients log to ``websockets.client``)."""
        with self._lock_:
            return [r for r in self.records if not _from_client(r)]

    def errors(self) -> list[str]:
        with self._lock_:
            return [render(r) for r in self.error_records]


def _from_client(record: logging.LogRecord) -> bool:
    return record.name.startswith(("websockets.client", "clients"))


def render(record: logging.LogRecord) -> str:
    """A record as a handler would write it, traceback included."""
    text = f"{record.name} {record.levelname}: {record.getMessage()}"
    if record.exc_info:
        text += "\n" + logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        text += "\n" + record.exc_text
    if record.stack_info:
        text += "\n" + record.stack_info
    return text


@contextlib.contextmanager
def captured_logs(level: int = logging.DEBUG) -> Iterator[Capture]:
    """Install a handler on the root logger (and lower the root level to ``level``)."""
    root = logging.getLogger()
    handler = Capture(level)
    old = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
