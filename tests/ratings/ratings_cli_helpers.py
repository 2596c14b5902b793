"""Helpers for the ``matchlobby rate`` tests: running the command as a real process.

Imported by ``conftest.py`` and the CLI test modules (pytest puts this directory on
``sys.path``, as the tests have no ``__init__.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"


def matchlobby_command() -> list[str]:
    """The installed console script next to the interpreter, else ``python -m server.cli``."""
    script = Path(sys.executable).with_name("matchlobby")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "server.cli"]


@dataclass(frozen=True)
class Completed:
    returncode: int
    stdout: str
    stderr: str


def run_matchlobby(args: Sequence[str], cwd: Path) -> Completed:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    proc = subprocess.run(
        [*matchlobby_command(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    return Completed(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


def results_text(rows: Iterable[str], header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


RunRate = Callable[..., Completed]
WriteResults = Callable[..., Path]


def run_many(commands: Sequence[Sequence[str]], cwd: Path) -> list[Completed]:
    """Run several ``matchlobby`` invocations concurrently (each is still its own process)."""
    workers = max(2, min(len(commands), (os.cpu_count() or 2) * 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda args: run_matchlobby(args, cwd), commands))
