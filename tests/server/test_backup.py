"""``matchlobby backup``, ``restore`` and ``check`` as an operator runs them, on both backends.

A backup is taken from a running ``matchlobby serve`` while two players keep finishing
rated matches; restored into a fresh database it holds every result acknowledged before the
backup began, and exactly the first results of the run (one consistent moment), and passes
``replay --check``. A restore is refused from a backup cut short, while a server runs on the
target and over a lobby without ``--force``, the target left as it was. ``check`` says ``ok`` on a sound
database and names the problem on one whose stored rating or history was changed behind
the log's back, and on a damaged SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import postgres
from testkit.cli import replay_check, run_cli_async
from testkit.clients import play, registered
from testkit.constants import open_config
from testkit.db import execute, sql
from testkit.postgres import PgDb
from testkit.server_loop import LobbyServer
from testkit.server_process import ServerProcess

FINISHED = "SELECT id FROM matches WHERE status = 'finished' ORDER BY id"
PASSWORD = "a-password"


def fresh_target(tmp_path: Path, backend: str) -> Path:
    """A database that does not exist yet (SQLite) or is empty (PostgreSQL)."""
    if backend == "postgresql":
        server = postgres.server_url()
        assert server is not None
        return PgDb(postgres.new_database(server), tmp_path)  # type: ignore[return-value]
    return tmp_path / "restored.db"


def with_password(db: Path, backend: str) -> str:
    """``db``'s URL with a password in it (the test cluster trusts its socket and ignores
    it): no command may print it."""
    if backend != "postgresql":
        return str(db)
    return str(db).replace("postgres@", "postgres:Sekrit-99@", 1)


async def cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = await run_cli_async(list(args), cwd)
    assert "Traceback" not in done.stderr, done.stderr
    assert "Sekrit-99" not in done.stdout + done.stderr
    return done.returncode, done.stdout, done.stderr


async def test_a_backup_of_a_running_lobby_restores_whole_and_passes_the_replay(
        db_path: Path, tmp_path: Path, backend: str, figures: dict[str, Any]) -> None:
    config = tmp_path / "open.toml"
    config.write_text(open_config())
    server = ServerProcess(db_path, config, log=tmp_path / "serve.log").start()
    acknowledged: list[int] = []
    backup = tmp_path / "lobby.backup"
    try:
        await server.ready()
        alice, bob = await registered(server.url, "alice", "bob", password=PASSWORD)
        writing = True

        async def write() -> None:
            winner, loser = alice, bob
            while writing:
                acknowledged.append(int((await play(winner, loser))["match"]))
                winner, loser = loser, winner

        writer = asyncio.create_task(write())
        while len(acknowledged) < 3:
            await asyncio.sleep(0.01)
        before = list(acknowledged)
        status, out, err = await cli("backup", str(backup), "--db", with_password(db_path, backend),
                                     "--config", str(config), cwd=tmp_path)
        during = len(acknowledged) - len(before)
        writing = False
        await writer
        for c in (alice, bob):
            await c.close()
    finally:
        server.stop()
    assert status == 0, err
    assert out.startswith("backed up ") and str(backup) in out, out
    assert os.stat(backup).st_mode & 0o077 == 0  # the accounts' hashes: its owner's only
    if backend == "sqlite":  # a file of its own, no WAL beside it
        assert sql(backup, "PRAGMA journal_mode") == [("delete",)]
    assert not list(tmp_path.glob(".lobby.backup.partial*"))

    target = fresh_target(tmp_path, backend)
    status, out, err = await cli("restore", str(backup), "--db", with_password(target, backend),
                                 "--config", str(config), cwd=tmp_path)
    assert status == 0, out + err
    assert out.splitlines()[-1].startswith("check: ok: "), out
    restored = [r[0] for r in sql(target, FINISHED)]
    # every result acknowledged before the backup began is there, and the backup is one
    # moment of the run: the first results, in the order they were committed
    assert restored[:len(before)] == before, (restored, before, during)
    assert restored == acknowledged[:len(restored)], (restored, acknowledged)
    figures[f"{backend}: results committed while the backup ran"] = during
    figures[f"{backend}: of them in the backup"] = len(restored) - len(before)
    assert sql(target, "SELECT name FROM players ORDER BY id")[1:] == [("alice",), ("bob",)]
    code, said = await replay_check(target, config)
    assert code == 0, said
    restored_lobby = LobbyServer(target)  # the restored lobby serves, its results counted
    try:
        await restored_lobby.start()
        alice = await restored_lobby.login("alice", PASSWORD)
        row = (await alice.call("rating", ladder="backgammon"))["ratings"][0]
        assert row["games"] == len(restored), row
    finally:
        await restored_lobby.aclose()


async def test_restore_is_refused_while_a_server_runs_on_the_target_and_over_a_lobby(
        db_path: Path, tmp_path: Path, backend: str) -> None:
    config = tmp_path / "open.toml"
    config.write_text(open_config())
    backup = tmp_path / "admin-only.backup"
    status, _, err = await cli("backup", str(backup), "--db", str(db_path), "--config",
                               str(config), cwd=tmp_path)  # no server: a backup all the same
    assert status == 0, err
    damaged = tmp_path / "damaged.backup"  # cut short, as by a full disk: refused first
    damaged.write_bytes(backup.read_bytes()[:backup.stat().st_size * 2 // 3])
    players = sql(db_path, "SELECT * FROM players")
    status, out, err = await cli("restore", str(damaged), "--db", str(db_path), "--force",
                                 "--config", str(config), cwd=tmp_path)
    assert status == 2 and str(damaged) in err and "nothing was restored" in err, out + err
    assert sql(db_path, "SELECT * FROM players") == players

    server = ServerProcess(db_path, config, log=tmp_path / "serve.log").start()
    try:
        await server.ready()
        (carol,) = await registered(server.url, "carol", password=PASSWORD)
        status, out, err = await cli("restore", str(backup), "--db", str(db_path), "--force",
                                     "--config", str(config), cwd=tmp_path)
        assert status == 2 and out == "", (out, err)
        assert len(err.splitlines()) == 1, err
        assert err.startswith("matchlobby restore: ") and "serve is running on it" in err, err
        assert "nothing was restored" in err
        assert (await carol.whois("carol")).online  # the server serves on, carol still there
        await carol.close()
    finally:
        server.stop()

    players = sql(db_path, "SELECT name FROM players ORDER BY id")
    assert players[-1] == ("carol",)
    if backend == "postgresql":  # any other client: pg_restore --clean would drop its tables
        import asyncpg

        other = await asyncpg.connect(str(db_path), server_settings={"application_name": "psql"})
        try:
            status, out, err = await cli("restore", str(backup), "--db", str(db_path), "--force",
                                         "--config", str(config), cwd=tmp_path)
        finally:
            await other.close()
        assert status == 2 and "other clients are connected to it: psql (1)" in err, out + err
        assert sql(db_path, "SELECT name FROM players ORDER BY id") == players
    status, out, err = await cli("restore", str(backup), "--db", str(db_path), "--config",
                                 str(config), cwd=tmp_path)
    assert status == 2, out + err
    assert "holds a lobby with 2 player(s)" in err and "--force" in err, err
    assert sql(db_path, "SELECT name FROM players ORDER BY id") == players

    status, out, err = await cli("restore", str(backup), "--db", str(db_path), "--force",
                                 "--config", str(config), cwd=tmp_path)
    assert status == 0, out + err
    assert sql(db_path, "SELECT name FROM players ORDER BY id") == players[:1]  # carol came after


async def test_a_postgresql_restore_holds_the_restoring_lock_while_it_runs(
        db_path: Path, fast_config: Path, tmp_path: Path, backend: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A restore holds the "restoring" lock from before it looks for nodes until it is done
    (a node that starts meanwhile refuses: tests/server/test_one_serve.py); a second restore
    is refused while one holds it."""
    if backend != "postgresql":
        pytest.skip("SQLite's restore holds the serve lock itself (the test above)")
    import asyncpg

    from server.store.pg.backup import program
    from server.store.serve_lock import RESTORE_LOCK

    backup = tmp_path / "lobby.backup"
    status, _, err = await cli("backup", str(backup), "--db", str(db_path), "--config",
                               str(fast_config), cwd=tmp_path)
    assert status == 0, err
    holder = await asyncpg.connect(str(db_path))  # as a restore would
    try:
        await holder.execute("SELECT pg_advisory_lock($1, 0)", RESTORE_LOCK)
        status, out, err = await cli("restore", str(backup), "--db", str(db_path), "--force",
                                     "--config", str(fast_config), cwd=tmp_path)
        assert status == 2, out + err
        assert "another matchlobby restore is running on it" in err, err
        assert "nothing was restored" in err, err
    finally:
        await holder.close()

    # pg_restore itself, wrapped: what it finds in pg_locks while it restores
    seen = tmp_path / "locks-while-restoring.json"
    wrapper = tmp_path / "bin" / "pg_restore"
    wrapper.parent.mkdir()
    wrapper.write_text(f"""#!{sys.executable}
import asyncio, json, os, sys
import asyncpg
url = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--dbname=")]
async def locks() -> None:
    conn = await asyncpg.connect(url[0])
    rows = await conn.fetch("SELECT mode, granted FROM pg_locks WHERE locktype = 'advisory' "
                            "AND classid = $1::bigint::oid AND objid = 0 AND objsubid = 2 "
                            "AND database = (SELECT oid FROM pg_database "
                            "WHERE datname = current_database())", {RESTORE_LOCK})
    await conn.close()
    open({str(seen)!r}, "w").write(json.dumps([dict(r) for r in rows]))
if url:
    asyncio.run(locks())
os.execv({program("pg_restore")!r}, ["pg_restore", *sys.argv[1:]])
""")
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    status, out, err = await cli("restore", str(backup), "--db", str(db_path), "--force",
                                 "--config", str(fast_config), cwd=tmp_path)
    assert status == 0, out + err
    assert json.loads(seen.read_text()) == [{"mode": "ExclusiveLock", "granted": True}]
    server = ServerProcess(db_path, fast_config, log=tmp_path / "after.log").start()
    try:
        await server.ready()  # done: the lock is let go
    finally:
        server.stop()


