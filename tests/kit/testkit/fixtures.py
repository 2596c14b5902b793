"""The fixtures every test folder shares, loaded by the repository's ``conftest.py``.

- ``template`` (once a run): a database holding only the admin, made by the real
  ``matchlobby user add --admin``, and the fast-hashing configuration beside it
  (``template_db``, ``fast_config``). A folder that needs another starting point (several
  admins, say) overrides ``template_db`` in its own ``conftest.py``.
- ``db_path``: the test's own copy of ``template_db``.
- ``harness``: a :class:`LobbyServer` on ``db_path``, not started (the test picks its drop
  timeout or its ladders); ``lobby``: the same, started with the defaults.
- ``gate``: the ``events`` command held in flight until the test releases it.
- ``figures``: the test's measured figures, reported after the results (:mod:`testkit.figures`).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from testkit import figures as figure_groups
from testkit.cli import admin_template
from testkit.clients import Gate
from testkit.server_loop import LobbyServer


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return admin_template(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="session")
def template_db(template: tuple[Path, Path]) -> Path:
    return template[0]


@pytest.fixture(scope="session")
def fast_config(template: tuple[Path, Path]) -> Path:
    """A configuration file with cheap password hashing, for the command line."""
    return template[1]


@pytest.fixture
def db_path(tmp_path: Path, template_db: Path) -> Path:
    """The test's own copy of ``template_db``."""
    db = tmp_path / "lobby.db"
    shutil.copyfile(template_db, db)
    return db


@pytest.fixture
async def harness(db_path: Path) -> AsyncIterator[LobbyServer]:
    """A server not yet started; it and its clients are closed after the test."""
    h = LobbyServer(db_path)
    try:
        yield h
    finally:
        await h.aclose()


@pytest.fixture
async def lobby(harness: LobbyServer) -> LobbyServer:
    """A running server with the default configuration."""
    await harness.start()
    return harness


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Gate:
    """``events`` answers only when the test sets ``gate.release`` (restored after the test)."""
    from server.handlers import HANDLERS  # the table a server started later is given

    held = Gate()
    monkeypatch.setitem(HANDLERS, "events", held.handler)
    return held


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The test's measured figures, under its folder's heading in the run's summary."""
    figs: dict[str, Any] = {}
    figure_groups.group(f"{request.path.parent.name} figures")[request.node.nodeid] = figs
    yield figs


@pytest.fixture(scope="session", autouse=True)
def _figures_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The run's figures kept as ``figures.json`` in pytest's base temporary directory."""
    yield
    figure_groups.save(tmp_path_factory.getbasetemp() / "figures.json")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    figure_groups.report(terminalreporter.section, terminalreporter.write_line)
