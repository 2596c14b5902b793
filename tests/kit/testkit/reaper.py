"""What a test run starts outside itself goes when the run goes, however it ends.

``atexit`` runs only when Python exits on its own: a run stopped by a timeout's SIGTERM or a
SIGKILL would leave its PostgreSQL cluster running and its temporary folders on disk. So a
process that starts such a thing hands its clean-up to a reaper: a child in a session of its
own (a terminal's Ctrl-C and a signal to the run's process group do not reach it) that reads
orders on a pipe whose only writer is that process. When the pipe ends, because the process
exited in whatever way, the reaper carries out every order not yet withdrawn, newest first,
and exits. A normal exit withdraws them after doing the work itself (:func:`withdraw`).

Run as a script (``python reaper.py``) it is the reaper: standard library only, no testkit.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

_lock = threading.Lock()
_pipe: IO[str] | None = None
_numbers = iter(range(1, sys.maxsize))


def _reaper() -> IO[str]:
    global _pipe
    if _pipe is None:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                text=True, cwd="/")
        assert proc.stdin is not None
        _pipe = proc.stdin
    return _pipe


def _send(order: dict[str, object]) -> None:
    pipe = _reaper()
    pipe.write(json.dumps(order) + "\n")
    pipe.flush()


def remove_folder(folder: Path) -> int:
    """Have ``folder`` removed if this process dies before :func:`withdraw` (a number)."""
    with _lock:
        number = next(_numbers)
        _send({"add": number, "rmtree": str(folder)})
    return number


def run_command(cmd: Sequence[str]) -> int:
    """Have ``cmd`` run (stopping a server, say) if this process dies before :func:`withdraw`."""
    with _lock:
        number = next(_numbers)
        _send({"add": number, "run": list(cmd)})
    return number


def withdraw(number: int) -> None:
    """The order is carried out already (or no longer wanted)."""
    with _lock:
        if _pipe is not None and not _pipe.closed:
            _send({"drop": number})


def _carry_out(order: dict[str, object]) -> None:
    try:
        if "run" in order:
            subprocess.run(order["run"], check=False, timeout=60,  # type: ignore[call-overload]
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elif "rmtree" in order:
            shutil.rmtree(str(order["rmtree"]), ignore_errors=True)
    except (OSError, subprocess.SubprocessError):
        pass


def main() -> None:
    """The reaper: keep the orders until standard input ends, then carry out those left."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    pending: dict[int, dict[str, object]] = {}
    for line in sys.stdin:
        try:
            order = json.loads(line)
        except ValueError:
            continue
        if "add" in order:
            pending[int(order["add"])] = order
        elif "drop" in order:
            pending.pop(int(order["drop"]), None)
    for number in sorted(pending, reverse=True):
        _carry_out(pending[number])
    os._exit(0)


if __name__ == "__main__":
    main()
