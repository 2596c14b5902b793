"""``matchlobby check``: is the database whole, and does every rating agree with the match log?

Two parts, the second only when the first found the file readable:

- the database's own check: on SQLite the file and its schema
  (:func:`server.store.dbcheck.check_database`), then ``PRAGMA integrity_check`` (every page,
  every index against its table) and ``PRAGMA foreign_key_check``; on PostgreSQL the schema
  version, tables, constraints and foreign keys (:mod:`server.store.pg.check`);
- ``replay --check``, the ratings plugin's own command run in this process, its
  differences taken as problems.

Each problem is one line on standard output and the status is 1; a sound database gets one
``ok`` line and status 0. Safe while the server runs: it only reads (as ``replay --check``
does, it brings an older schema up to date first, as the server would).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from server.api import CliCommand, CliEnvironment
from server.config import Config
from server.refused import Refused
from server.store.backends import is_postgres, shown
from server.store.backup import integrity
from server.store.dbcheck import DatabaseProblem, check_database, pg_problem

REPLAY = "replay"
REPLAY_PREFIX = "replay --check: "


@dataclass
class Findings:
    """What the check found: problems (each a line) and what it checked, for the summary."""

    problems: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    readable: bool = True


async def _sqlite(path: str) -> Findings:
    if not Path(path).is_file():
        raise Refused(f"{path}: no such database file")
    found = Findings()
    try:
        await check_database(path, quick_check=False, writable=False)
    except DatabaseProblem as e:
        return Findings([str(e)], readable=False)
    checked = integrity(path)
    found.problems, found.readable = checked.problems, not checked.damage
    found.checked.append("integrity_check and foreign_key_check ok")
    return found


async def _postgres(url: str) -> Findings:
    from server.store.pg import check
    from server.store.pg.port import connect

    conn = await connect(url)
    try:
        version, problems = await check.problems(conn)
        amcheck = await check.amcheck_installed(conn)
    finally:
        await conn.close()
    found = Findings([f"{shown(url)}: {p}" for p in problems], readable=version is not None)
    found.checked.append(f"schema {version}, tables, constraints and foreign keys ok"
                         + ("; indexes whole (amcheck)" if amcheck else ""))
    return found


def replay_command(commands: Sequence[CliCommand]) -> CliCommand | None:
    return next((c for c in commands if c.name == REPLAY), None)


def _replay(command: CliCommand, environment: CliEnvironment) -> tuple[int, list[str]]:
    """``replay --check`` in this process: its status and its lines."""
    said = io.StringIO()
    database = environment.database
    try:
        with contextlib.redirect_stdout(said):
            status = command.run(argparse.Namespace(check=True), environment)
    except DatabaseProblem as e:
        return 1, [str(e)]
    except sqlite3.Error as e:
        return 1, [f"{database}: {' '.join(str(e).split())} (while replaying the log)"]
    except Exception as e:
        trouble = pg_problem(database, e) if is_postgres(database) else None
        if trouble is None:
            raise
        return 1, [str(trouble)]
    return status, said.getvalue().splitlines()


def run_check(config: Config, commands: Sequence[CliCommand], environment: CliEnvironment,
              out: TextIO = sys.stdout) -> int:
    """Check ``config``'s database; print each problem, or one ``ok`` line; the exit status."""
    database = config.database
    found = asyncio.run(_postgres(database) if is_postgres(database) else _sqlite(database))
    replay = replay_command(commands)
    if replay is None:
        found.checked.append("no ratings to replay (the ratings plugin is not installed)")
    elif found.readable:
        status, lines = _replay(replay, environment)
        if status == 0:
            found.checked.append("every rating agrees with the match log")
        else:
            found.problems += [line if line.startswith(REPLAY_PREFIX) or
                               line.startswith(database) else REPLAY_PREFIX + line
                               for line in lines if "difference(s) between" not in line]
    for problem in found.problems:
        print(problem, file=out)
    where = shown(database) if is_postgres(database) else database
    if found.problems:
        skipped = "" if found.readable or replay is None else "; replay --check not run on it"
        print(f"check: {where}: {len(found.problems)} problem(s){skipped}", file=out)
        return 1
    print(f"check: ok: {where}: {'; '.join(found.checked)}", file=out)
    return 0
