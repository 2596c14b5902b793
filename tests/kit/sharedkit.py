"""Helpers and fixtures shared by the test folders (each folder's own kit imports them).

- the accounts and the fast-hashing configuration every suite uses;
- ``matchlobby`` run as a real process, and a template database made by
  ``matchlobby user add --admin``, copied for each test (:func:`db_path`);
- the FIBS formula of RATINGS.md §1, written out independently of the server;
- :class:`LobbyServer`: a real server in the test's event loop on a real SQLite
  file, and the clients that talked to it; a match started, a refusal expected.

On ``sys.path`` through ``pythonpath = ["tests/kit"]`` in pyproject.toml's pytest
section (not ``tests`` itself: its folders ``tests/server`` and ``tests/clients``
would be found as namespace packages in place of ``server`` and ``clients``).
A folder's kit or ``conftest.py`` imports what it needs; the fixtures here (:func:`db_path`)
reach every folder through the repository's ``conftest.py`` (``pytest_plugins``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

from clients import LobbyClient, LobbyError
from clients.models import RatingChange
from server import PROTOCOL_VERSION, __version__
from server.app import RunningServer, start_server
from server.config import Config, PasswordHashing

ROOT = Path(__file__).resolve().parents[2]
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated"
PASSWORD = "pw-secret"
ADMIN = "root"
ADMIN_PASSWORD = "root-secret"
FAST_HASHING = PasswordHashing(n=2**10)
FAST_CONFIG = "[password_hashing]\nn = 1024\n"
CLI_TIMEOUT = 60
HELLO = {"server": "matchlobby", "version": __version__, "protocol": PROTOCOL_VERSION}
"""What the server says first on every connection."""


# ---- the command line ----------------------------------------------------------------------


def matchlobby_command() -> list[str]:
    """The installed console script next to the interpreter, else ``python -m server.cli``."""
    script = Path(sys.executable).with_name("matchlobby")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "server.cli"]


def cli_env(**extra: str) -> dict[str, str]:
    """This process's environment with the repository on ``PYTHONPATH``, UTF-8 output, ``extra``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(extra)
    return env


def run_cli(args: Sequence[str], cwd: Path, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*matchlobby_command(), *args], cwd=cwd, env=cli_env(), input=stdin,
                          capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False)


async def run_cli_async(args: Sequence[str], cwd: Path, stdin: str | None = None
                        ) -> subprocess.CompletedProcess[str]:
    """``run_cli`` without blocking the event loop (an in-process server may run in it)."""
    return await asyncio.to_thread(run_cli, args, cwd, stdin)


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


@pytest.fixture
def db_path(tmp_path: Path, template_db: Path) -> Path:
    """The test's own copy of its folder's ``template_db``."""
    db = tmp_path / "lobby.db"
    shutil.copyfile(template_db, db)
    return db


