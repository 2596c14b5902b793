"""Power cuts: every result whose reply was received survives the loss of everything the
server wrote to its database and WAL but had not fsynced.

``matchlobby serve`` runs as a separate process under the LD_PRELOAD shim
``syncrecord.c`` (compiled here with the machine's C compiler), which records every write
and every fsync/fdatasync it makes to the database, its WAL and its rollback journal.
Pairs of players stream live backgammon matches (invite, join, resign) and a director
streams event results and closes; each reply received is noted with the record's length
at that moment. Once the server has checkpointed a few times (its database file synced),
at a seeded random moment after that, the server is killed with SIGKILL. Then, for
each cut point (the kill, moments picked at random, and the moments just before a sync of
the WAL and of the database file: a commit, and a checkpoint, in mid-flight), the files
are rebuilt as a power cut at that moment would leave them (tests/kit/testkit/powercut.py:
writes after a file's last sync lost, or kept at random and torn), without the ``-shm``
file. Each rebuilt database must hold every result acknowledged before the cut, exactly as
acknowledged, pass ``PRAGMA integrity_check`` and ``matchlobby replay --check``.

``synchronous=NORMAL`` fails this test (a WAL commit is not synced, so acknowledged results
are lost); the control below shows the harness catching exactly that, on a plain
``sqlite3`` writer, without any switch in the product.

``MATCHLOBBY_POWERCUT_SEED`` picks another seed; the seed is in every failure message.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import os
import random
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from testkit.children import die_with_parent
from testkit.cli import cli_env, replay_check
from testkit.constants import ADMIN_PASSWORD, ADMINS, FAST_HASHING, PASSWORD, open_config
from testkit.db import integrity
from testkit.powercut import Op, Watch, before, build_shim, read_record, rebuild, shim_env, syncs, write_files
from testkit.server_process import ServerProcess
from websockets.exceptions import WebSocketException

from clients import LobbyClient
from ratings_plugin.commands import replay
from server.api import Tx
from server.app import start_server
from server.cli import Environment
from server.config import Config, load_config

pytestmark = pytest.mark.sqlite_only("simulates power cuts from a record of SQLite's writes and "
                                     "syncs")
SEED = int(os.environ.get("MATCHLOBBY_POWERCUT_SEED", "20261201"))
PAIRS = 3
STREAM = (1.0, 1.5)  # seconds of results at least, then up to this much more (seeded)
CHECKPOINT_SYNCS = 4  # database-file syncs to see before the kill
STREAM_LIMIT = 60.0
CUT_POINTS = 12
WAL, DB = 1, 0  # the shim's file numbers


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = build_shim(tmp_path_factory.mktemp("syncrecord"))
    if built is None:
        pytest.skip("no C compiler (gcc or cc): the power-cut test builds its LD_PRELOAD shim "
                    "with one (Debian: apt-get install gcc)")
    return built


@dataclass
class Ack:
    at: int  # the record's length when the reply was received
    cmd: str
    args: dict[str, Any]
    data: Any


class Stream:
    """Clients sending results; every reply received is kept with the record's length."""

    def __init__(self, url: str, log: Path) -> None:
        self.url, self.log = url, log
        self.acks: list[Ack] = []
        self.clients: list[LobbyClient] = []
        self.refused: list[dict[str, Any]] = []

    async def client(self, name: str, password: str, register: bool) -> LobbyClient:
        c = LobbyClient(self.url, reconnect=False)
        self.clients.append(c)
        await c.connect()
        await self.send(c, "register" if register else "login",
                        {"name": name, "password": password})
        return c

    async def send(self, c: LobbyClient, cmd: str, args: dict[str, Any]) -> Any:
        reply = await c.request(cmd, args, timeout=20)
        at = self.log.stat().st_size
        if not reply["ok"]:
            self.refused.append(reply)
            raise AssertionError(f"{cmd} {args} refused: {reply} (seed {SEED})")
        if cmd != "invite":
            self.acks.append(Ack(at, cmd, args, reply["data"]))
        return reply["data"]

    async def play(self, i: int, rng: random.Random) -> None:
        a_name, b_name = f"pc{i}a", f"pc{i}b"
        a = await self.client(a_name, PASSWORD, register=True)
        b = await self.client(b_name, PASSWORD, register=True)
        while True:
            await self.send(a, "invite", {"name": b_name, "ladder": "backgammon",
                                          "length": rng.choice([1, 3, 5, 7])})
            await self.send(b, "join", {"name": a_name})
            await self.send(rng.choice((a, b)), "resign", {})

    async def direct(self, rng: random.Random) -> None:
        admin = await self.client(ADMINS[0], ADMIN_PASSWORD, register=False)
        players = [f"ev{i}" for i in range(6)]
        n = 0
        while True:
            n += 1
            event = await self.send(admin, "event create", {"name": f"cut cup {n}",
                                                            "ladder": "scrabble"})
            for _ in range(rng.randint(2, 5)):
                a, b = rng.sample(players, 2)
                await self.send(admin, "event result", {
                    "event": event["id"], "side_a": a, "side_b": b,
                    "score_a": rng.randint(250, 550), "score_b": rng.randint(250, 550),
                    "new": True})
            await self.send(admin, "event close", {"event": event["id"]})

    async def close(self) -> None:
        for c in self.clients:
            with contextlib.suppress(Exception):
                await c.close()


