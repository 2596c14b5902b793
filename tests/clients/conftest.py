"""Fixtures for the client tests: a real server on a free port and a real SQLite file.

The admin account is made once, with the real ``matchlobby user add --admin``,
in a template database; every test runs its own server on a copy of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from clientkit import Gate, Lobby
from sharedkit import admin_template


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db, _ = admin_template(tmp_path_factory.mktemp("clients-template"))
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
    """``events`` answers only when the test sets ``gate.release`` (restored after the test)."""
    from server.handlers import HANDLERS  # the table a server started later is given

    held = Gate()
    monkeypatch.setitem(HANDLERS, "events", held.handler)
    return held
