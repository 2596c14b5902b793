"""A database written before the ratings plugin owned its tables opens with every value as it was.

``tests/fixtures/schema3.db`` was written by a real lobby of that code (schema 3: ``ratings``
with every system's fields as columns, Peklo values in a ``peklo`` table; see
``tests/fixtures/make_schema3.py``). Opened by today's server, the ratings plugin adopts those
tables: every rating, game count, last day, experience, Paluba, Dansa and Peklo value and every
history row must read back unchanged (bit for bit for the floats), the server must show them,
and ``matchlobby replay --check`` must agree with the log.
"""

from __future__ import annotations

import shutil
import sqlite3
import struct
from array import array
from pathlib import Path
from typing import Any

from testkit.cli import run_cli
from testkit.constants import FAST_HASHING

from clients import LobbyClient
from server.app import start_server
from server.config import Config

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema3.db"
LEGACY = ("experience", "paluba", "dansa")


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def legacy_values(db: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every stored standing of the old layout, Peklo included (absent: 1500.0)."""
    conn = sqlite3.connect(db)
    try:
        peklo: dict[tuple[str, int], float] = {}
        for ladder, ids, elos in conn.execute("SELECT ladder, player_ids, elos FROM peklo"):
            pids, values = array("q"), array("d")
            pids.frombytes(ids)
            values.frombytes(elos)
            peklo.update({(ladder, p): v for p, v in zip(pids, values, strict=True)})
        out = {}
        for row in conn.execute("SELECT ladder, player_id, rating, games, experience, paluba, "
                                "dansa, last_played FROM ratings"):
            key = (row[0], row[1])
            out[key] = {"rating": _bits(row[2]), "games": row[3], "last_played": row[7],
                        "experience": row[4], "paluba": row[5], "dansa": row[6],
                        "peklo": _bits(peklo.get(key, 1500.0))}
        return out
    finally:
        conn.close()


def history(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(db)
    try:
        return [(*r[:3], None if r[3] is None else _bits(r[3]), _bits(r[4]), *r[5:])
                for r in conn.execute("SELECT id, ladder, player_id, before, after, match_id, "
                                      "event_id, at FROM history ORDER BY id")]
    finally:
        conn.close()


async def test_a_schema_3_database_keeps_every_rating_and_history_row(tmp_path: Path) -> None:
    db = tmp_path / "lobby.db"
    shutil.copyfile(FIXTURE, db)
    before, rows_before = legacy_values(db), history(db)
    assert len(before) > 40 and len(rows_before) > 100  # a lobby worth the name
    assert {ladder for ladder, _ in before} == {"backgammon", "scrabble", "foosball-singles",
                                               "foosball-doubles"}

    server = await start_server(Config(database=str(db), password=FAST_HASHING), port=0)
    try:
        client = LobbyClient(f"ws://127.0.0.1:{server.port}/ws", reconnect=False)
        await client.connect()
        shown: dict[tuple[str, str], dict[str, Any]] = {}
        for ladder in ("backgammon", "scrabble", "foosball-singles", "foosball-doubles"):
            table = await client.call("ladder", ladder=ladder, count=1000, all=True)
            for row in table["players"]:
                shown[(ladder, row["player"])] = row
        await client.close()
    finally:
        await server.stop()

    conn = sqlite3.connect(db)
    names = dict(conn.execute("SELECT id, name FROM players"))
    assert [r[1] for r in conn.execute("PRAGMA table_info(ratings)")] == [
        "ladder", "player_id", "rating", "games", "last_played", "state"]
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'peklo'").fetchone() is None
    conn.close()
    assert history(db) == rows_before  # every row, ids included, bit for bit
    for (ladder, pid), old in before.items():
        row = shown[(ladder, names[pid])]
        assert _bits(float(row["rating"])) == old["rating"], (ladder, pid)
        assert row["games"] == old["games"]
        if ladder == "backgammon":
            assert row["experience"] == old["experience"]
        if ladder == "scrabble":
            assert (row["paluba"], row["dansa"]) == (old["paluba"], old["dansa"])
            assert _bits(row["peklo"]) == old["peklo"]
    assert len(shown) == len([1 for v in before.values() if v["games"] > 0])

    check = run_cli(["replay", "--check", "--db", str(db)], tmp_path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "every rating agrees with the match log" in check.stdout
