"""`matchlobby replay`'s FIBS fast path gives exactly what the generic path gives.

The generic path (the log's units + ``replay_ladder``, through the system's book)
is the reference: the fast path (``ratings_plugin.commands.replay.match_log`` +
the FIBS system's plain replay) must produce the same ratings rows
and the same history rows in the same order, compared by ``repr`` (exact floats,
and ints stay ints). The logs are written as the server leaves them: live
matches with and without final scores, event results on the FIBS ladder,
voided matches that keep their ``seq``, adjudicated ones (winner flipped, scores
swapped), aborted and unlimited matches without ``seq``, ids not in ``seq``
order, names whose case-insensitive order differs from their plain order, and
matches between equal ratings.
"""

from __future__ import annotations

import dataclasses
import io
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import run_cli
from testkit.clients import start_match
from testkit.db import sql
from testkit.replays import (
    CONFIG,
    FIRST,
    LADDERS,
    exact,
    generic,
    replay_cli,
    replay_here,
    run_replay,
    stored,
    write_log,
)
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

import ratings_plugin.commands.replay as replay_module
from ratings_plugin import store
from ratings_plugin.commands.replay_helper import ReplayHelper
from server.api import LadderConfig, NotPlain
from server.config import load_config

pytestmark = pytest.mark.sqlite_only("the replay's fast path and its helper process read SQLite files")

def fast(db: Path, ladder: LadderConfig) -> tuple[list[Any], list[Any]]:
    conn = sqlite3.connect(db)
    try:
        ids = dict(conn.execute("SELECT name, id FROM players"))
        replay = ladder.system.plain_replay(ladder.options, ids)
        assert replay is not None
        history = []
        for first, b1, a1, second, b2, a2, mid, eid, at in replay.pairs(
                replay_module.match_log(conn, ladder.name)):
            history.append((ladder.name, first, b1, a1, mid, eid, at))
            history.append((ladder.name, second, b2, a2, mid, eid, at))
    finally:
        conn.close()
    return sorted(store.rating_rows(ladder, replay.standings().values(), ids)), history


def change(db: Path, statement: str, params: tuple[Any, ...] = ()) -> int:
    """Run one writing statement and commit it; the rows it changed."""
    conn = sqlite3.connect(db)
    try:
        with conn:
            return conn.execute(statement, params).rowcount
    finally:
        conn.close()


