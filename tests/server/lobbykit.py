"""Helpers for the lobby integration tests (imported by the test modules).

Kept apart from ``conftest.py`` so that the test modules can import plain
functions; the fixtures live in ``conftest.py``. What every suite shares (the
accounts, the command line, the FIBS formula, the server and its clients) is in
``tests/kit/sharedkit.py``; the shared names the lobby tests use are also here.
"""

from __future__ import annotations

from pathlib import Path

from sharedkit import (
    ADMIN,
    ADMIN_PASSWORD,
    CLI_TIMEOUT,
    FAST_CONFIG,
    FAST_HASHING,
    HEADER,
    PASSWORD,
    ROOT,
    FibsModel,
    FibsPlayer,
    LobbyServer,
    add_user,
    check_changes,
    cli_env,
    close,
    expect_error,
    fibs_changes,
    free_port,
    matchlobby_command,
    name_of,
    rate_file,
    results_text,
    run_cli,
    run_cli_async,
    sql,
    start_match,
    today,
)

from clients import LobbyClient
from server.app import RunningServer
from server.config import Config, Limits

__all__ = [  # this folder's helpers, and the shared ones (tests/kit/sharedkit.py) its tests use
    "ADMIN", "ADMIN_PASSWORD", "CLI_TIMEOUT", "FAST_CONFIG", "FAST_HASHING", "HEADER", "PASSWORD",
    "ROOT", "FibsModel", "FibsPlayer", "Harness", "add_user", "check_changes", "check_fibs_state",
    "cli_env", "close", "expect_error", "fibs_changes", "free_port", "matchlobby_command",
    "name_of", "rate_file", "results_text", "run_cli", "run_cli_async", "sql", "start_match",
    "today",
]


class Harness(LobbyServer[LobbyClient]):
    """One test's server (startable, stoppable, restartable) and its clients."""

    def __init__(self, db: Path, config_file: Path) -> None:
        super().__init__(db, LobbyClient)
        self.config_file = config_file
        # the server's, from the next start on; every test registers its players from one address
        self.limits = Limits(registrations_per_hour=0)

    async def start(self, drop_timeout: float = 600.0) -> RunningServer:
        """Start on a free port (a new one after a restart)."""
        config = Config(database=str(self.db), password=FAST_HASHING, drop_timeout=drop_timeout,
                        limits=self.limits)
        return await self.serve(config)


async def check_fibs_state(client: LobbyClient, model: FibsModel, ladder: str = "backgammon"
                           ) -> None:
    """``rating``, ``whois``, ``ladder`` and ``history`` all agree with ``model``."""
    table = await client.call("ladder", ladder=ladder, all=True)
    assert table["system"] == "fibs"
    assert [r["player"] for r in table["players"]] == model.ranking()
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
