"""Fixtures for the client tests: a real server on a free port and a real SQLite file.

The admin account is made once, with the real ``matchlobby user add --admin``,
in a template database; every test runs its own server on a copy of it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from clientkit import (
    ADMIN,
    ADMIN_PASSWORD,
    FAST_CONFIG,
    PROCESS_TIMEOUT,
    ROOT,
    Gate,
    Lobby,
    matchlobby_command,
    process_env,
)


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("clients-template")
    config = folder / "fast.toml"
    config.write_text(FAST_CONFIG, encoding="utf-8")
    db = folder / "lobby.db"
    done = subprocess.run(
        [*matchlobby_command(), "user", "add", ADMIN, "--admin", "--db", str(db),
         "--config", str(config)],
        input=ADMIN_PASSWORD + "\n", capture_output=True, text=True, cwd=ROOT,
        env=process_env(), timeout=PROCESS_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture
def db_path(tmp_path: Path, template_db: Path) -> Path:
    db = tmp_path / "lobby.db"
    shutil.copyfile(template_db, db)
    return db


@pytest.fixture
async def lobby(db_path: Path) -> AsyncIterator[Lobby]:
    """A running server (drop timeout :data:`clientkit.DROP_TIMEOUT`); its clients close after."""
    harness = Lobby(db_path)
    await harness.start()
    try:
        yield harness
    finally:
        await harness.aclose()


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """``ladders`` answers only when the test sets ``gate.release`` (restored after the test)."""
    import server.handlers  # noqa: F401  (the real handlers register first)
    from server.lobby import HANDLERS

    held = Gate()
    monkeypatch.setitem(HANDLERS, "ladders", held.handler)
    return held
