"""Helpers for the ``matchlobby rate`` tests: running the command as a real process.

Imported by ``conftest.py`` and the CLI test modules (pytest puts this directory on
``sys.path``, as the tests have no ``__init__.py``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sharedkit import HEADER, cli_env, matchlobby_command, results_text

__all__ = [  # this folder's helpers, and the shared ones (tests/kit/sharedkit.py) its tests use
    "HEADER", "Completed", "RunRate", "WriteResults", "results_text", "run_many", "run_matchlobby",
]


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_matchlobby(args: Sequence[str], cwd: Path) -> Completed:
    proc = subprocess.run(
        [*matchlobby_command(), *args],
        cwd=cwd,
        env=cli_env(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    return Completed(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


RunRate = Callable[..., Completed]
WriteResults = Callable[..., Path]


def run_many(commands: Sequence[Sequence[str]], cwd: Path) -> list[Completed]:
    """Run several ``matchlobby`` invocations concurrently (each is still its own process)."""
    workers = max(2, min(len(commands), (os.cpu_count() or 2) * 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda args: run_matchlobby(args, cwd), commands))
