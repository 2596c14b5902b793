"""Helpers shared by the lobby integration tests (imported by the test modules).

Kept apart from ``conftest.py`` so that the test modules can import plain
functions; the fixtures live in ``conftest.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clients import LobbyClient, LobbyError
from server import PROTOCOL_VERSION, __version__
from server.app import RunningServer, start_server
from server.config import Config, PasswordHashing

ROOT = Path(__file__).resolve().parents[2]
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"
PASSWORD = "pw-secret"
ADMIN = "root"
ADMIN_PASSWORD = "root-secret"
FAST_CONFIG = "[password_hashing]\nn = 1024\n"
CLI_TIMEOUT = 60


FAST_HASHING = PasswordHashing(n=2**10)


class Harness:
    """One test's server (startable, stoppable, restartable) and its clients."""

    def __init__(self, db: Path, config_file: Path) -> None:
        self.db = db
        self.config_file = config_file
        self.server: RunningServer | None = None
        self.clients: list[LobbyClient] = []

    async def start(self, drop_timeout: float = 600.0) -> RunningServer:
        assert self.server is None, "already running"
        config = Config(database=str(self.db), password=FAST_HASHING, drop_timeout=drop_timeout)
        self.server = await start_server(config, port=0)
        return self.server

    async def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"ws://127.0.0.1:{self.server.port}/ws"

    async def client(self, reconnect: bool = False) -> LobbyClient:
        """A connected client (no automatic reconnect unless asked)."""
        c = LobbyClient(self.url, reconnect=reconnect, backoff=(0.02, 0.2))
        hello = await c.connect()
        assert hello == {"server": "matchlobby", "version": __version__, "protocol": PROTOCOL_VERSION}
        self.clients.append(c)
        return c

    async def player(self, name: str, password: str = PASSWORD) -> LobbyClient:
        """A client with a fresh account ``name``, logged in."""
        c = await self.client()
        assert await c.register(name, password) == {"player": name, "role": "player"}
        return c

    async def admin(self) -> LobbyClient:
        c = await self.client()
        data = await c.login(ADMIN, ADMIN_PASSWORD)
        assert data["role"] == "admin"
        return c

    async def aclose(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()
        await self.stop()


# ---- the FIBS formula of RATINGS.md §1, written out independently -------------------------


def fibs_changes(p1: float, e1: int, p2: float, e2: int, n: int, first_won: bool
                 ) -> tuple[float, float]:
    """Δ for player 1 and player 2 after a rated match of length ``n``."""
    d = abs(p1 - p2)
    u = 1 / (10 ** (d * math.sqrt(n) / 2000) + 1)
    f = 1 - u

    def expected(own: float, other: float) -> float:
        if own == other:
            return 0.5
        return f if own > other else u

    def factor(e: int) -> float:
        return max(1.0, 5 - (e + n) / 100)

    s1, s2 = (1, 0) if first_won else (0, 1)
    d1 = 4 * factor(e1) * math.sqrt(n) * (s1 - expected(p1, p2))
    d2 = 4 * factor(e2) * math.sqrt(n) * (s2 - expected(p2, p1))
    return d1, d2


@dataclass
class FibsPlayer:
    rating: float = 1500.0
    experience: int = 0
    games: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)


class FibsModel:
    """The expected state of a FIBS ladder, advanced match by match."""

    def __init__(self) -> None:
        self.players: dict[str, FibsPlayer] = {}

    def get(self, name: str) -> FibsPlayer:
        return self.players.setdefault(name, FibsPlayer())

    def play(self, winner: str, loser: str, length: int) -> dict[str, tuple[float, float]]:
        """Apply one match; returns ``{player: (before, after)}``."""
        w, lo = self.get(winner), self.get(loser)
        dw, dl = fibs_changes(w.rating, w.experience, lo.rating, lo.experience, length, True)
        out = {winner: (w.rating, w.rating + dw), loser: (lo.rating, lo.rating + dl)}
        for p, delta in ((w, dw), (lo, dl)):
            p.history.append((p.rating, p.rating + delta))
            p.rating += delta
            p.experience += length
            p.games += 1
        return out

    def ranking(self) -> list[tuple[str, float]]:
        return sorted(((n, p.rating) for n, p in self.players.items()),
                      key=lambda x: (-x[1], x[0].casefold()))