@pytest.fixture(params=["read here", "helper process"])
def stored_side(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both ways of reading the stored history, in chunks small enough for dozens a ladder.

    With the helper (ratings_plugin/commands/replay_helper.py) the rows are never read here
    except in a chunk whose digests differ.
    """
    monkeypatch.setattr(replay_module, "CHUNK", 16)
    if request.param == "helper process":
        monkeypatch.setattr(replay_module, "HELPER_MIN_ROWS", 0)

        def not_here(*args: Any) -> None:
            raise AssertionError("the helper reads the stored rows")
        monkeypatch.setattr(replay_module, "_stored_here", not_here)
    return str(request.param)


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "replay.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


Replayed = Callable[[Path, int], None]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory, template_db: Path) -> Replayed:
    """``replayed(db, seed)`` makes ``db`` the lobby holding ``write_log(seed)``'s log once
    the real ``matchlobby replay`` has rewritten its ratings: built once a module for each
    seed, then copied (the many cases that damage it each start from the same file)."""
    built: dict[int, Path] = {}

    def copy(db: Path, seed: int) -> None:
        if seed not in built:
            folder = tmp_path_factory.mktemp(f"replayed-{seed}")
            source = folder / "lobby.db"
            shutil.copyfile(template_db, source)
            write_log(source, seed)
            config = folder / "replay.toml"
            config.write_text(CONFIG, encoding="utf-8")
            done = run_cli(["replay", "--db", str(source), "--config", str(config)], folder)
            assert done.returncode == 0, done.stdout + done.stderr
            assert not Path(f"{source}-wal").exists()  # the file alone is the whole lobby
            built[seed] = source
        shutil.copyfile(built[seed], db)

    return copy


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_fast_path_gives_the_generic_rows_bit_for_bit(db_path: Path, seed: int) -> None:
    write_log(db_path, seed)
    for options in LADDERS.values():
        want_ratings, want_history = await generic(db_path, options)
        got_ratings, got_history = fast(db_path, options)
        assert len(want_history) > 400  # two rows per rated match, hundreds of matches
        assert exact(got_history) == exact(want_history)
        assert exact(got_ratings) == exact(want_ratings)


async def test_replay_rewrites_exactly_and_check_agrees(db_path: Path, config_file: Path) -> None:
    write_log(db_path, 4)
    code, out = await replay_cli(db_path, config_file, "--check")
    assert code == 1 and "rating history differs from the log (0 stored rows" in out  # nothing yet
    code, out = await replay_cli(db_path, config_file)
    assert code == 0, out
    first = {ladder: stored(db_path, ladder) for ladder in LADDERS}
    for ladder, options in LADDERS.items():
        ratings, history = await generic(db_path, options)
        assert exact(first[ladder][1]) == exact(history)
        assert exact(sorted(first[ladder][0])) == exact(ratings)
    code, out = await replay_cli(db_path, config_file, "--check")
    assert code == 0, out
    # a second rewrite stores the same values again
    assert (await replay_cli(db_path, config_file))[0] == 0
    for ladder in LADDERS:
        assert exact(stored(db_path, ladder)[0]) == exact(first[ladder][0])
        assert exact(stored(db_path, ladder)[1]) == exact(first[ladder][1])


async def test_rewrite_with_the_history_indexes_rebuilt(db_path: Path, config_file: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rows when the history indexes are dropped and built again (big ladders)."""
    write_log(db_path, 5)
    indexes = sql(db_path, "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'history' "
                           "AND type = 'index' ORDER BY name")
    assert (await replay_cli(db_path, config_file))[0] == 0
    want = {ladder: stored(db_path, ladder) for ladder in LADDERS}
    # the ladder's third stored row off: from its match on, the ladder is written again
    change(db_path, "UPDATE history SET before = before + 1 WHERE id = (SELECT id FROM history "
                    "WHERE ladder = 'backgammon' ORDER BY id LIMIT 1 OFFSET 2)")
    monkeypatch.setattr(replay_module, "REBUILD_MIN_ROWS", 0)
    config = dataclasses.replace(load_config(config_file), database=str(db_path))
    out = io.StringIO()
    assert await run_replay(config, False, out) == 0
    assert sql(db_path, "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'history' "
                        "AND type = 'index' ORDER BY name") == indexes
    for ladder in LADDERS:
        assert exact(stored(db_path, ladder)[0]) == exact(want[ladder][0])
        assert exact(stored(db_path, ladder)[1]) == exact(want[ladder][1])
    assert "replay: rewrote" in out.getvalue()
    assert await run_replay(config, True, out) == 0, out.getvalue()
    assert sql(db_path, "PRAGMA integrity_check") == [("ok",)]


async def test_rewrite_of_the_whole_history_table(db_path: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """One ladder holding every history row: emptied wholesale, foreign keys still whole.

    The rewrite runs with foreign-key enforcement off (ratings_plugin/commands/replay.py,
    REWRITE_PRAGMAS), so this checks what enforcement would have: every
    player id it wrote is in ``players``.
    """
    write_log(db_path, 7)
    one = tmp_path / "one.toml"
    one.write_text('[password_hashing]\nn = 1024\n\n[[ladders]]\nname = "backgammon"\n'
                   'system = "fibs"\n', encoding="utf-8")
    assert (await replay_cli(db_path, one))[0] == 0
    before = exact(sql(db_path, "SELECT * FROM history ORDER BY id"))
    assert len(before) > 400 and {r[1] for r in sql(db_path, "SELECT * FROM history")} == {
        "backgammon"}
    # the first stored row off: nothing agrees, every row is written again
    change(db_path, "UPDATE history SET after = after + 1 WHERE id = (SELECT min(id) FROM history)")
    monkeypatch.setattr(replay_module, "REBUILD_MIN_ROWS", 0)
    config = dataclasses.replace(load_config(one), database=str(db_path))
    out = io.StringIO()
    assert await run_replay(config, False, out) == 0, out.getvalue()
    assert f"history: 0 rows already agreed and were kept, {len(before)} written" in out.getvalue()
    assert exact(sql(db_path, "SELECT * FROM history ORDER BY id")) == before
    _, want = await generic(db_path, LADDERS["backgammon"])
    assert exact(stored(db_path, "backgammon")[1]) == exact(want)
    assert sql(db_path, "PRAGMA foreign_key_check") == []
    assert sql(db_path, "PRAGMA integrity_check") == [("ok",)]
    assert await run_replay(config, True, out) == 0, out.getvalue()


@pytest.mark.parametrize("refused", ["backgammon", "hypergammon"])
async def test_a_row_the_fast_path_refuses_goes_the_generic_way(
        db_path: Path, config_file: Path, refused: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refused row is the log's last: the fast path has written that ladder's other rows.

    Refused on the second FIBS ladder, the rewrite begins again after the
    first one was written: nothing of the first attempt may stay, or stay
    twice, and the history indexes the fast path dropped come back.
    """
    write_log(db_path, 6)
    indexes = sql(db_path, "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'history' "
                           "AND type = 'index' ORDER BY name")
    assert (await replay_cli(db_path, config_file))[0] == 0
    conn = sqlite3.connect(db_path)
    with conn:  # a rated-looking row the generic path skips (unrated reason): no history for it
        seq = conn.execute("UPDATE counters SET value = value + 1 RETURNING value").fetchone()[0]
        conn.execute(
            "INSERT INTO matches (ladder, side_a, side_b, length, played_on, status, winner, "
            "score_a, score_b, how, unrated_reason, seq, created_at, finished_at) VALUES "
            "(?, 'alice', 'Bob', 3, '2026-02-01', 'finished', 'a', 3, 0, 'event', "
            "'forfeit', ?, '2026-03-02T00:00:00Z', '2026-03-02T00:00:00Z')", (refused, seq))
        # and a stored value off on each ladder, which only a rewrite that was kept mends
        conn.execute("UPDATE history SET after = after + 1 WHERE id IN "
                     "(SELECT max(id) FROM history GROUP BY ladder)")
    conn.close()
    with pytest.raises(NotPlain):
        fast(db_path, LADDERS[refused])
    monkeypatch.setattr(replay_module, "REBUILD_MIN_ROWS", 0)
    config = dataclasses.replace(load_config(config_file), database=str(db_path))
    out = io.StringIO()
    assert await run_replay(config, False, out) == 0, out.getvalue()
    assert sql(db_path, "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'history' "
                        "AND type = 'index' ORDER BY name") == indexes
    assert sql(db_path, "PRAGMA integrity_check") == [("ok",)]
    for ladder, options in LADDERS.items():
        ratings, history = await generic(db_path, options)
        assert exact(stored(db_path, ladder)[1]) == exact(history)
        assert exact(stored(db_path, ladder)[0]) == exact(ratings)
    code, out = await replay_cli(db_path, config_file, "--check")
    assert code == 0, out


def damage(db: Path, kind: str, ladder: str, at: int) -> int:
    """Put ``ladder``'s stored history (or its log) out of step at its ``at``-th row (from 0).

    Returns how many of the ladder's stored rows still agree with the log,
    from the first on: every whole match before the damaged row.
    """
    rows = len(stored(db, ladder)[1])
    nth = "(SELECT id FROM history WHERE ladder = ? ORDER BY id LIMIT 1 OFFSET ?)"
    agreed = at - at % 2
    if kind == "value":
        assert change(db, f"UPDATE history SET after = after + 0.001 WHERE id = {nth}",
                      (ladder, at)) == 1
    elif kind == "time":  # compared in SQL, not in Python
        assert change(db, f"UPDATE history SET at = '2027-01-01T00:00:00Z' WHERE id = {nth}",
                      (ladder, at)) == 1
    elif kind == "missing":
        assert change(db, f"DELETE FROM history WHERE id = {nth}", (ladder, at)) == 1
    elif kind == "extra":  # a copy of the last row after the ladder's rows
        assert change(db, "INSERT INTO history (ladder, player_id, before, after, match_id, "
                          "event_id, at) SELECT ladder, player_id, before, after, match_id, "
                          "event_id, at FROM history WHERE ladder = ? ORDER BY id DESC LIMIT 1",
                      (ladder,)) == 1
        agreed = rows
    elif kind == "winner":  # the log itself: the match of that row went the other way
        assert change(db, "UPDATE matches SET winner = CASE winner WHEN 'a' THEN 'b' ELSE 'a' "
                          "END, score_a = score_b, score_b = score_a WHERE id = (SELECT "
                          f"match_id FROM history WHERE id = {nth})", (ladder, at)) == 1
    elif kind == "emptied":
        change(db, "DELETE FROM history WHERE ladder = ?", (ladder,))
        agreed = 0
    else:
        raise AssertionError(kind)
    return agreed


@pytest.mark.parametrize("kind", ["value", "time", "missing", "extra", "winner", "emptied"])
@pytest.mark.parametrize("ladder", sorted(LADDERS))
async def test_a_rewrite_keeps_the_rows_that_agree(db_path: Path, config_file: Path, kind: str,
                                                   ladder: str, stored_side: str,
                                                   replayed: Replayed) -> None:
    """Only what differs is written: the rows before the first difference keep their ids.

    The result is still the generic path's, row for row in id order; the
    other FIBS ladder is left exactly as it was. The damaged row is drawn at
    random (seeded by the case), so it falls anywhere in a chunk.
    """
    rng = random.Random(f"{kind} {ladder} {stored_side}")
    replayed(db_path, 11)
    other, = set(LADDERS) - {ladder}
    query = "SELECT * FROM history WHERE ladder = ? ORDER BY id"
    before = {name: exact(sql(db_path, query, (name,))) for name in LADDERS}
    agreed = damage(db_path, kind, ladder, rng.randrange(len(before[ladder])))
    code, out = await replay_here(db_path, config_file)
    assert code == 0, out
    kept = agreed + len(before[other])
    written = len(before[ladder]) - agreed
    assert f"history: {kept} rows already agreed and were kept, {written} written" in out, out
    after = {name: exact(sql(db_path, query, (name,))) for name in LADDERS}
    assert after[other] == before[other]
    assert after[ladder][:agreed] == before[ladder][:agreed]  # ids included
    for name, options in LADDERS.items():
        ratings, history = await generic(db_path, options)
        assert exact(stored(db_path, name)[1]) == exact(history)
        assert exact(stored(db_path, name)[0]) == exact(ratings)
    if kind != "winner":  # the log is as it was: so are the values
        assert [r.split(", ", 1)[1] for r in after[ladder]] == [
            r.split(", ", 1)[1] for r in before[ladder]]
    assert sql(db_path, "PRAGMA foreign_key_check") == []
    assert sql(db_path, "PRAGMA integrity_check") == [("ok",)]
    code, out = await replay_here(db_path, config_file, "--check")
    assert code == 0, out
    code, out = await replay_here(db_path, config_file)  # all agree now: nothing is written
    assert code == 0 and f"{sum(map(len, after.values()))} rows already agreed and were kept, " \
                         "0 written" in out, out
    assert {name: exact(sql(db_path, query, (name,))) for name in LADDERS} == after


async def test_appended_log_is_written_after_the_stored_rows(db_path: Path, config_file: Path,
                                                             stored_side: str) -> None:
    """Matches logged after the last rewrite: their rows are added, the others stay."""
    write_log(db_path, 13)
    assert (await replay_cli(db_path, config_file))[0] == 0
    query = "SELECT * FROM history ORDER BY id"
    before = exact(sql(db_path, query))
    write_log(db_path, 14, matches=40)
    code, out = await replay_here(db_path, config_file)
    assert code == 0, out
    after = exact(sql(db_path, query))
    assert after[:len(before)] == before and len(after) > len(before) + 100
    assert f"history: {len(before)} rows already agreed and were kept, " \
           f"{len(after) - len(before)} written" in out
    for name, options in LADDERS.items():
        _, history = await generic(db_path, options)
        assert exact(stored(db_path, name)[1]) == exact(history)
    assert (await replay_here(db_path, config_file, "--check"))[0] == 0


async def test_check_finds_a_changed_or_missing_history_row(db_path: Path,
                                                            config_file: Path) -> None:
    write_log(db_path, 7)
    assert (await replay_cli(db_path, config_file))[0] == 0
    rows = len(stored(db_path, "backgammon")[1])
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("UPDATE history SET after = after + 1e-9 WHERE id = (SELECT max(id) FROM "
                     "history WHERE ladder = 'backgammon')")
    code, out = await replay_cli(db_path, config_file, "--check")
    assert code == 1
    assert f"backgammon: rating history differs from the log ({rows} stored rows, {rows} " \
           "replayed)" in out
    assert "hypergammon" not in out
    with conn:
        conn.execute("DELETE FROM history WHERE id = (SELECT min(id) FROM history "
                     "WHERE ladder = 'hypergammon')")
    conn.close()
    code, out = await replay_cli(db_path, config_file, "--check")
    assert code == 1 and "hypergammon: rating history differs from the log" in out
    assert (await replay_cli(db_path, config_file))[0] == 0
    assert (await replay_cli(db_path, config_file, "--check"))[0] == 0


async def test_the_two_ladders_are_checked_through_both_plans(db_path: Path,
                                                             config_file: Path) -> None:
    """On the log of the next test, one FIBS ladder has most history rows and is read with a
    table scan, the other through ``history_ladder``: its cases check both plans."""
    write_log(db_path, 8)
    config = dataclasses.replace(load_config(config_file), database=str(db_path))
    assert await run_replay(config, False, io.StringIO()) == 0
    raw = sqlite3.connect(db_path)
    try:
        assert {replay_module._scan(*replay_module._history_rows(raw, ladder))
                for ladder in LADDERS} == {
            "", "NOT INDEXED"}
    finally:
        raw.close()


CHANGES = [
    # the columns the fast path's check compares in SQL ...
    ("at = '2026-03-01T23:59:59Z'", "1"),
    ("event_id = (SELECT min(id) FROM events)", "event_id IS NULL"),
    ("event_id = NULL", "event_id IS NOT NULL"),
    # ... and in Python
    ("match_id = match_id + 1", "1"),
    ("player_id = player_id + 1", "1"),
    ("before = before - 0.5", "1"),
]


@pytest.mark.parametrize(("change", "which", "ladder"), [
    (change, which, ladder) for ladder in LADDERS for change, which in CHANGES
    # only backgammon has event results
    if ladder == "backgammon" or which != "event_id IS NOT NULL"])
async def test_check_finds_each_changed_column(db_path: Path, config_file: Path, change: str,
                                               which: str, ladder: str, stored_side: str,
                                               replayed: Replayed) -> None:
    replayed(db_path, 8)
    conn = sqlite3.connect(db_path)
    with conn:
        changed = conn.execute(
            f"UPDATE history SET {change} WHERE id = (SELECT id FROM history "
            f"WHERE ladder = ? AND {which} ORDER BY id LIMIT 1 OFFSET 5)", (ladder,)
        ).rowcount
    conn.close()
    assert changed == 1
    code, out = await replay_here(db_path, config_file, "--check")
    assert code == 1 and f"{ladder}: rating history differs from the log" in out, out
    other, = set(LADDERS) - {ladder}
    assert other not in out
    assert (await replay_here(db_path, config_file))[0] == 0
    assert (await replay_here(db_path, config_file, "--check"))[0] == 0


async def test_a_log_written_by_the_lobby(lobby: LobbyServer) -> None:
    """Live matches, event results, a void and an adjudication, as the server logs them."""
    players = [await lobby.player(n) for n in ("ann", "Ben", "cat", "Dan")]
    admin = await lobby.admin()
    played = []
    for i in range(12):
        a, b = players[i % 4], players[(i + 1 + i // 4) % 4]
        mid = await start_match(a, b, length=1 + 2 * (i % 4))
        if i % 3:
            await b.call("resign")
        else:
            await a.call("report win", score_a=1 + 2 * (i % 4), score_b=0)
            await b.call("confirm", match=mid)
        played.append(mid)
    eid = (await admin.call("event create", name="club", ladder="backgammon"))["id"]
    rows = [f"club,{today()},{a},{b},{sa},{sb},{n}," for a, b, sa, sb, n in
            (("ann", "cat", 5, 2, 5), ("Dan", "Ben", 0, 3, 3), ("cat", "Dan", 1, 0, 1))]
    await admin.call("event import", new=True, event=eid, csv=results_text(rows))
    await admin.call("void", match=played[4], reason="wrong players")
    await admin.call("adjudicate", match=played[0], winner="Ben")
    await admin.call("adjudicate", match=played[2], winner="Dan")
    await lobby.stop()
    want_ratings, want_history = await generic(lobby.db, FIRST)
    got_ratings, got_history = fast(lobby.db, FIRST)
    assert len(want_history) == 2 * (12 - 1 + 3)
    assert exact(got_history) == exact(want_history)
    assert exact(got_ratings) == exact(want_ratings)
    assert exact(stored(lobby.db, "backgammon")[1]) == exact(want_history)  # what the server wrote


@pytest.mark.parametrize("failure", ["exits at once", "cannot be started"])
async def test_a_helper_that_cannot_start_again_leaves_the_log_to_this_connection(
        db_path: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    """The log after the first difference is read by a new helper process; when that one
    cannot begin, this connection reads it, and the later ladders' stored rows too, and the
    rewrite is the same."""
    monkeypatch.setattr(replay_module, "CHUNK", 16)
    monkeypatch.setattr(replay_module, "HELPER_MIN_ROWS", 0)
    write_log(db_path, 12)
    assert (await replay_cli(db_path, config_file))[0] == 0
    want = {name: exact(stored(db_path, name)[1]) for name in LADDERS}
    started: list[int] = []
    real = ReplayHelper._start

    def start(self: ReplayHelper) -> subprocess.Popen[bytes]:
        started.append(1)
        if len(started) == 1:
            return real(self)
        if failure == "cannot be started":
            raise OSError("no process for you")
        return subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
    monkeypatch.setattr(ReplayHelper, "_start", start)
    for ladder in LADDERS:
        damage(db_path, "value", ladder, 3)
    code, out = await replay_here(db_path, config_file)
    assert code == 0, out
    assert len(started) == 2  # the first ladder's restart failed; nothing started after it
    assert {name: exact(stored(db_path, name)[1]) for name in LADDERS} == want
    code, out = await replay_here(db_path, config_file, "--check")
    assert code == 0, out
