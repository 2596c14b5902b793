"""The fixtures every test folder shares, loaded by the repository's ``conftest.py``.

- ``template`` (once a run): a database holding only the admin, made by the real
  ``matchlobby user add --admin``, and the fast-hashing configuration beside it
  (``template_db``, ``fast_config``). A folder that needs another starting point (several
  admins, say) overrides ``template_db`` in its own ``conftest.py``.
- ``backend`` (``sqlite`` or ``postgresql``): the storage, server, reliability and plugin tests
  run on both (:data:`BOTH_BACKENDS`, and any test marked ``both_backends``), unless marked
  ``sqlite_only`` with the reason; the PostgreSQL cases are marked ``postgresql``; on
  PostgreSQL they are skipped with the reason when it is not installed (``make test`` always
  provides it, :mod:`testkit.postgres`).
- ``db_path``: the test's own copy of ``template_db``: the file, or on PostgreSQL a database
  copied from it by the real ``matchlobby copy`` (a :class:`~testkit.postgres.PgDb`).
- ``harness``: a :class:`LobbyServer` on ``db_path``, not started (the test picks its drop
  timeout or its ladders); ``lobby``: the same, started with the defaults.
- ``nodes``: two :class:`LobbyServer` on ``db_path`` named ``node-a`` and ``node-b``, not
  started (several nodes share a PostgreSQL database: skipped on SQLite).
- ``gate``: the ``events`` command held in flight until the test releases it.
- ``figures``: the test's measured figures, reported after the results (:mod:`testkit.figures`).
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from testkit import figures as figure_groups
from testkit import postgres
from testkit.cli import admin_template, run_cli
from testkit.clients import Gate
from testkit.postgres import PgDb
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


BACKENDS = ("sqlite", "postgresql")
BOTH_BACKENDS = {"server", "reliability", "plugins", "storage"}  # test folders run on both


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    both = ((metafunc.definition.path.parent.name in BOTH_BACKENDS
             or metafunc.definition.get_closest_marker("both_backends") is not None)
            and metafunc.definition.get_closest_marker("sqlite_only") is None)
    # the PostgreSQL cases marked: `-m postgresql` runs them alone, `-m "not postgresql"` the rest
    cases = [pytest.param(name, marks=[pytest.mark.postgresql] if name == "postgresql" else [])
             for name in (BACKENDS if both else BACKENDS[:1])]
    metafunc.parametrize("backend", cases, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The database the test's server runs on (see :data:`BOTH_BACKENDS`)."""
    name: str = getattr(request, "param", "sqlite")
    if name == "postgresql" and postgres.server_url() is None:
        pytest.skip(postgres.MISSING)
    return name


_pg_templates: dict[Path, str] = {}


def pg_template(template_db: Path, config: Path) -> str:
    """A PostgreSQL database holding what ``template_db`` holds (``matchlobby copy``), once a
    run; the name to copy databases from."""
    name = _pg_templates.get(template_db)
    if name is None:
        server = postgres.server_url()
        assert server is not None
        url = postgres.new_database(server)
        done = run_cli(["copy", "--from", f"sqlite:///{template_db}", "--to", url,
                        "--config", str(config)], template_db.parent)
        assert done.returncode == 0, done.stderr
        name = _pg_templates[template_db] = PgDb(url, template_db.parent).name
    return name


@pytest.fixture
def db_path(tmp_path: Path, template_db: Path, fast_config: Path, backend: str) -> Iterator[Path]:
    """The test's own copy of ``template_db`` (on PostgreSQL, a database of its own, dropped
    after the test)."""
    if backend == "postgresql":
        server = postgres.server_url()
        assert server is not None
        url = postgres.new_database(server, pg_template(template_db, fast_config))
        yield PgDb(url, tmp_path)  # type: ignore[misc]
        postgres.drop_database(server, PgDb(url, tmp_path).name)
        return
    db = tmp_path / "lobby.db"
    shutil.copyfile(template_db, db)
    yield db


@pytest.fixture
async def harness(db_path: Path) -> AsyncIterator[LobbyServer]:
    """A server not yet started; it and its clients are closed after the test."""
    h = LobbyServer(db_path)
    try:
        yield h
    finally:
        await h.aclose()


@pytest.fixture
async def nodes(db_path: Path, backend: str) -> AsyncIterator[tuple[LobbyServer, LobbyServer]]:
    """Two servers on one database, not started; closed after the test."""
    if backend != "postgresql":
        pytest.skip("several nodes share a PostgreSQL database; SQLite has one process")
    a = LobbyServer(db_path, configure=lambda c: replace(c, node="node-a"))
    b = LobbyServer(db_path, configure=lambda c: replace(c, node="node-b"))
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


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