def close(a: float | None, b: float | None) -> bool:
    """Equal up to floating-point noise (the formula may be evaluated in another order)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


async def check_fibs_state(client: LobbyClient, model: FibsModel, ladder: str = "backgammon"
                           ) -> None:
    """``rating``, ``whois``, ``ladder`` and ``history`` all agree with ``model``."""
    table = await client.call("ladder", ladder=ladder, all=True)
    assert table["system"] == "fibs"
    assert [r["player"] for r in table["players"]] == [n for n, _ in model.ranking()]
    rows = {r["player"]: r for r in table["players"]}
    for name, p in model.players.items():
        row = rows[name]
        assert close(row["rating"], p.rating), (name, row["rating"], p.rating)
        assert row["experience"] == p.experience
        assert row["games"] == p.games
        assert row["of"] == len(model.players)
        rating = await client.call("rating", name=name, ladder=ladder)
        (r,) = rating["ratings"]
        assert r == {"ladder": ladder, "system": "fibs", **row}
        whois = await client.call("whois", name=name)
        mine = [x for x in whois["ratings"] if x["ladder"] == ladder]
        assert mine == [r]
        hist = await client.call("history", name=name, ladder=ladder)
        got = [(e["before"], e["after"]) for e in hist["entries"]]
        assert len(got) == len(p.history)
        for (b, a), (eb, ea) in zip(got, p.history, strict=True):
            assert close(b, eb) and close(a, ea), (name, got, p.history)
        for e in hist["entries"]:
            assert e["change"] == e["after"] - e["before"]
            assert e["ladder"] == ladder


def check_changes(changes: Sequence[dict[str, Any]], expected: dict[str, tuple[float, float]]
                  ) -> None:
    """A reply's or push's ``changes`` against ``{player: (before, after)}``."""
    assert sorted(c["player"] for c in changes) == sorted(expected)
    for c in changes:
        before, after = expected[c["player"]]
        assert close(c["before"], before), (c, before)
        assert close(c["after"], after), (c, after)
        assert close(c["change"], after - before)
        assert c["change"] == c["after"] - c["before"]


# ---- playing -----------------------------------------------------------------------------


def name_of(client: LobbyClient) -> str:
    assert client.credentials is not None
    return client.credentials[0]


async def start_match(a: LobbyClient, b: LobbyClient, length: int | str = 1,
                      ladder: str = "backgammon") -> int:
    """``a`` invites ``b``, ``b`` joins; returns the match id."""
    a_name, b_name = name_of(a), name_of(b)
    await a.call("invite", name=b_name, ladder=ladder, length=length)
    await b.next_push("invited", where=lambda p: p["data"]["from"] == a_name)
    started = await b.call("join", name=a_name)
    pushed = await a.next_push("match_started")
    assert pushed["data"] == started
    assert started["status"] == "playing"
    return int(started["match"])


async def expect_error(coro: Any, code: str) -> LobbyError:
    try:
        await coro
    except LobbyError as e:
        assert e.code == code, (e.code, e.message)
        assert e.message
        return e
    raise AssertionError(f"expected a {code!r} refusal")


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def results_text(rows: Iterable[str]) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


# ---- the command line --------------------------------------------------------------------


def matchlobby_command() -> list[str]:
    script = Path(sys.executable).with_name("matchlobby")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "server.cli"]


def cli_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_cli(args: Sequence[str], cwd: Path, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*matchlobby_command(), *args], cwd=cwd, env=cli_env(), input=stdin,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False)


async def run_cli_async(args: Sequence[str], cwd: Path, stdin: str | None = None
                        ) -> subprocess.CompletedProcess[str]:
    """``run_cli`` without blocking the event loop (the server may run in it)."""
    return await asyncio.to_thread(run_cli, args, cwd, stdin)


def add_user(db: Path, config: Path, name: str, password: str, admin: bool = False) -> None:
    args = ["user", "add", name, "--db", str(db), "--config", str(config)]
    if admin:
        args.append("--admin")
    done = run_cli(args, db.parent, password + "\n")
    assert done.returncode == 0, done.stderr


async def rate_file(system: str, rows: Iterable[str], path: Path) -> dict[str, Any]:
    """``matchlobby rate SYSTEM FILE --format json`` on ``rows``."""
    path.write_text(results_text(rows), encoding="utf-8")
    done = await run_cli_async(["rate", system, str(path), "--format", "json"], path.parent)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sql(db: Path, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute(query, params).fetchall())
    finally:
        conn.close()