def missing(conn: sqlite3.Connection, ack: Ack) -> str | None:
    """What of ``ack`` the database lacks or holds otherwise (None: all of it is there)."""
    one = conn.execute
    data = ack.data
    if ack.cmd == "register":
        found = one("SELECT 1 FROM players WHERE name = ?", (data["player"],)).fetchone()
        return None if found else f"player {data['player']}"
    if ack.cmd == "login":
        return None
    if ack.cmd == "join":
        found = one("SELECT 1 FROM matches WHERE id = ?", (data["match"],)).fetchone()
        return None if found else f"match {data['match']} started"
    if ack.cmd in ("resign", "event result"):
        row = one("SELECT status, winner FROM matches WHERE id = ?", (data["match"],)).fetchone()
        if row is None or row[0] != "finished":
            return f"{ack.cmd}: match {data['match']} finished (found {row})"
        changes = sorted((c["player"], c["after"]) for c in data.get("changes", ()))
        stored = sorted(one("SELECT p.name, h.after FROM history h JOIN players p "
                            "ON p.id = h.player_id WHERE h.match_id = ?",
                            (data["match"],)).fetchall())
        if ack.cmd == "resign" and stored != changes:
            return f"the rating changes of match {data['match']}: {stored} != {changes}"
        return None
    if ack.cmd == "event create":
        found = one("SELECT 1 FROM events WHERE id = ?", (data["id"],)).fetchone()
        return None if found else f"event {data['id']}"
    if ack.cmd == "event close":
        event = ack.args["event"]
        row = one("SELECT status, seq FROM events WHERE id = ?", (event,)).fetchone()
        if row is None or row[0] != "closed" or row[1] is None:
            return f"event {event} closed (found {row})"
        stored = set(one("SELECT p.name, h.after FROM history h JOIN players p "
                         "ON p.id = h.player_id WHERE h.event_id = ?", (event,)).fetchall())
        lacking = {(c["player"], c["after"]) for c in data["changes"]} - stored
        return f"the rating changes of event {event}: {sorted(lacking)}" if lacking else None
    raise AssertionError(f"no check for {ack.cmd}")


def cut_points(ops: list[Op], first: int, rng: random.Random) -> list[tuple[str, int]]:
    """(what, cut): the kill, random moments, and moments just before WAL and database syncs."""
    later = [op for op in ops if op.end > first]
    points = {("the kill", ops[-1].end)}
    for what, file, count in (("before a WAL sync", WAL, 4), ("before a database sync", DB, 3)):
        candidates = syncs(later, file)
        for op in rng.sample(candidates, min(count, len(candidates))):
            points.add((what, before(op, ops)))
    while len(points) < CUT_POINTS:
        points.add(("at random", rng.choice(later).end))
    return sorted(points, key=lambda p: p[1])


async def check_cut(ops: list[Op], initial: dict[int, bytes], cut: int, model: str,
                    acks: list[Ack], folder: Path, config: Path, rng: random.Random,
                    command: bool) -> tuple[int, list[str]]:
    """Rebuild at ``cut`` under ``model``; (acknowledged by then, what is missing or wrong).

    ``command``: run ``matchlobby replay --check`` as a process; otherwise the function it
    runs (``ratings_plugin.commands.replay.run``), in this process (the same check, without a second or so
    of interpreter start-up for each of the rebuilds).
    """
    db = folder / "lobby.db"
    write_files(rebuild(ops, initial, cut, model, rng), db)
    due = [a for a in acks if a.at <= cut]
    problems: list[str] = []
    conn = sqlite3.connect(db)
    try:
        problems += [m for a in due if (m := missing(conn, a)) is not None]
    finally:
        conn.close()
    if (verdict := integrity(db)) != "ok":
        problems.append(f"integrity_check: {verdict}")
    if command:
        status, said = await replay_check(db, config)
    else:
        out = io.StringIO()
        settings = dataclasses.replace(load_config(config), database=str(db))
        store = await Environment(settings, writable=False).open()
        try:
            status = await replay.run(store, settings.database, settings.ladders, True, out)
        finally:
            await store.close()
        said = out.getvalue()
    if status != 0:
        problems.append(f"replay --check exited {status}: {said}")
    return len(due), problems


