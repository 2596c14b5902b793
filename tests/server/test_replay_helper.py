"""The helper process that digests a FIBS ladder's stored history for ``matchlobby replay``.

A real ``python -m ratings_plugin.commands.replay_helper`` on a real database written by
``replay``: its digests of agreeing chunks must equal the replay's own (or
the replay would read every chunk again, correct but no faster), a chunk
with a stray row does not agree, its snapshot is the one it took, and
``writers_held`` keeps writers out while two connections take theirs.
"""

from __future__ import annotations

import dataclasses
import io
import re
import sqlite3
import sys
from itertools import islice
from pathlib import Path
from typing import Any

import pytest
from testkit.db import execute, sql
from testkit.replays import CONFIG, LADDERS, replay_cli, run_replay, write_log

import ratings_plugin.commands.replay as replay_module
from ratings_plugin.commands.replay_helper import ReplayHelper, digest_pairs, writers_held
from server.config import load_config

pytestmark = pytest.mark.sqlite_only("the replay helper process reads SQLite files")

SIZE = 16


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "replay.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def replayed_chunks(db: Path, ladder: str) -> list[bytes]:
    conn = sqlite3.connect(db)
    try:
        ids = dict(conn.execute("SELECT name, id FROM players"))
        config = LADDERS[ladder]
        replay = config.system.plain_replay(config.options, ids)
        assert replay is not None
        pairs = replay.pairs(replay_module.match_log(conn, ladder))
        return [digest_pairs(part) for part in iter(lambda: list(islice(pairs, SIZE // 2)), [])]
    finally:
        conn.close()


async def test_digests_of_agreeing_chunks_are_the_replays(db_path: Path,
                                                         config_file: Path) -> None:
    write_log(db_path, 21)
    assert (await replay_cli(db_path, config_file))[0] == 0
    helper = ReplayHelper(str(db_path))
    try:
        helper.snapshot()
        for ladder in LADDERS:
            for scan in ("", "NOT INDEXED"):
                got = list(helper.ladder(ladder, scan, SIZE))
                assert [c.digest for c in got] == replayed_chunks(db_path, ladder)
                assert all(c.rows == SIZE for c in got[:-1])
                first_ids = [row[0] for row in sql_ids(db_path, ladder)[::SIZE]]
                assert [c.first_id for c in got] == first_ids
    finally:
        helper.close()


def sql_ids(db: Path, ladder: str) -> list[tuple[Any, ...]]:
    return sql(db, "SELECT id FROM history WHERE ladder = ? ORDER BY id", (ladder,))


async def test_a_chunk_with_a_stray_row_does_not_agree(db_path: Path, config_file: Path) -> None:
    write_log(db_path, 22)
    assert (await replay_cli(db_path, config_file))[0] == 0
    want = replayed_chunks(db_path, "backgammon")
    ids = sql_ids(db_path, "backgammon")
    # chunk 2: a match's two rows with a time not its match's; chunk 4: a row without its match
    execute(db_path, "UPDATE history SET at = '2027-01-01T00:00:00Z' WHERE id IN (?, ?)",
           (ids[2 * SIZE + 2][0], ids[2 * SIZE + 3][0]))
    execute(db_path, "UPDATE history SET match_id = NULL WHERE id = ?", (ids[4 * SIZE][0],))
    helper = ReplayHelper(str(db_path))
    try:
        helper.snapshot()
        got = [c.digest for c in helper.ladder("backgammon", "", SIZE)]
    finally:
        helper.close()
    assert got[2] is not None and got[2] != want[2] and got[4] is None
    assert [d for k, d in enumerate(got) if k not in (2, 4)] == [
        d for k, d in enumerate(want) if k not in (2, 4)]


async def test_the_helper_keeps_its_snapshot(db_path: Path, config_file: Path) -> None:
    """A commit after the snapshot is not seen; an unfinished ladder does not upset the next."""
    write_log(db_path, 23)
    assert (await replay_cli(db_path, config_file))[0] == 0
    want = replayed_chunks(db_path, "hypergammon")
    helper = ReplayHelper(str(db_path))
    try:
        helper.snapshot()
        next(helper.ladder("backgammon", "", SIZE))  # left unfinished
        execute(db_path, "UPDATE history SET after = after + 1 WHERE ladder = 'hypergammon'")
        assert [c.digest for c in helper.ladder("hypergammon", "", SIZE)] == want
    finally:
        helper.close()


def test_a_helper_that_cannot_open_the_database_takes_no_snapshot(db_path: Path) -> None:
    helper = ReplayHelper(str(db_path / "missing" / "lobby.db"))
    try:
        assert not helper.snapshot()
    finally:
        helper.close()


@pytest.mark.parametrize("check", [True, False])
async def test_without_a_helper_the_replay_reads_the_rows_itself(
        db_path: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch, check: bool) -> None:
    """A helper that cannot run (here: no interpreter to run it) leaves the same result."""
    write_log(db_path, 24)
    assert (await replay_cli(db_path, config_file))[0] == 0
    execute(db_path, "UPDATE history SET after = after + 1 WHERE id = 40")
    total = len(sql_ids(db_path, "backgammon")) + len(sql_ids(db_path, "hypergammon"))
    monkeypatch.setattr(replay_module, "HELPER_MIN_ROWS", 0)
    monkeypatch.setattr(sys, "executable", "/bin/false")
    out = io.StringIO()
    config = dataclasses.replace(load_config(config_file), database=str(db_path))
    code = await run_replay(config, check, out)
    if check:
        assert code == 1 and "rating history differs from the log" in out.getvalue()
    else:
        kept, written = map(int, re.findall(r"(\d+) rows already agreed and were kept, (\d+) "
                                            "written", out.getvalue())[0])
        assert code == 0 and kept >= 38 and written > 0 and kept + written == total
        monkeypatch.undo()
        assert (await replay_cli(db_path, config_file, "--check"))[0] == 0


def test_writers_wait_while_the_snapshots_are_taken(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    writer = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    try:
        with writers_held(str(db_path)), pytest.raises(sqlite3.OperationalError, match="locked"):
            writer.execute("BEGIN IMMEDIATE")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO t VALUES (1)")
        writer.execute("COMMIT")
    finally:
        writer.close()
        conn.close()
