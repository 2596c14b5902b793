"""Fixtures for the lobby integration tests: a real server on a free port, a real SQLite file.

The admin account is created once with the real ``matchlobby user add`` command
in a template database; each test gets its own copy of that file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lobbykit import ADMIN, ADMIN_PASSWORD, FAST_CONFIG, Harness, add_user


@pytest.fixture(scope="session")
def fast_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A config file with cheap password hashing, for the command-line tools."""
    path = tmp_path_factory.mktemp("config") / "matchlobby.toml"
    path.write_text(FAST_CONFIG, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory, fast_config: Path) -> Path:
    """A database holding only the admin, made by ``matchlobby user add --admin``; each test's
    ``db_path`` (tests/kit/sharedkit.py) is a copy of it."""
    db = tmp_path_factory.mktemp("template") / "lobby.db"
    add_user(db, fast_config, ADMIN, ADMIN_PASSWORD, admin=True)
    return db


@pytest.fixture
async def harness(db_path: Path, fast_config: Path) -> AsyncIterator[Harness]:
    """A server not yet started (for tests that pick the drop timeout or restart it)."""
    h = Harness(db_path, fast_config)
    try:
        yield h
    finally:
        await h.aclose()


@pytest.fixture
async def lobby(harness: Harness) -> Harness:
    """A running server with the default configuration."""
    await harness.start()
    return harness