async def test_check_finds_a_rating_or_history_changed_behind_the_logs_back(
        lobby: LobbyServer, fast_config: Path) -> None:
    db = lobby.db
    alice, bob = await lobby.players("alice", "bob")
    for winner, loser in ((alice, bob), (alice, bob), (bob, alice)):
        await play(winner, loser)
    check = ["check", "--db", str(db), "--config", str(fast_config)]
    status, out, err = await cli(*check, cwd=db.parent)  # the server runs on
    assert status == 0, out + err
    assert len(out.splitlines()) == 1 and out.startswith("check: ok: "), out

    alice_id = sql(db, "SELECT id FROM players WHERE name = 'alice'")[0][0]
    execute(db, "UPDATE ratings SET rating = rating + 25 WHERE player_id = ?", (alice_id,))
    status, out, err = await cli(*check, cwd=db.parent)
    assert status == 1, out + err
    *problems, summary = out.splitlines()
    assert problems and all(p.startswith("replay --check: backgammon: ") for p in problems), out
    assert any("alice" in p for p in problems), out
    assert summary.startswith("check: ") and "problem(s)" in summary, out
    execute(db, "UPDATE ratings SET rating = rating - 25 WHERE player_id = ?", (alice_id,))

    execute(db, "UPDATE history SET after = after + 1 WHERE id = (SELECT max(id) FROM history)")
    status, out, err = await cli(*check, cwd=db.parent)
    assert status == 1, out + err
    assert "replay --check: backgammon: rating history differs from the log" in out, out