async def test_power_cuts_keep_every_acknowledged_result(
        shim: Path, db_path: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    rng = random.Random(SEED)
    db = db_path.resolve()
    config = tmp_path / "matchlobby.toml"
    config.write_text(open_config(), encoding="utf-8")
    record = tmp_path / "syncrecord.log"
    initial = {DB: db.read_bytes()}
    assert not Path(f"{db}-wal").exists()
    server = ServerProcess(db, config, log=tmp_path / "server.log",
                           env=shim_env(shim, db, record))
    server.start()
    began = time.monotonic()
    stream = Stream(f"ws://127.0.0.1:{server.port}/ws", record)
    try:
        await server.ready()
        tasks = [asyncio.create_task(stream.play(i, random.Random(rng.random())))
                 for i in range(PAIRS)]
        tasks.append(asyncio.create_task(stream.direct(random.Random(rng.random()))))
        # Until the server has checkpointed a few times (so that cuts fall inside checkpoints
        # too), then for a random while longer.
        watch = Watch(record)
        while watch.update()[DB] < CHECKPOINT_SYNCS or time.monotonic() - began < STREAM[0]:
            assert time.monotonic() - began < STREAM_LIMIT, \
                f"only {watch.syncs[DB]} database syncs in {STREAM_LIMIT} s (seed {SEED})"
            assert not any(task.done() for task in tasks), f"a client stopped (seed {SEED})"
            await asyncio.sleep(0.05)
        await asyncio.sleep(rng.uniform(0.0, STREAM[1]))
        for task in tasks:
            assert not task.done(), f"{task.exception()} (seed {SEED})"
        server.kill()
        for task in tasks:
            task.cancel()
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if not isinstance(outcome, asyncio.CancelledError | OSError | WebSocketException):
                raise AssertionError(f"a client failed: {outcome!r} (seed {SEED})")
    finally:
        server.stop()
        await stream.close()
    streamed = time.monotonic() - began

    ops = read_record(record)
    acks = stream.acks
    results = [a for a in acks if a.cmd in ("resign", "event result", "event close")]
    assert len(results) >= 20, f"too few results to cut ({len(results)}; seed {SEED})"
    assert syncs(ops, WAL) and syncs(ops, DB), "the record holds no WAL or no database sync"
    cuts = cut_points(ops, acks[0].at, rng)
    assert len(cuts) >= 10
    rows: list[dict[str, Any]] = []
    failures: list[str] = []
    for n, (what, cut) in enumerate(cuts):
        for model in ("synced", "torn"):
            due, problems = await check_cut(ops, initial, cut, model, acks,
                                            tmp_path / f"cut{n}-{model}", config,
                                            random.Random(rng.random()),
                                            command=what == "the kill")
            rows.append({"cut": what, "at": cut, "model": model, "acknowledged": due,
                         "missing": len(problems)})
            failures += [f"cut {n} ({what}, byte {cut}, {model}): {p}" for p in problems[:3]]
    figures.update({
        "seed": SEED, "acknowledged replies": len(acks), "results acknowledged": len(results),
        "record bytes": ops[-1].end, "WAL syncs": len(syncs(ops, WAL)),
        "database syncs (checkpoints)": len(syncs(ops, DB)), "cut points": len(cuts),
        "rebuilds checked": len(rows), "missing after any cut": sum(r["missing"] for r in rows),
        "acknowledged at each cut": [r["acknowledged"] for r in rows if r["model"] == "synced"],
        "seconds streaming": round(streamed, 1),
    })
    print(f"\npower cuts (seed {SEED}): {len(results)} results acknowledged")
    for r in rows:
        print(f"  {r['cut']:<24} byte {r['at']:>9} {r['model']:<6}: {r['acknowledged']:>4} "
              f"acknowledged by then, {r['missing']} missing")
    assert not failures, "\n".join(failures[:20]) + f"\n(seed {SEED})"


# ---- the control: the same harness catches a writer that does not sync its commits -------

# Each acknowledgement carries the record's length when the commit returned, read by the
# writer itself: read by the test when the line arrives, it would be later (by the whole run,
# when the test's process is scheduled only after a fast writer has finished).
WRITER = """
import os, sqlite3, sys

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("PRAGMA synchronous=" + sys.argv[2])
conn.execute("CREATE TABLE IF NOT EXISTS acked (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
record = os.environ["SYNCRECORD_LOG"]
for i in range(int(sys.argv[3])):
    conn.execute("INSERT INTO acked (body) VALUES (?)", ("x" * 200,))
    print(i + 1, os.stat(record).st_size, flush=True)  # committed: acknowledged
"""


def plain_writer(shim: Path, folder: Path, synchronous: str, commits: int
                 ) -> tuple[list[Op], dict[int, bytes], list[Ack]]:
    """A plain sqlite3 writer under the shim; its commits as acknowledged, with the record."""
    folder.mkdir()
    db = (folder / "plain.db").resolve()
    sqlite3.connect(db).close()  # an empty file: the initial, durable state
    initial = {DB: db.read_bytes()}
    record = folder / "syncrecord.log"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db), synchronous, str(commits)],
                            stdout=subprocess.PIPE, text=True,
                            env=cli_env(**shim_env(shim, db, record)), preexec_fn=die_with_parent())
    assert proc.stdout is not None
    acks = [Ack(int(at), "commit", {}, int(i)) for i, at in map(str.split, proc.stdout)]
    assert proc.wait(timeout=60) == 0
    return read_record(record), initial, acks


