"""A damaged database: refused at once at start-up, and a storage fault while serving stops
every write.

At start-up, ``matchlobby serve`` (a real process) on a file that is not a usable
matchlobby database exits with status 2 and one line on standard error naming the file and
what is wrong, without a traceback and without listening: random bytes, a truncated file,
a text file, a bad header, a newer schema, a dropped table, ``history`` pages overwritten
(only ``PRAGMA quick_check`` sees it), a folder, a path it cannot create. ``replay``,
``replay --check`` and ``user add`` say the same in one line. A missing file is a new
database; a port already taken is one line too.

While serving, an error that says the file failed (a damaged page under a running server;
a file-size limit that makes the disk "full") answers the command that hit it with
``internal``; the server logs it once, naming the command, refuses every later change
with ``internal`` and a sentence saying so, without touching the file, and keeps answering
what it holds in memory. Nothing refused was acknowledged, and after a repair and a restart
the server carries on from what was committed.
"""

from __future__ import annotations

import logging
import os
import random
import resource
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import run_cli
from testkit.constants import ADMIN, ADMIN_PASSWORD, FAST_CONFIG, PASSWORD, PLAY_FREELY
from testkit.db import sql
from testkit.logs import captured_logs
from testkit.probes import Prober
from testkit.server_process import ServerProcess, free_port
from testkit.server_thread import ServerThread

from server.store.faults import READ_ONLY

START_BOUND = 30.0  # seconds: liveness, not speed (the interpreter's start-up is most of it)
HISTORY_ROWS = 3000  # several pages of history, so damage can hit them alone


def seed_history(db: Path, rows: int = HISTORY_ROWS) -> None:
    """``rows`` plausible history rows for the admin (id 1), written straight into the file."""
    conn = sqlite3.connect(db)
    try:
        conn.executemany(
            "INSERT INTO history (ladder, player_id, before, after, match_id, event_id, at) "
            "VALUES ('backgammon', 1, ?, ?, NULL, NULL, '2026-01-01T00:00:00Z')",
            [(1500.0 + i, 1501.0 + i) for i in range(rows)])
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def pages_of(db: Path, table: str) -> list[int]:
    """The page numbers of ``table``'s b-tree (SQLite's ``dbstat``)."""
    conn = sqlite3.connect(db)
    try:
        return [int(r[0]) for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (table,))]
    except sqlite3.OperationalError as e:  # an SQLite built without dbstat
        pytest.skip(f"this SQLite has no dbstat table to find {table}'s pages: {e}")
    finally:
        conn.close()


def overwrite_pages(db: Path, pages: list[int], seed: int) -> dict[int, bytes]:
    """Overwrite ``pages`` of the file with random bytes; returns what they held."""
    size = sql(db, "PRAGMA page_size")[0][0]
    rng = random.Random(seed)
    saved: dict[int, bytes] = {}
    fd = os.open(db, os.O_RDWR)
    try:
        for page in pages:
            saved[page] = os.pread(fd, size, (page - 1) * size)
            os.pwrite(fd, rng.randbytes(size), (page - 1) * size)
        os.fsync(fd)
    finally:
        os.close(fd)
    return saved


def restore_pages(db: Path, saved: dict[int, bytes]) -> None:
    size = len(next(iter(saved.values())))
    fd = os.open(db, os.O_RDWR)
    try:
        for page, content in saved.items():
            os.pwrite(fd, content, (page - 1) * size)
    finally:
        os.close(fd)


# ---- the damage, one function a case -------------------------------------------------------

def random_bytes(db: Path) -> Path:
    db.write_bytes(random.Random(1).randbytes(64 * 1024))
    return db