def results_text(rows: Iterable[str], header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


async def rate_file(system: str, rows: Iterable[str], path: Path) -> dict[str, Any]:
    """``matchlobby rate SYSTEM FILE --format json`` on ``rows``, written to ``path``."""
    path.write_text(results_text(rows), encoding="utf-8")
    done = await run_cli_async(["rate", system, str(path), "--format", "json"], path.parent)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def today() -> str:
    return datetime.now(UTC).date().isoformat()


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


# ---- the FIBS formula of RATINGS.md §1, written out independently -------------------------


def fibs_changes(p1: float, e1: int, p2: float, e2: int, n: int, first_won: bool
                 ) -> tuple[float, float]:
    """Δ for player 1 and player 2 after a rated match of length ``n``, from the pre-match values."""
    d = abs(p1 - p2)
    underdog = 1 / (10 ** (d * math.sqrt(n) / 2000) + 1)
    favourite = 1 - underdog

    def win_probability(own: float, other: float) -> float:
        if own == other:
            return 0.5
        return favourite if own > other else underdog

    def experience_factor(e: int) -> float:
        return max(1.0, 5 - (e + n) / 100)

    s1, s2 = (1, 0) if first_won else (0, 1)
    d1 = 4 * experience_factor(e1) * math.sqrt(n) * (s1 - win_probability(p1, p2))
    d2 = 4 * experience_factor(e2) * math.sqrt(n) * (s2 - win_probability(p2, p1))
    return d1, d2


@dataclass
class FibsPlayer:
    rating: float = 1500.0
    experience: int = 0
    games: int = 0
    history: list[tuple[float, float]] = field(default_factory=list)


class FibsModel:
    """What a FIBS ladder should hold, advanced match by match."""

    def __init__(self) -> None:
        self.players: dict[str, FibsPlayer] = {}

    def get(self, name: str) -> FibsPlayer:
        return self.players.setdefault(name, FibsPlayer())

    def play(self, winner: str, loser: str, length: int) -> dict[str, tuple[float, float]]:
        """Rate one match; returns ``{player: (before, after)}``."""
        w, lo = self.get(winner), self.get(loser)
        dw, dl = fibs_changes(w.rating, w.experience, lo.rating, lo.experience, length, True)
        out = {winner: (w.rating, w.rating + dw), loser: (lo.rating, lo.rating + dl)}
        for p, delta in ((w, dw), (lo, dl)):
            p.history.append((p.rating, p.rating + delta))
            p.rating += delta
            p.experience += length
            p.games += 1
        return out

    def ranking(self) -> list[str]:
        """The players, best first (ties by name, case-folded)."""
        return [n for n, _ in sorted(self.players.items(),
                                     key=lambda x: (-x[1].rating, x[0].casefold()))]

    def rank(self, name: str) -> int:
        return self.ranking().index(name) + 1


def close(a: float | None, b: float | None) -> bool:
    """Equal up to floating-point noise (the server may evaluate the formula in another order)."""
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def check_changes(changes: Sequence[RatingChange | dict[str, Any]],
                  expected: dict[str, tuple[float, float]]) -> None:
    """A reply's or push's ``changes`` against ``{player: (before, after)}``."""
    rows = [c if isinstance(c, RatingChange) else
            RatingChange(c["player"], c["before"], c["after"], c["change"]) for c in changes]
    assert sorted(c.player for c in rows) == sorted(expected)
    for c in rows:
        before, after = expected[c.player]
        assert close(c.before, before), (c, before)
        assert close(c.after, after), (c, after)
        assert c.change is not None and close(c.change, after - before), c
        assert c.before is not None and c.after is not None and c.change == c.after - c.before, c


# ---- one test's server and its clients --------------------------------------------------


C = TypeVar("C", bound=LobbyClient)


def name_of(client: LobbyClient) -> str:
    assert client.credentials is not None, "not logged in"
    return client.credentials[0]


class LobbyServer(Generic[C]):
    """A server in this event loop on a real SQLite file, and the clients (``client_class``)
    that talked to it: closed, with the server, by :meth:`aclose`."""

    admin_name = ADMIN
    admin_password = ADMIN_PASSWORD

    def __init__(self, db: Path, client_class: type[C]) -> None:
        self.db = db
        self.client_class = client_class
        self.server: RunningServer | None = None
        self.port: int | None = None
        self.clients: list[C] = []

    async def serve(self, config: Config, port: int = 0) -> RunningServer:
        """Start the server on ``port`` (0: a free one)."""
        assert self.server is None, "already running"
        self.server = await start_server(config, host="127.0.0.1", port=port)
        self.port = self.server.port
        return self.server

    async def stop(self) -> None:
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop()

    @property
    def url(self) -> str:
        """The WebSocket URL (that of the last start while the server is stopped)."""
        assert self.port is not None
        return f"ws://127.0.0.1:{self.port}/ws"

    async def client(self, reconnect: bool = False,
                     backoff: tuple[float, float] = (0.02, 0.2)) -> C:
        """A connected client (no automatic reconnect unless asked)."""
        c = self.client_class(self.url, reconnect=reconnect, backoff=backoff)
        self.clients.append(c)
        assert await c.connect() == HELLO
        return c

    async def player(self, name: str, password: str = PASSWORD, reconnect: bool = False) -> C:
        """A new account ``name``, logged in on its own connection."""
        c = await self.client(reconnect=reconnect)
        data = await c.register(name, password)
        assert {k: data[k] for k in ("player", "role")} == {"player": name, "role": "player"}
        return c

    async def players(self, *names: str) -> list[C]:
        return [await self.player(n) for n in names]

    async def admin(self) -> C:
        c = await self.client()
        data = await c.login(self.admin_name, self.admin_password)
        assert data["role"] == "admin"
        return c

    async def aclose(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()
        await self.stop()


async def start_match(a: LobbyClient, b: LobbyClient, length: int | str = 1,
                      ladder: str = "backgammon") -> int:
    """``a`` invites ``b``, ``b`` joins; returns the match id."""
    a_name, b_name = name_of(a), name_of(b)
    await a.call("invite", name=b_name, ladder=ladder, length=length)
    await b.next_push("invited", where=lambda p: p["data"]["from"] == a_name)
    started = await b.call("join", name=a_name)
    assert (await a.next_push("match_started"))["data"] == started
    assert started["status"] == "playing"
    return int(started["match"])


async def expect_error(aw: Awaitable[Any], code: str) -> LobbyError:
    """``aw`` must raise :class:`LobbyError` with ``code`` and a message for people."""
    try:
        await aw
    except LobbyError as e:
        assert e.code == code, (e.code, e.message)
        assert e.message.strip(), "a refusal explains itself"
        assert e.reply["ok"] is False and e.reply["error"]["code"] == code
        return e
    raise AssertionError(f"expected a {code!r} refusal")


# ---- rating systems driven by plain games ---------------------------------------------------


class LadderBook:
    """A system's own book (found by entry point, as the lobby finds it), fed plain games: each
    list of games is one unit (an event, or one match), as ``matchlobby rate`` feeds it."""

    def __init__(self, system: str, **options: Any) -> None:
        from server.api import LadderConfig
        from server.api.registry import rating_systems

        found = rating_systems()[system]
        self.ladder = LadderConfig(system, found, found.parse_options(options))
        self.system = found
        self.options = self.ladder.options
        self.book = found.new_book(self.options)
        self.seq = 0

    @property
    def standings(self) -> dict[str, Any]:
        return self.book.standings

    @property
    def history(self) -> Any:
        return getattr(self.book, "history", None)

    def new_standing(self, player: str) -> Any:
        return self.book.new_standing(player)

    def unit(self, games: Sequence[Any], live: bool = False) -> Any:
        from server.api import RatedUnit

        self.seq += 1
        first = min(g.played_on for g in games) if games else datetime(2026, 1, 1).date()
        return RatedUnit("ladder", self.seq, f"{first.isoformat()}T00:00:00Z", tuple(games), {},
                         match_id=self.seq if live else None, event_id=None if live else self.seq)

    def compute(self, games: Sequence[Any]) -> dict[str, Any]:
        return dict(self.book.compute(self.unit(games)))

    def accept(self, new: dict[str, Any], games: Sequence[Any]) -> None:
        self.book.accept(new, self.unit(games))

    def apply(self, games: Sequence[Any]) -> dict[str, Any]:
        unit = self.unit(games)
        new = dict(self.book.compute(unit))
        self.book.accept(new, unit)
        return new

    def check_game(self, game: Any) -> None:
        self.system.check_game(self.options, game)

    def rows(self, as_of: Any = None) -> list[dict[str, Any]]:
        from ratings_plugin.book import ranked_rows

        return ranked_rows(self.ladder, self.standings.values(), as_of)
