"""Shared values (ČAS's Peklo) stored one row per ladder (ratings_plugin/store.py): the format,
the adoption of a database that kept them in a ``ratings`` column, and ČAS closes that write
only the rows that moved."""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

import pytest
from testkit.cli import run_cli_async
from testkit.db import sql
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from ratings_plugin import store
from ratings_plugin.plugin import RatingsPlugin
from ratings_plugin.systems.cas.system import PEKLO_START, CasStanding
from server.api import PluginSetup
from server.config import default_ladders
from server.store.connection import open_connection
from server.store.port import SqliteTx
from server.store.schema import migrate, migrate_plugin

# The first layout of the lobby's tables, when ratings (with every system's fields and Peklo's
# values in a column) were the lobby's own: schema 1 as it was.
OLDEST_RATINGS = """
CREATE TABLE ratings (
    ladder TEXT NOT NULL,
    player_id INTEGER NOT NULL REFERENCES players (id),
    rating REAL NOT NULL,
    games INTEGER NOT NULL,
    experience INTEGER NOT NULL,
    paluba INTEGER NOT NULL,
    dansa INTEGER NOT NULL,
    peklo REAL NOT NULL,
    last_played TEXT,
    PRIMARY KEY (ladder, player_id)
) WITHOUT ROWID;
CREATE TABLE history (
    id INTEGER PRIMARY KEY,
    ladder TEXT NOT NULL,
    player_id INTEGER NOT NULL REFERENCES players (id),
    before REAL,
    after REAL NOT NULL,
    match_id INTEGER,
    event_id INTEGER,
    at TEXT NOT NULL
);
CREATE INDEX history_player ON history (player_id, ladder, id);
CREATE INDEX history_ladder ON history (ladder);
"""


def test_encode_is_little_endian_and_decode_gives_every_bit_back() -> None:
    assert CasStanding("x", 0).peklo == PEKLO_START  # what an absent player reads back as
    rng = random.Random(7)
    values = [(rng.randrange(1, 2**40), struct.unpack("<d", rng.randbytes(8))[0]) for _ in range(500)]
    values = [(pid, v) for pid, v in values if v == v]  # NaN is never a Peklo value
    values += [(3, -0.0), (4, 5e-324), (5, 1.7976931348623157e308), (6, 1500.0)]
    ladder, ids, elos = store.encode_shared("scrabble", [p for p, _ in values],
                                            [v for _, v in values])
    assert ladder == "scrabble"
    assert ids[:8] == values[0][0].to_bytes(8, "little") and elos[:8] == struct.pack("<d", values[0][1])
    back = store.decode_shared(ids, elos)
    assert [(pid, struct.pack("<d", v)) for pid, v in back.items()] == [
        (pid, struct.pack("<d", v)) for pid, v in values]
    with pytest.raises(ValueError):
        store.decode_shared(ids, elos[:-8])


async def test_the_oldest_layout_is_adopted_with_every_value(tmp_path: Path) -> None:
    db = tmp_path / "v2.db"
    conn = open_connection(db)
    await migrate(conn, target=2)
    conn.close()
    conn = sqlite3.connect(db, isolation_level=None)
    conn.executescript(OLDEST_RATINGS)
    rng = random.Random(3)
    names = [f"p{i}" for i in range(40)]
    for name in names:
        conn.execute("INSERT INTO players (name, name_key, created_at) VALUES (?, ?, 'now')",
                     (name, name))
    before: dict[tuple[str, str], float] = {}
    for i, name in enumerate(names):
        # scrabble: ČAS values, one of them exactly the default; backgammon: FIBS, all default
        ladders = {"scrabble": 1500.0 if i == 5 else rng.uniform(1000, 2000),
                   "backgammon": 1500.0}
        for ladder, value in ladders.items():
            if i % 7 == 3 and ladder == "scrabble":
                continue
            conn.execute("INSERT INTO ratings VALUES (?, ?, 1500, 1, 0, 100, 1500, ?, NULL)",
                         (ladder, i + 1, value))
            before[(ladder, name)] = value
    conn.close()

    conn = open_connection(db)
    try:
        await migrate(conn)
        plugin = RatingsPlugin(PluginSetup(default_ladders()))
        assert await migrate_plugin(conn, plugin.schema) == 1
        await plugin.load(SqliteTx(conn), committed=True)
    finally:
        conn.close()
    assert [row[1] for row in sql(db, "PRAGMA table_info(ratings)")] == [
        "ladder", "player_id", "rating", "games", "last_played", "state"]
    stored = sql(db, store.SHARED_SELECT)
    assert [row[0] for row in stored] == ["scrabble"]  # nothing to keep for a FIBS ladder
    moved = store.decode_shared(stored[0][1], stored[0][2])
    assert len(moved) == len([k for k, v in before.items() if v != 1500.0])
    after = {(ladder, s.player): getattr(s, "peklo", 1500.0)
             for ladder, book in plugin.books.items() for s in book.standings.values()}
    assert after == before


