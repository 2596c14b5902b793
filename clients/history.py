"""The terminal client's command history: a file only its owner may read, holding no line that
carries a password or a session token.

``login NAME PASSWORD``, ``register NAME PASSWORD`` and ``resume TOKEN`` (and such a command
sent as JSON) are neither recalled nor written; a history written before this rule has its
such lines removed when it is opened. The file is created with mode 0600, and an existing
one is set to 0600 (a history made with the usual 0644 was readable by every local user).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from prompt_toolkit.history import FileHistory

SECRET_COMMANDS = frozenset({"login", "register", "resume", "password"})
# In a JSON frame (or what looks like one), any of these words: it may carry a secret.
_SECRET_WORD = re.compile(r"\b(login|register|resume|password|token)\b", re.IGNORECASE)
PRIVATE = 0o600


def holds_secret(line: str) -> bool:
    """Whether ``line`` is a command that carries a password or a session token."""
    text = line.strip()
    if text.startswith(("{", "[")):
        try:
            frame = json.loads(text)
        except ValueError:
            return _SECRET_WORD.search(text) is not None
        return _SECRET_WORD.search(json.dumps(frame)) is not None
    words = text.split(maxsplit=1)
    return bool(words) and words[0].strip("'\"").lower() in SECRET_COMMANDS


def open_private(path: Path) -> None:
    """Create ``path`` if need be, readable and writable by its owner only (also when it
    existed with a wider mode); raises ``OSError`` when that cannot be done."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE:
            os.fchmod(fd, PRIVATE)
    finally:
        os.close(fd)


def _entries(path: Path) -> list[list[str]]:
    """The file's entries as written by :class:`FileHistory`: each the lines of one command
    (``+``-prefixed) with the comment and blank lines before them."""
    entries: list[list[str]] = [[]]
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        for raw in f:
            if not raw.startswith("+") and any(x.startswith("+") for x in entries[-1]):
                entries.append([])
            entries[-1].append(raw)
    return entries


def _command(entry: Iterable[str]) -> str:
    return "".join(x[1:] for x in entry if x.startswith("+")).removesuffix("\n")


def scrub(path: Path) -> None:
    """Remove the entries that hold a secret from an existing history, in place (replaced
    whole, so that a crash leaves the old file or the new one)."""
    entries = _entries(path)
    kept = [e for e in entries if not holds_secret(_command(e))]
    if len(kept) == len(entries):
        return
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.writelines(line for e in kept for line in e)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class PrivateHistory(FileHistory):
    """prompt_toolkit's :class:`FileHistory` without the lines that hold a secret, in a file
    only its owner can read."""

    def __init__(self, path: Path) -> None:
        open_private(path)
        scrub(path)
        self.path = path
        super().__init__(str(path))

    def append_string(self, string: str) -> None:
        if not holds_secret(string):
            super().append_string(string)

    def store_string(self, string: str) -> None:
        open_private(self.path)  # made again if it was removed meanwhile
        super().store_string(string)

    def load_history_strings(self) -> Iterable[str]:
        return [s for s in super().load_history_strings() if not holds_secret(s)]