def damage_a_page_of(db: Path, table: str) -> None:
    """Overwrite one page of ``table``'s b-tree with random bytes (SQLite's ``dbstat`` finds
    it)."""
    conn = sqlite3.connect(db)
    try:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = [r[0] for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (table,))]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError as e:
        pytest.skip(f"this SQLite has no dbstat table: {e}")
    finally:
        conn.close()
    fd = os.open(db, os.O_RDWR)
    try:
        os.pwrite(fd, random.Random(7).randbytes(size), (pages[len(pages) // 2] - 1) * size)
    finally:
        os.close(fd)


@pytest.mark.sqlite_only("damage to the file's pages is SQLite's; PostgreSQL's are its own")
async def test_check_names_the_damage_of_an_sqlite_file(db_path: Path, fast_config: Path,
                                                      backend: str) -> None:
    conn = sqlite3.connect(db_path)
    with conn:
        conn.executemany("INSERT INTO history (ladder, player_id, before, after, match_id, "
                         "event_id, at) VALUES ('backgammon', 1, ?, ?, NULL, NULL, "
                         "'2026-01-01T00:00:00Z')", [(1500.0 + i, 1501.0 + i) for i in range(3000)])
    conn.close()
    damage_a_page_of(db_path, "history")
    check = ["check", "--db", str(db_path), "--config", str(fast_config)]
    status, out, err = await cli(*check, cwd=db_path.parent)
    assert status == 1, out + err
    *problems, summary = out.splitlines()
    assert problems and all(p.startswith(f"{db_path}: the database is damaged") for p in problems)
    assert "replay --check not run" in summary, out

    db_path.write_bytes(b"event,date,side_a,side_b\n" * 100)  # not a database at all
    status, out, err = await cli(*check, cwd=db_path.parent)
    assert status == 1, out + err
    assert "not an SQLite database" in out, out


def test_the_operators_commands_refuse_with_one_kind_of_refusal() -> None:
    """``user``, ``backup``/``restore``/``check`` and ``copy``: one class, which the command
    line prints as one line with status 2."""
    from server import users
    from server.refused import Refused
    from server.store import backup, copy

    assert users.Refused is backup.Refused is copy.Refused is Refused


def test_a_missing_pg_dump_is_named_with_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from server.refused import Refused
    from server.store.pg import backup as pg

    monkeypatch.setattr(pg.shutil, "which", lambda name: None)
    monkeypatch.setattr(pg.glob, "glob", lambda pattern: [])
    with pytest.raises(Refused, match=r"pg_dump is not installed: .*apt-get install "
                                      r"postgresql-client"):
        pg.program("pg_dump")
    monkeypatch.setattr(pg.glob, "glob", lambda pattern: [
        "/usr/lib/postgresql/9/bin/pg_dump", "/usr/lib/postgresql/16/bin/pg_dump",
        "/usr/lib/postgresql/15/bin/pg_dump"])
    assert pg.program("pg_dump") == "/usr/lib/postgresql/16/bin/pg_dump"  # the newest


def test_the_test_kit_finds_postgresql_where_backup_finds_its_programs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from server.store.pg import backup as pg

    monkeypatch.setattr(pg, "program", lambda name: f"/opt/pg-17/bin/{name}")
    assert postgres.binaries() == Path("/opt/pg-17/bin")

    def missing(name: str) -> str:
        raise pg.Refused(pg.INSTALL.format(program=name))

    monkeypatch.setattr(pg, "program", missing)
    assert postgres.binaries() is None


def test_the_programs_get_the_url_without_its_password() -> None:
    from server.store.pg.backup import Target

    target = Target.of("postgresql://lobby:Sekrit-99@db.example:5433/lobby?sslmode=require")
    assert target.url == "postgresql://lobby@db.example:5433/lobby?sslmode=require"
    assert target.env["PGPASSWORD"] == "Sekrit-99"


def test_the_programs_get_the_decoded_password() -> None:
    """The server's driver decodes %XX in the URL's password; pg_dump must get the same one."""
    from server.store.pg.backup import Target

    target = Target.of("postgresql://lobby:p%40ss%2Fword@db:5432/ml")
    assert target.url == "postgresql://lobby@db:5432/ml"
    assert target.env["PGPASSWORD"] == "p@ss/word"


def test_a_password_in_the_query_goes_in_the_environment_and_is_never_shown() -> None:
    from server.store.backends import shown
    from server.store.pg.backup import Target

    url = "postgresql://lobby@db:5432/ml?sslmode=require&password=Sekrit%2D99"
    target = Target.of(url)
    assert target.url == "postgresql://lobby@db:5432/ml?sslmode=require"  # not in ps
    assert target.env["PGPASSWORD"] == "Sekrit-99"
    assert "Sekrit" not in shown(url) and "sslmode=require" in shown(url)
    assert "Sekrit" not in shown("postgresql://lobby:Sekrit@db/ml?password=Sekrit")


@pytest.mark.sqlite_only("SQLite's backup API, step by step; pg_dump's snapshot is PostgreSQL's")
async def test_an_sqlite_backup_copies_one_snapshot_while_writes_commit_between_its_steps(
        db_path: Path, tmp_path: Path, backend: str) -> None:
    """Another connection commits a new player between every two steps of the copy, as the
    server's writer would: none of them waits (a write blocked by the backup would time out in
    the same thread), and the copy is the moment the backup began, whole."""
    from server.store.backup import backup_sqlite

    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("PRAGMA busy_timeout = 2000")
    before = sql(db_path, "SELECT * FROM players ORDER BY id")
    steps: list[int] = []

    def between_steps(remaining: int, total: int) -> None:
        steps.append(remaining)
        if len(steps) > 100:  # a copy that starts over at each commit would never end
            return
        writer.execute("INSERT INTO players (name, name_key, password_hash, role, created_at) "
                       "VALUES (?, ?, 'x', 'player', '2026-01-01T00:00:00Z')",
                       (f"p{len(steps)}", f"p{len(steps)}"))

    copy = tmp_path / "copy.db"
    try:
        await backup_sqlite(str(db_path), copy, force=False, pages=8, progress=between_steps)
    finally:
        writer.close()
    assert 3 < len(steps) < 100 and steps[-1] == 0, steps
    assert len(sql(db_path, "SELECT * FROM players")) == len(before) + len(steps)
    assert sql(copy, "SELECT * FROM players ORDER BY id") == before
    assert sql(copy, "PRAGMA integrity_check") == [("ok",)]
