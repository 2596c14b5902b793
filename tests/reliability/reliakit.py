"""Helpers for the reliability tests (crash safety, races, power cuts): the command line,
``matchlobby serve`` as a process, the database read back with plain ``sqlite3``, and the
ladders recomputed from the log by ``matchlobby rate``.

Imported by ``conftest.py`` and the test modules (pytest puts this directory on
``sys.path``; the tests have no ``__init__.py``). Named apart from the other
suites' helper modules so that the names never clash in ``sys.modules``. The
command line and the accounts come from ``tests/kit/sharedkit.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from sharedkit import (
    ADMIN_PASSWORD,
    PASSWORD,
    cli_env,
    free_port,
    matchlobby_command,
    results_text,
    run_cli,
    run_cli_async,
    sql,
)

from clients import LobbyClient

__all__ = [  # this folder's helpers, and the shared ones (tests/kit/sharedkit.py) its tests use
    "ADMINS", "ADMIN_PASSWORD", "CLEAN_REFUSALS", "PASSWORD", "SYSTEMS", "ServerProcess", "cli_env",
    "config_text", "free_port", "integrity", "ladders_against_recomputation", "log_rows",
    "matchlobby_command", "replay_check", "run_cli", "same_value", "seq_gaps", "sql",
]

ADMINS = ("root", "root2", "root3", "root4", "root5", "root6")
SYSTEMS = {"backgammon": "fibs", "scrabble": "cas", "foosball-singles": "p4p",
           "foosball-doubles": "p4p"}
CLEAN_REFUSALS = frozenset({"conflict", "not_found"})


def config_text(drop_timeout: float | None = None) -> str:
    """Cheap password hashing; limits lifted, since every client comes from 127.0.0.1 flat out."""
    server = f"[server]\ndrop_timeout = {drop_timeout}\n\n" if drop_timeout is not None else ""
    return (server + "[password_hashing]\nn = 1024\n\n"
            "[limits]\nmessages_per_second = 100000.0\nburst = 100000\n"
            "connections_per_address = 100000\nregistrations_per_hour = 0\n")


# ---- the server as a process ---------------------------------------------------------------


class ServerProcess:
    """``matchlobby serve`` on a fixed port and file; killed and started again."""

    def __init__(self, db: Path, config: Path, port: int, log: Path,
                 env: dict[str, str] | None = None) -> None:
        self.db, self.config, self.port, self.log = db, config, port, log
        self.env = env or {}  # added to the environment (cli_env)
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with open(self.log, "ab") as out:
            out.write(f"---- start {self.starts + 1}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                [*matchlobby_command(), "serve", "--db", str(self.db), "--config",
                 str(self.config), "--port", str(self.port)],
                cwd=self.db.parent, env=cli_env(**self.env), stdout=out, stderr=subprocess.STDOUT)
        self.starts += 1

    async def ready(self, timeout: float = 30.0) -> float:
        """Wait until the port accepts connections; the seconds it took."""
        began = time.monotonic()
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the server exited with {self.proc.returncode}:\n"
                                     f"{self.tail()}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                if time.monotonic() - began > timeout:
                    raise AssertionError(f"the server did not listen within {timeout} s:\n"
                                         f"{self.tail()}") from None
                await asyncio.sleep(0.02)
                continue
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            return time.monotonic() - began

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        assert self.proc.returncode == -signal.SIGKILL

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)

    def stop_quietly(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


# ---- the database, read back ---------------------------------------------------------------


def integrity(db: Path) -> str:
    rows = sql(db, "PRAGMA integrity_check")
    return "; ".join(str(r[0]) for r in rows)


def seq_gaps(db: Path) -> tuple[int, int, int]:
    """(counter, units holding a seq, distinct seqs): equal when no applied unit was lost."""
    counter = sql(db, "SELECT value FROM counters WHERE name = 'seq'")[0][0]
    used = sql(db, "SELECT count(seq), count(DISTINCT seq) FROM (SELECT seq FROM matches "
                   "WHERE seq IS NOT NULL UNION ALL SELECT seq FROM events WHERE seq IS NOT NULL)")
    return int(counter), int(used[0][0]), int(used[0][1])


def log_rows(db: Path, ladder: str) -> list[str]:
    """The ladder's rated log as results-file rows, in the order it was applied (``seq``).

    Written from the tables with plain SQL (not with the server's log reader): a
    live or FIBS-event match is its own unit; a closed event's games are one unit.
    """
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        units = conn.execute(
            """SELECT seq, 'match' AS kind, id FROM matches
               WHERE ladder = ? AND seq IS NOT NULL AND status = 'finished'
               UNION ALL SELECT seq, 'event' AS kind, id FROM events
               WHERE ladder = ? AND status = 'closed' AND seq IS NOT NULL ORDER BY 1""",
            (ladder, ladder)).fetchall()
        out: list[str] = []
        for unit in units:
            if unit["kind"] == "match":
                games = conn.execute("SELECT * FROM matches WHERE id = ?", (unit["id"],)).fetchall()
            else:
                games = conn.execute(
                    "SELECT * FROM matches WHERE event_id = ? AND status = 'finished' "
                    "AND seq IS NULL ORDER BY id", (unit["id"],)).fetchall()
            for g in games:
                sa, sb = g["score_a"], g["score_b"]
                if sa is None or sb is None:
                    sa, sb = {"a": (1, 0), "b": (0, 1)}.get(g["winner"], (0, 0))
                length = "unlimited" if g["length"] is None else g["length"]
                rated = f"no:{g['unrated_reason']}" if g["unrated_reason"] else ""
                out.append(f"unit {unit['seq']},{g['played_on']},{g['side_a']},{g['side_b']},"
                           f"{sa},{sb},{length},{rated}")
        return out
    finally:
        conn.close()


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and \
            math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)
    return bool(a == b)


async def ladders_against_recomputation(client: LobbyClient, db: Path, work: Path) -> dict[str, int]:
    """Every ladder the server shows equals ``matchlobby rate`` run on the log's results.

    Returns the number of players compared per ladder; raises ``AssertionError``
    naming the first difference.
    """
    compared: dict[str, int] = {}
    for ladder, system in SYSTEMS.items():
        shown = await client.call("ladder", ladder=ladder, all=True, count=1000)
        assert shown["total"] == len(shown["players"]), (ladder, shown["total"])
        rows = log_rows(db, ladder)
        if not rows:
            assert shown["players"] == [], (ladder, shown)
            compared[ladder] = 0
            continue
        path = work / f"recompute-{ladder}.csv"
        path.write_text(results_text(rows), encoding="utf-8")
        done = await run_cli_async(["rate", system, str(path), "--format", "json"], work)
        assert done.returncode == 0, (ladder, done.stderr)
        expected = json.loads(done.stdout)["players"]
        got = shown["players"]
        assert [r["player"] for r in got] == [r["player"] for r in expected], \
            (ladder, [r["player"] for r in got], [r["player"] for r in expected])
        for mine, theirs in zip(got, expected, strict=True):
            for key, value in theirs.items():
                assert same_value(mine.get(key), value), (ladder, mine["player"], key,
                                                          mine.get(key), value)
        compared[ladder] = len(got)
    return compared


def replay_check(db: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["replay", "--check", "--db", str(db), "--config", str(config)], db.parent)
