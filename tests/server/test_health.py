"""``GET /healthz`` and ``GET /readyz`` on the lobby's own port: their codes and bodies, and
``/readyz`` saying 503 while the database cannot be used (the SQLite file made unreadable or
moved away; PostgreSQL stopped), then 200 again once it is back, the lobby serving
throughout."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from testkit.constants import ADMIN
from testkit.http import http_get, until_ready
from testkit.own_cluster import database_on_its_own_cluster
from testkit.server_loop import LobbyServer

from server.net import health
from server.store.probe import SqliteProbe


async def test_healthz_and_readyz_answer_a_running_lobby(lobby: LobbyServer) -> None:
    assert lobby.port is not None
    status, headers, body = await http_get(lobby.port, "/healthz")
    assert (status, body) == (200, "ok\n")
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert headers["cache-control"] == "no-store"
    assert headers["connection"] == "close"  # the server closes after answering: so it says
    assert (await http_get(lobby.port, "/readyz"))[0::2] == (200, "ready\n")
    assert (await http_get(lobby.port, "/"))[1]["connection"] == "close"
    status, headers, body = await http_get(lobby.port, "/readyz", "HEAD")
    assert (status, body, headers["content-length"]) == (200, "", "6")
    status, headers, _ = await http_get(lobby.port, "/readyz?verbose=1", "POST")
    assert (status, headers["allow"]) == (405, "GET, HEAD")
    # a probe storm is answered from the last check (at most one a second reaches the database)
    answers = await asyncio.gather(*(http_get(lobby.port, "/readyz") for _ in range(50)))
    assert {(code, body) for code, _, body in answers} == {(200, "ready\n")}
    c = await lobby.client()
    assert (await c.whois(ADMIN)).role == "admin"


@pytest.mark.sqlite_only("a file made unreadable or moved away is SQLite's")
async def test_readyz_is_503_while_the_sqlite_file_is_unreadable_or_moved(
        lobby: LobbyServer, db_path: Path) -> None:
    assert lobby.port is not None
    watcher = await lobby.client()
    mode = db_path.stat().st_mode
    db_path.chmod(0)
    try:
        body = await until_ready(lobby.port, 503)
        assert body == "database: the database file cannot be read and written (its " \
                       "permissions)\n", body
        assert (await http_get(lobby.port, "/healthz"))[0] == 200  # the process is up
        assert (await watcher.call("who"))["players"] == []  # and still answers
    finally:
        db_path.chmod(mode)
    assert await until_ready(lobby.port, 200) == "ready\n"

    moved = db_path.with_name("elsewhere.db")
    db_path.rename(moved)
    try:
        body = await until_ready(lobby.port, 503)
        assert body.startswith("database: the database file cannot be found"), body
    finally:
        moved.rename(db_path)
    assert await until_ready(lobby.port, 200) == "ready\n"

    # another file under its name is not the one the lobby writes to
    db_path.rename(moved)
    try:
        db_path.write_bytes(moved.read_bytes())
        body = await until_ready(lobby.port, 503)
        assert body == "database: the database file was moved or replaced while serving\n", body
    finally:
        os.replace(moved, db_path)
    assert await until_ready(lobby.port, 200) == "ready\n"


@pytest.mark.sqlite_only("the check on a thread of its own is SQLite's")
async def test_a_hung_sqlite_check_holds_one_thread_whatever_the_probes(
        lobby: LobbyServer, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a file system that stops answering: the check's thread hangs past the probe's time limit;
    # the probes that follow must not start more (they would fill the threads logins use)
    assert lobby.port is not None and lobby.server is not None
    monkeypatch.setattr(health, "CACHE_SECONDS", 0.0)  # every probe asks the database
    monkeypatch.setattr(health, "CHECK_TIMEOUT", 0.1)  # and soon gives up waiting
    release = threading.Event()
    checks: list[str] = []

    class HungFile(SqliteProbe):
        def _check(self) -> str | None:
            checks.append(threading.current_thread().name)
            release.wait(60)
            return super()._check()

    lobby.server.transport.health.probe = HungFile(str(db_path), lobby.server.db)
    try:
        answers = [await http_get(lobby.port, "/readyz") for _ in range(5)]
        assert answers[0][0::2] == (503, "database: the database did not answer within 0.1 s\n")
        assert {a[0::2] for a in answers[1:]} == {
            (503, "database: the database file has not answered the last check yet\n")}
        assert len(checks) == 1, checks
    finally:
        release.set()
    assert await until_ready(lobby.port, 200) == "ready\n"


@pytest.mark.postgresql
async def test_readyz_is_503_while_postgresql_is_stopped(tmp_path: Path, fast_config: Path) -> None:
    async with database_on_its_own_cluster(tmp_path, fast_config) as (cluster, db):
        lobby = LobbyServer(db)  # type: ignore[arg-type]
        await lobby.start()
        try:
            assert lobby.port is not None
            watcher = await lobby.client()
            assert await until_ready(lobby.port, 200) == "ready\n"
            await asyncio.to_thread(cluster.kill)
            body = await until_ready(lobby.port, 503)
            assert body.startswith("database: the database does not answer"), body
            assert (await http_get(lobby.port, "/healthz"))[0] == 200
            assert (await watcher.call("who"))["players"] == []  # from memory
            await asyncio.to_thread(cluster.start)
            assert await until_ready(lobby.port, 200) == "ready\n"
        finally:
            await lobby.aclose()


class _Db:
    fault: Any = None


def test_the_readiness_probe_reads_the_configured_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ``#``, ``?`` and ``%XX`` mean something in a URI: the probe must still open this very file
    monkeypatch.chdir(tmp_path)
    for name in ("lobby#1.db", "lobby?x.db", "lobby%41.db"):
        conn = sqlite3.connect(name)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
        assert asyncio.run(SqliteProbe(name, _Db())()) is None, name  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lobby#1.db", "lobby%41.db",
                                                         "lobby?x.db"]