def _event_rows(name: str, players: list[str], rng: random.Random) -> list[str]:
    rows = []
    for _ in range(3):
        rng.shuffle(players)
        for a, b in zip(players[0::2], players[1::2], strict=True):
            rows.append(f"{name},{today()},{a},{b},{rng.randint(250, 500)},{rng.randint(250, 500)},,")
    return rows


def _ladder(db: Path) -> dict[int, tuple]:
    return {row[1]: tuple(row[2:]) for row in sql(
        db, "SELECT * FROM ratings WHERE ladder = 'scrabble' ORDER BY player_id")}


@pytest.mark.sqlite_only("counts the rows written with SQLite triggers")
async def test_cas_closes_write_only_the_rows_that_moved_and_replay_check_agrees(
        lobby: LobbyServer) -> None:
    db = lobby.db
    writes = sqlite3.connect(db, isolation_level=None)
    writes.executescript("""
        CREATE TABLE written (player_id INTEGER);
        CREATE TRIGGER ratings_insert AFTER INSERT ON ratings
            BEGIN INSERT INTO written VALUES (new.player_id); END;
        CREATE TRIGGER ratings_update AFTER UPDATE ON ratings
            BEGIN INSERT INTO written VALUES (new.player_id); END;
    """)
    admin = await lobby.admin()
    rng = random.Random(11)
    field = [f"s{i:02d}" for i in range(30)]
    moved_without_playing = 0
    for n in range(5):
        old = _ladder(db)
        writes.execute("DELETE FROM written")
        name = f"Open {n}"
        eid = (await admin.call("event create", name=name, ladder="scrabble"))["id"]
        players = rng.sample(field, 10)
        await admin.call("event import", new=True, event=eid,
                         csv=results_text(_event_rows(name, players, rng)))
        closed = await admin.call("event close", event=eid)
        new = _ladder(db)
        changed = {pid for pid, row in new.items() if old.get(pid) != row}
        assert sorted(r[0] for r in writes.execute("SELECT player_id FROM written")) == sorted(changed)
        ids = dict(sql(db, "SELECT name, id FROM players"))
        # the same players as the history rows of the close (played, or displayed rating moved)
        assert {r[0] for r in sql(db, "SELECT player_id FROM history WHERE event_id = ?",
                                  (eid,))} == changed
        assert {ids[c["player"]] for c in closed["changes"]} == changed
        assert {ids[c["player"]] for c in closed["changes"] if c["played"]} == {
            ids[p] for p in players}
        moved_without_playing += len(changed - {ids[p] for p in players})
        # every player's Peklo value as the lobby shows it, bit for bit
        stored = store.decode_shared(*sql(db, "SELECT player_ids, vals FROM shared_values "
                                              "WHERE ladder = 'scrabble'")[0])
        table = (await admin.call("ladder", ladder="scrabble", all=True))["players"]
        assert {ids[r["player"]]: r["peklo"] for r in table} == stored
        assert set(stored) == set(new)
    assert len(new) > 10 and moved_without_playing > 0  # the closes did move bystanders
    writes.close()
    await lobby.stop()

    check = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    assert check.returncode == 0, check.stdout + check.stderr
    player_ids, vals = sql(db, "SELECT player_ids, vals FROM shared_values "
                               "WHERE ladder = 'scrabble'")[0]
    values = store.decode_shared(player_ids, vals)
    untouched, victim, dropped = sorted(values)[:3]
    values[victim] += 1e-9
    del values[dropped]  # reads back as the default
    values[10**6] = 1600.0  # nobody's
    tampered = sqlite3.connect(db, isolation_level=None)
    tampered.execute(store.SHARED_UPSERT, store.encode_shared("scrabble", list(values),
                                                              list(values.values())))
    tampered.close()
    names = {pid: name for name, pid in sql(db, "SELECT name, id FROM players")}
    check = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    assert check.returncode == 1
    for pid in (victim, dropped):
        assert f"scrabble: {names[pid]}: stored" in check.stdout
    assert f"scrabble: {names[untouched]}: stored" not in check.stdout
    # the dropped value reads back as the default; the shared value is the last column shown
    assert ", shared 1500.0, replayed rating" in check.stdout
    assert "scrabble: 1000000: a stored shared value (1600.0) without a rating" in check.stdout
    assert "3 difference(s)" in check.stdout, check.stdout

    done = await run_cli_async(["replay", "--db", str(db)], db.parent)
    assert done.returncode == 0, done.stderr
    check = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    assert check.returncode == 0, check.stdout + check.stderr
