"""Peklo values stored one row per ladder (server/peklo_store.py): the format, the schema-3
migration that moved them out of ``ratings``, and ČAS closes that write only the rows that moved."""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

import pytest
from lobbykit import Harness, results_text, run_cli_async, sql, today

from ratings_plugin.ladder import LadderOptions, Standing
from ratings_plugin.plugin import RatingsPlugin
from server import peklo_store
from server.storage import MIGRATIONS, SCHEMA_VERSION, connect, migrate


def test_encode_is_little_endian_and_decode_gives_every_bit_back() -> None:
    assert Standing("x", 0).peklo == peklo_store.DEFAULT  # what an absent player reads back as
    rng = random.Random(7)
    values = [(rng.randrange(1, 2**40), struct.unpack("<d", rng.randbytes(8))[0]) for _ in range(500)]
    values = [(pid, v) for pid, v in values if v == v]  # NaN is never a Peklo value
    values += [(3, -0.0), (4, 5e-324), (5, 1.7976931348623157e308), (6, 1500.0)]
    ladder, ids, elos = peklo_store.encode("scrabble", values)
    assert ladder == "scrabble"
    assert ids[:8] == values[0][0].to_bytes(8, "little") and elos[:8] == struct.pack("<d", values[0][1])
    back = peklo_store.decode(ids, elos)
    assert [(pid, struct.pack("<d", v)) for pid, v in back.items()] == [
        (pid, struct.pack("<d", v)) for pid, v in values]
    with pytest.raises(ValueError):
        peklo_store.decode(ids, elos[:-8])


async def test_migration_to_schema_3_moves_every_value_and_drops_the_column(tmp_path: Path) -> None:
    db = tmp_path / "v2.db"
    conn = sqlite3.connect(db, isolation_level=None)
    for version in (1, 2):
        step = MIGRATIONS[version]
        assert isinstance(step, str)
        conn.executescript(step)
    conn.execute("PRAGMA user_version = 2")
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

    aconn = await connect(str(db))
    try:
        assert await migrate(aconn) == SCHEMA_VERSION == 3
        plugin = RatingsPlugin({"scrabble": LadderOptions("cas"), "backgammon": LadderOptions("fibs")})
        await plugin.load(aconn)
    finally:
        await aconn.close()
    assert "peklo" not in [row[1] for row in sql(db, "PRAGMA table_info(ratings)")]
    stored = sql(db, peklo_store.SELECT)
    assert [row[0] for row in stored] == ["scrabble"]  # nothing to keep for a FIBS ladder
    moved = peklo_store.decode(stored[0][1], stored[0][2])
    assert len(moved) == len([k for k, v in before.items() if v != 1500.0])
    after = {(ladder, s.player): s.peklo for ladder, book in plugin.books.items()
             for s in book.standings.values()}
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


async def test_cas_closes_write_only_the_rows_that_moved_and_replay_check_agrees(
        lobby: Harness) -> None:
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
        await admin.call("event import", event=eid, csv=results_text(_event_rows(name, players, rng)))
        closed = await admin.call("event close", event=eid)
        new = _ladder(db)
        changed = {pid for pid, row in new.items() if old.get(pid) != row}
        assert sorted(r[0] for r in writes.execute("SELECT player_id FROM written")) == sorted(changed)
        ids = dict(sql(db, "SELECT name, id FROM players"))
        # the same players as the history rows of the close (played, or displayed rating moved)
        assert {r[0] for r in sql(db, "SELECT player_id FROM history WHERE event_id = ?",
                                  (eid,))} == changed
        assert {ids[c["player"]] for c in closed["changes"]} == {ids[p] for p in players}
        moved_without_playing += len(changed - {ids[p] for p in players})
        # every player's Peklo value as the lobby shows it, bit for bit
        stored = peklo_store.decode(*sql(db, "SELECT player_ids, elos FROM peklo "
                                             "WHERE ladder = 'scrabble'")[0])
        table = (await admin.call("ladder", ladder="scrabble", all=True))["players"]
        assert {ids[r["player"]]: r["peklo"] for r in table} == stored
        assert set(stored) == set(new)
    assert len(new) > 10 and moved_without_playing > 0  # the closes did move bystanders
    writes.close()
    await lobby.stop()

    check = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    assert check.returncode == 0, check.stdout + check.stderr
    player_ids, elos = sql(db, "SELECT player_ids, elos FROM peklo WHERE ladder = 'scrabble'")[0]
    values = peklo_store.decode(player_ids, elos)
    untouched, victim, dropped = sorted(values)[:3]
    values[victim] += 1e-9
    del values[dropped]  # reads back as the default
    values[10**6] = 1600.0  # nobody's
    tampered = sqlite3.connect(db, isolation_level=None)
    tampered.execute(peklo_store.UPSERT, peklo_store.encode("scrabble", values.items()))
    tampered.close()
    names = {pid: name for name, pid in sql(db, "SELECT name, id FROM players")}
    check = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    assert check.returncode == 1
    for pid in (victim, dropped):
        assert f"scrabble: {names[pid]}: stored" in check.stdout
    assert f"scrabble: {names[untouched]}: stored" not in check.stdout
    assert "peklo 1500.0, last_played" not in check.stdout  # peklo is the last column shown
    assert "scrabble: 1000000: a stored Peklo value (1600.0) without a rating" in check.stdout
    assert "3 difference(s)" in check.stdout, check.stdout

    done = await run_cli_async(["replay", "--db", str(db)], db.parent)
    assert done.returncode == 0, done.stderr
    check = await run_cli_async(["replay", "--check", "--db", str(db)], db.parent)
    assert check.returncode == 0, check.stdout + check.stderr
