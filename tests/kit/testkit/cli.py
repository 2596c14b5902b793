"""``matchlobby`` run as a real process: its sub-commands, the batch client, account set-up.

One :class:`Completed` for every run; :func:`run_cli` blocks, :func:`run_cli_async` does not
(a server may be running in the test's loop), :func:`run_many` runs several at once.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testkit import postgres
from testkit.children import die_with_parent
from testkit.constants import ADMIN, ADMIN_PASSWORD, CLI_TIMEOUT, FAST_CONFIG, ROOT
from testkit.results import results_text


@dataclass(frozen=True)
class Completed:
    """A finished ``matchlobby`` run; its output decoded as UTF-8."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    def json(self) -> dict[str, Any]:
        """The JSON object a successful run printed, and nothing on standard error."""
        assert self.returncode == 0, self.stderr
        assert self.stderr == ""
        data = json.loads(self.stdout)
        assert isinstance(data, dict)
        return data


def matchlobby_command() -> list[str]:
    """The installed console script next to the interpreter, else ``python -m server.cli``."""
    script = Path(sys.executable).with_name("matchlobby")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "server.cli"]


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment with the repository on ``PYTHONPATH``, UTF-8 output, ``extra``.

    Without ``COLUMNS`` and ``LINES``: a terminal's size is that of the terminal a test gives
    its client. (In a pytest-xdist worker, GNU readline, imported with pdb, sets them to the
    80 × 24 of a terminal the worker does not have.)
    """
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def run_cli(args: Sequence[str], cwd: Path = ROOT, stdin: str = "") -> Completed:
    """``matchlobby ARGS`` with ``stdin`` as its standard input; waits for it."""
    postgres.let_go()
    done = subprocess.run([*matchlobby_command(), *args], cwd=cwd, env=cli_env(), input=stdin,
                          capture_output=True, encoding="utf-8", timeout=CLI_TIMEOUT, check=False,
                          preexec_fn=die_with_parent())
    return Completed(done.returncode, done.stdout, done.stderr)


async def run_cli_async(args: Sequence[str], cwd: Path = ROOT, stdin: str = "") -> Completed:
    """:func:`run_cli` without blocking the event loop (a server may be running in it)."""
    postgres.let_go()
    # ``stdin`` waits whole in a pipe before the command starts: a command that exits without
    # reading it cannot race the write (uvloop's pipe raises where asyncio's lets it go).
    data = stdin.encode()
    assert len(data) < 65536, "more than a pipe holds"
    read_end, write_end = os.pipe()
    try:
        try:
            os.write(write_end, data)
        finally:
            os.close(write_end)
        proc = await asyncio.create_subprocess_exec(
            *matchlobby_command(), *args, cwd=cwd, env=cli_env(), stdin=read_end,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            preexec_fn=die_with_parent())
    finally:
        os.close(read_end)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), CLI_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode is not None
    return Completed(proc.returncode, out.decode(), err.decode())


def run_many(commands: Sequence[Sequence[str]], cwd: Path) -> list[Completed]:
    """Several ``matchlobby`` runs at once (each still its own process), in order."""
    workers = max(2, min(len(commands), (os.cpu_count() or 2) * 2))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda args: run_cli(args, cwd), commands))


async def run_batch(url: str, commands: Sequence[str], *flags: str) -> Completed:
    """``matchlobby client URL --batch [FLAGS]`` with one command per standard-input line."""
    done = await run_cli_async(["client", url, "--batch", *flags],
                               stdin="".join(c + "\n" for c in commands))
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


async def rate_file(system: str, rows: Iterable[str], path: Path) -> dict[str, Any]:
    """``matchlobby rate SYSTEM FILE --format json`` on ``rows``, written to ``path``."""
    path.write_text(results_text(rows), encoding="utf-8")
    done = await run_cli_async(["rate", system, str(path), "--format", "json"], path.parent)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def add_user(db: Path, config: Path, name: str, password: str, admin: bool = False) -> None:
    """``matchlobby user add NAME [--admin]`` with the password on standard input."""
    args = ["user", "add", name, "--db", str(db), "--config", str(config)]
    if admin:
        args.append("--admin")
    done = run_cli(args, db.parent, password + "\n")
    assert done.returncode == 0, done.stderr


def admin_template(folder: Path, config_text: str = FAST_CONFIG, admin: str = ADMIN,
                   password: str = ADMIN_PASSWORD) -> tuple[Path, Path]:
    """``(database, config)`` in ``folder``: the database holds only ``admin``, made by the
    real ``matchlobby user add --admin`` under that configuration."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "matchlobby.toml"
    config.write_text(config_text, encoding="utf-8")
    db = folder / "lobby.db"
    add_user(db, config, admin, password, admin=True)
    return db, config


async def replay_check(db: Path, config: Path | None = None) -> tuple[int, str]:
    """``matchlobby replay --check`` on ``db``: its status (0 when every stored rating is the
    log's) and what it wrote."""
    args = ["replay", "--check", "--db", str(db)]
    if config is not None:
        args += ["--config", str(config)]
    done = await run_cli_async(args, db.parent)
    return done.returncode, done.stdout + done.stderr


RunRate = Callable[..., Completed]
"""``run_rate(system, file, *options)``: ``matchlobby rate`` in the test's folder."""
WriteResults = Callable[..., Path]
"""``write_results(rows, name=..., header=...)``: a results file in the test's folder."""