def lost_commits(shim: Path, folder: Path, synchronous: str) -> tuple[int, int]:
    """(acknowledged commits checked over the cuts, those missing after their cut)."""
    ops, initial, acks = plain_writer(shim, folder, synchronous, 150)
    rng = random.Random(SEED)
    cuts = sorted({rng.choice(ops).end for _ in range(CUT_POINTS)} | {
        before(op, ops) for op in syncs(ops, WAL)[1::10]})
    checked = lost = 0
    for n, cut in enumerate(cuts):
        for model in ("synced", "torn"):
            db = folder / f"cut{n}-{model}" / "plain.db"
            write_files(rebuild(ops, initial, cut, model, random.Random(n)), db)
            conn = sqlite3.connect(db)
            try:
                tables = conn.execute("SELECT name FROM sqlite_master").fetchall()
                present = conn.execute("SELECT max(id) FROM acked").fetchone()[0] \
                    if ("acked",) in tables else 0
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                conn.close()
            due = [a.data for a in acks if a.at <= cut]
            checked += len(due)
            lost += sum(1 for i in due if i > (present or 0))
    return checked, lost


def test_the_harness_catches_commits_that_were_not_synced(
        shim: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    """WAL with ``synchronous=NORMAL`` does not sync a commit: a cut loses acknowledged ones.
    With ``FULL`` none is lost, through the very same rebuilds."""
    checked_normal, lost_normal = lost_commits(shim, tmp_path / "normal", "NORMAL")
    checked_full, lost_full = lost_commits(shim, tmp_path / "full", "FULL")
    figures.update({"NORMAL: acknowledged commits checked, lost": [checked_normal, lost_normal],
                    "FULL: acknowledged commits checked, lost": [checked_full, lost_full]})
    assert lost_normal > 0, "the harness did not see NORMAL lose an acknowledged commit"
    assert checked_full > 0 and lost_full == 0


# ---- what the server's own write connection runs with -----------------------------------


async def test_the_servers_writer_runs_wal_with_full_sync(db_path: Path) -> None:
    """The connection that commits every result: WAL, and ``synchronous`` = 2 (FULL)."""
    server = await start_server(Config(database=str(db_path), password=FAST_HASHING),
                                host="127.0.0.1", port=0)
    try:
        async def pragmas(tx: Tx) -> tuple[str, int]:
            mode = await tx.fetchone("PRAGMA journal_mode")
            level = await tx.fetchone("PRAGMA synchronous")
            assert mode is not None and level is not None
            return str(mode[0]), int(level[0])

        assert await server.db.write(pragmas) == ("wal", 2)
        assert server.db.writer is not None  # the same connection, between jobs
        assert tuple(server.db.writer.execute("PRAGMA synchronous").fetchone()) == (2,)
    finally:
        await server.stop()