def truncated(db: Path) -> Path:
    seed_history(db)
    with open(db, "r+b") as f:
        f.truncate(db.stat().st_size * 2 // 5)
    return db


def text_file(db: Path) -> Path:
    db.write_text("event,date,side_a,side_b,score_a,score_b,length,rated\n" * 200)
    return db


def bad_header(db: Path) -> Path:
    content = bytearray(db.read_bytes())
    content[16:18] = b"\x00\x03"  # a page size of 3 bytes
    db.write_bytes(content)
    return db


def newer_schema(db: Path) -> Path:
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    return db


def dropped(table: str) -> Callable[[Path], Path]:
    def drop(db: Path) -> Path:
        conn = sqlite3.connect(db)
        conn.execute(f"DROP TABLE {table}")
        conn.commit()
        conn.close()
        return db
    drop.__name__ = f"dropped_{table}"
    return drop


def history_damaged(db: Path) -> Path:
    seed_history(db)
    pages = pages_of(db, "history")
    assert len(pages) > 10, pages
    overwrite_pages(db, pages[len(pages) // 2:], seed=7)  # leaves: the root stays readable
    return db


def a_folder(db: Path) -> Path:
    db.unlink()
    db.mkdir()
    return db


def under_a_file(db: Path) -> Path:
    return db / "lobby.db"


def in_a_missing_folder(db: Path) -> Path:
    return db.parent / "no such folder" / "lobby.db"


def unreadable(db: Path) -> Path:
    db.chmod(0)
    return db


CASES: list[tuple[Callable[[Path], Path], str]] = [
    (random_bytes, "not an SQLite database"),
    (truncated, "damaged"),
    (text_file, "not an SQLite database"),
    (bad_header, "not a usable SQLite database"),
    (newer_schema, "schema version 99 is newer"),
    (dropped("matches"), "table 'matches' is missing"),
    (dropped("players"), "table 'players' is missing"),
    (history_damaged, "PRAGMA quick_check"),
    (a_folder, "is a folder"),
    (under_a_file, "is not a folder"),
    (in_a_missing_folder, "does not exist"),
    (unreadable, "cannot open"),
]


def one_line(stderr: str, prefix: str, path: Path, says: str) -> str:
    """The single line of ``stderr``: ``prefix``, the file and what is wrong."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith(prefix), line
    assert str(path) in line and says in line, line
    return line


@pytest.mark.parametrize(("damage", "says"), CASES, ids=[c[0].__name__ for c in CASES])
def test_serve_refuses_a_damaged_database_at_once(
        damage: Callable[[Path], Path], says: str, db_path: Path, tmp_path: Path) -> None:
    if damage is unreadable and os.geteuid() == 0:
        pytest.skip("root reads a file whatever its permissions")
    config = tmp_path / "matchlobby.toml"
    config.write_text(FAST_CONFIG, encoding="utf-8")
    path = damage(db_path)
    began = time.monotonic()
    done = run_cli(["serve", "--db", str(path), "--config", str(config), "--port",
                    str(free_port())], tmp_path)
    took = time.monotonic() - began
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    line = one_line(done.stderr, "matchlobby serve: ", path, says)
    assert "listening" not in done.stdout and "Traceback" not in done.stdout + done.stderr
    print(f"\n{damage.__name__}: exit 2 after {took:.2f} s: {line}")


def test_serve_on_a_taken_port_exits_at_once(db_path: Path, tmp_path: Path) -> None:
    """The file is fine but the port is not: one line, status 2, no process left behind."""
    config = tmp_path / "matchlobby.toml"
    config.write_text(FAST_CONFIG, encoding="utf-8")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli(["serve", "--db", str(db_path), "--config", str(config), "--port",
                        str(port)], tmp_path)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("matchlobby serve: cannot listen: "), lines
    assert "address already in use" in lines[0].lower(), lines


async def test_serve_creates_a_missing_database(tmp_path: Path) -> None:
    """No file is not damage: the server makes a new database and listens."""
    config = tmp_path / "matchlobby.toml"
    config.write_text(FAST_CONFIG, encoding="utf-8")
    db = tmp_path / "new.db"
    await serves_then_stops(ServerProcess(db, config))
    assert sql(db, "PRAGMA user_version")[0][0] >= 1


async def serves_then_stops(server: ServerProcess) -> None:
    """``server`` starts, listens, and stops cleanly when told to."""
    server.start()
    try:
        await server.ready(START_BOUND)
        assert server.terminate() == 0, server.tail()
    finally:
        server.stop()


OFFLINE = [  # the command, and how it finds the damaged history pages
    (["replay", "--check"], "damaged (database disk image is malformed, while running replay)"),
    (["replay"], "damaged (database disk image is malformed, while running replay)"),
    (["user", "add", "carol"], "PRAGMA quick_check"),
]


@pytest.mark.parametrize(("command", "says"), OFFLINE, ids=[" ".join(c[0]) for c in OFFLINE])
def test_offline_commands_report_damage_in_one_line(command: list[str], says: str,
                                                     db_path: Path, tmp_path: Path) -> None:
    config = tmp_path / "matchlobby.toml"
    config.write_text(FAST_CONFIG, encoding="utf-8")
    history_damaged(db_path)
    done = run_cli([*command, "--db", str(db_path), "--config", str(config)], tmp_path,
                   stdin="carol-secret\n")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    what = "replay --check" if "--check" in command else " ".join(command[:2])
    one_line(done.stderr, f"matchlobby {what}: ", db_path, says)
    assert "Traceback" not in done.stdout + done.stderr


async def test_serve_can_skip_the_page_scan(db_path: Path, tmp_path: Path) -> None:
    """``startup_check = "schema"``: a database whose schema is whole starts without the
    page scan (the damage is then met while serving: see the tests below)."""
    config = tmp_path / "matchlobby.toml"
    config.write_text('[server]\nstartup_check = "schema"\n\n' + FAST_CONFIG, encoding="utf-8")
    history_damaged(db_path)
    await serves_then_stops(ServerProcess(db_path, config))


# ---- a storage fault while serving ----------------------------------------------------------


async def player(url: str, name: str) -> Prober:
    p = await Prober.open(url)
    assert (await p.request("register", name=name, password=PASSWORD))["ok"]
    return p


async def start_match(a: Prober, b: Prober, b_name: str, a_name: str) -> int:
    assert (await a.request("invite", name=b_name, ladder="backgammon", length=1))["ok"]
    joined = await b.request("join", name=a_name)
    assert joined["ok"], joined
    return int(joined["data"]["match"])


def refused_read_only(reply: dict[str, Any]) -> None:
    assert reply["ok"] is False, reply
    assert reply["error"] == {"code": "internal", "message": READ_ONLY}, reply


@pytest.fixture
def damaged_later(db_path: Path) -> Iterator[Path]:
    seed_history(db_path)
    yield db_path


async def test_a_page_damaged_under_the_server_stops_every_write(damaged_later: Path) -> None:
    db = damaged_later
    server = ServerThread(db).start()
    with captured_logs(logging.INFO) as logs:
        try:
            alice, bob = await player(server.url, "alice"), await player(server.url, "bob")
            admin = await Prober.open(server.url)
            assert (await admin.request("login", name=ADMIN, password=ADMIN_PASSWORD))["ok"]
            first = await start_match(alice, bob, "bob", "alice")
            assert (await bob.request("resign"))["ok"]
            second = await start_match(alice, bob, "bob", "alice")
            ladder = await alice.call("ladder", ladder="backgammon")

            # The history table's pages go bad on disk; a commit from another connection
            # makes the server's connections drop what they had cached and read them again.
            conn = sqlite3.connect(db)
            assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
            conn.close()
            saved = overwrite_pages(db, pages_of(db, "history"), seed=11)
            conn = sqlite3.connect(db)
            conn.execute("UPDATE counters SET value = value WHERE name = 'seq'")
            conn.commit()
            conn.close()

            refused_read_only(await alice.request("resign"))  # its history rows: a bad page
            refused_read_only(await admin.request("event create", name="Cup", ladder="scrabble"))
            refused_read_only(await (await Prober.open(server.url)).request(
                "register", name="carol", password=PASSWORD))
            refused_read_only(await bob.request("history", name="alice"))
            # What the server holds in memory is still answered, as it was committed.
            assert await bob.call("ladder", ladder="backgammon") == ladder
            assert {p["player"] for p in (await bob.call("who"))["players"]} >= {"alice", "bob"}
            assert (await bob.call("whois", name="alice"))["player"] == "alice"
        finally:
            await server.astop()
        failures = [r for r in logs.server_records() if r.levelno >= logging.ERROR]
    assert len(failures) == 1, [r.getMessage() for r in failures]
    message = failures[0].getMessage()
    assert "database failure (SQLITE_CORRUPT" in message and "resign (alice)" in message, message

    # Nothing refused was kept; repaired and restarted, the server carries on.
    assert sql(db, "SELECT status FROM matches WHERE id IN (?, ?) ORDER BY id",
               (first, second)) == [("finished",), ("playing",)]
    restore_pages(db, saved)
    server = ServerThread(db).start()
    try:
        alice = await Prober.open(server.url)
        assert (await alice.request("login", name="alice", password=PASSWORD))["ok"]
        finished = await alice.call("resign")
        assert finished["match"] == second
    finally:
        await server.astop()
    assert sql(db, "SELECT count(*) FROM history WHERE match_id IN (?, ?)", (first, second)) \
        == [(4,)]


async def test_a_full_disk_stops_every_write(db_path: Path, tmp_path: Path) -> None:
    """A file-size limit on the server process: the WAL cannot grow, the disk is "full"."""
    config = tmp_path / "matchlobby.toml"
    # The same two players invite each other hundreds of times a minute.
    config.write_text(FAST_CONFIG + "\n[limits]\n" + "".join(
        f"{key} = {value}\n" for key, value in PLAY_FREELY.items()), encoding="utf-8")
    limit = db_path.stat().st_size + 256 * 1024
    server = ServerProcess(db_path, config).start()
    try:
        resource.prlimit(server.pid, resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        url = server.url
        await server.ready(START_BOUND)
        alice, bob = await player(url, "alice"), await player(url, "bob")
        acknowledged: list[int] = []
        refused: dict[str, Any] | None = None
        for _ in range(500):  # the WAL reaches the limit long before
            assert (await alice.request("invite", name="bob", ladder="backgammon"))["ok"]
            joined = await bob.request("join", name="alice")
            if not joined["ok"]:
                refused = joined
                break
            resigned = await bob.request("resign")
            if not resigned["ok"]:
                refused = resigned
                break
            acknowledged.append(int(resigned["data"]["match"]))
        assert refused is not None, "the WAL never reached the file-size limit"
        refused_read_only(refused)
        refused_read_only(await (await Prober.open(url)).request(
            "register", name="carol", password=PASSWORD))
        assert (await bob.call("ladder", ladder="backgammon"))["total"] == 2
        status = server.terminate()
    finally:
        server.stop()
    output = server.output()
    assert status == 1, output
    failures = [line for line in output.splitlines() if "database failure" in line]
    assert len(failures) == 1, output
    assert ("SQLITE_FULL" in failures[0] or "SQLITE_IOERR" in failures[0]), failures
    assert "(bob)" in failures[0] and "Traceback" not in output, output
    assert "Check and repair the file before starting again" in output

    # Given room again (the repair), the server starts on what was committed.
    finished = sql(db_path, "SELECT id FROM matches WHERE status = 'finished' ORDER BY id")
    assert [r[0] for r in finished] == acknowledged
    assert len(acknowledged) >= 2
    done = run_cli(["replay", "--check", "--db", str(db_path), "--config", str(config)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


