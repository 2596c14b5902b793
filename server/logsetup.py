"""The server's log: text or JSON lines on standard error, and each logger's level.

JSON is these few lines over :mod:`logging` rather than a library (python-json-logger
would do the same with a dependency more): one object a line with ``time`` (ISO 8601,
UTC), ``level``, ``logger``, ``event`` (the message) and, where a line has them,
``player``, ``command``, ``duration`` (seconds) and ``code`` (an error's), given with
``extra={...}``; ``node`` names the process when several may share the database.

What clients send never reaches the log: websockets logs every frame at DEBUG and
aiosqlite every statement with its parameters (password hashes among them), so their
records under INFO are dropped whatever the configured levels say.
"""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TextIO

from server.config import LogSettings

CONTEXT = ("player", "command", "duration", "code")
"""The fields a record may carry in ``extra``, in the order a JSON line shows them."""
QUIET_BELOW_INFO = ("websockets", "aiosqlite", "server.net.transport.websockets")
"""Loggers whose records under INFO would hold frames or statements' parameters."""
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object a record, on one line (ASCII only: valid whatever stderr's encoding)."""

    def __init__(self, node: str | None = None) -> None:
        super().__init__()
        self.node = node

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key in CONTEXT:
            value = getattr(record, key, None)
            if value is not None:
                entry[key] = value
        if self.node:
            entry["node"] = self.node
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


class QuietBelowInfo(logging.Filter):
    """Drops the records of :data:`QUIET_BELOW_INFO` under INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO or not _quiet(record.name)


def _quiet(name: str) -> bool:
    return any(name == q or name.startswith(q + ".") for q in QUIET_BELOW_INFO)


class JsonStderr(io.TextIOBase):
    """Standard error in JSON mode: each line written to it (a ``print``, a traceback of a
    thread) becomes a log record of the logger ``stderr``, at ERROR."""

    def __init__(self, raw: TextIO) -> None:
        super().__init__()
        self.raw = raw
        self._partial = ""
        self._inside = threading.local()
        logging.getLogger("stderr").setLevel(logging.ERROR)  # whatever the root's level

    def write(self, text: str) -> int:
        if getattr(self._inside, "active", False):  # logging reporting its own failure
            return self.raw.write(text)
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        self._inside.active = True
        try:
            for line in lines:
                if line.strip():
                    logging.getLogger("stderr").error("%s", line)
        finally:
            self._inside.active = False
        return len(text)

    def flush(self) -> None:
        self.raw.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.raw.encoding

    def fileno(self) -> int:
        return self.raw.fileno()

    def isatty(self) -> bool:
        return False


_handler: logging.Handler | None = None
_set_levels: dict[str, int] = {}  # loggers given a level by the configuration: their level before
_format_override: str | None = None
_raw_stderr: TextIO = sys.stderr


def handler() -> logging.Handler:
    """The root logger's handler writing to standard error (``logging.basicConfig``'s)."""
    global _handler
    if _handler is None:
        root = logging.getLogger()
        streams = [h for h in root.handlers if isinstance(h, logging.StreamHandler)]
        if streams:
            _handler = streams[0]
        else:
            _handler = logging.StreamHandler(_raw_stderr)
            root.addHandler(_handler)
        _handler.addFilter(QuietBelowInfo())
    return _handler


def use_json(node: str | None = None) -> None:
    """JSON lines from now on, standard error included (``--log-format json``, before the
    configuration is read: its own errors are JSON too)."""
    global _format_override
    _format_override = "json"
    _set_format("json", node)


def configure(settings: LogSettings, node: str | None = None) -> None:
    """Apply ``[logging]`` (at start and at each reload): the format (unless the command line
    chose it), the root level, each named logger's. Loggers no longer named get back the
    level they had before; those of :data:`QUIET_BELOW_INFO` follow the logger above them
    (set here, so that they are never under INFO)."""
    _set_format(_format_override or settings.format, node)
    root = _number(settings.level)
    logging.getLogger().setLevel(root)
    named = {n: _number(v) for n, v in settings.levels}
    wanted = {name: _inherited(name, named, root) for name in QUIET_BELOW_INFO} | named
    for name in [n for n in _set_levels if n not in wanted]:
        logging.getLogger(name).setLevel(_set_levels.pop(name))
    for name, level in wanted.items():
        logger = logging.getLogger(name)
        _set_levels.setdefault(name, logger.level)
        logger.setLevel(max(level, logging.INFO) if _quiet(name) else level)


def _inherited(name: str, named: dict[str, int], root: int) -> int:
    """The level ``name`` would have from the nearest logger above it that is named."""
    parts = name.split(".")
    for end in range(len(parts) - 1, 0, -1):
        above = ".".join(parts[:end])
        if above in named:
            return named[above]
    return root


def _number(level: str) -> int:
    return logging.getLevelNamesMapping()[level.upper()]


def _set_format(form: str, node: str | None) -> None:
    h = handler()
    if form == "json":
        h.setFormatter(JsonFormatter(node))
        if not isinstance(sys.stderr, JsonStderr):
            sys.stderr = JsonStderr(_raw_stderr)
            sys.excepthook = _log_uncaught
    else:
        h.setFormatter(logging.Formatter(TEXT_FORMAT))
        if isinstance(sys.stderr, JsonStderr):
            sys.stderr = _raw_stderr
            sys.excepthook = sys.__excepthook__


def _log_uncaught(kind: type[BaseException], value: BaseException,
                  traceback: TracebackType | None) -> None:
    logging.getLogger("matchlobby").critical("stopped by an unexpected error",
                                             exc_info=(kind, value, traceback))
