"""The command line on either backend: ``migrate``, a database newer than the code, and
``matchlobby copy`` of a whole lobby from SQLite to PostgreSQL and back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit import postgres
from testkit.cli import replay_check, run_cli_async
from testkit.clients import play, start_match
from testkit.db import execute, log_position, sql
from testkit.postgres import PgDb
from testkit.server_loop import LobbyServer

from server.store.schema import SCHEMA_VERSION

TABLES = ("players", "events", "matches", "match_players", "live_players", "corrections",
          "counters", "requests", "sessions", "ratings", "history", "shared_values", "streaks",
          "shouts", "blocks", "mutes", "bans", "account_changes")


def _rows(db: Path) -> dict[str, Any]:
    """Every table's rows, and the log's position (SQLite's ``seq`` counter is PostgreSQL's
    sequence)."""
    rows: dict[str, Any] = {t: sorted(sql(db, f"SELECT * FROM {t}"), key=repr) for t in TABLES}
    rows["counters"] = [r for r in rows["counters"] if r[0] != "seq"]
    rows["log position"] = log_position(db)
    return rows


async def test_migrate_brings_the_tables_up_to_date_and_refuses_a_newer_database(
        db_path: Path, fast_config: Path, backend: str) -> None:
    done = await run_cli_async(["migrate", "--db", str(db_path), "--config", str(fast_config)],
                               db_path.parent)
    assert done.returncode == 0, done.stderr
    assert f"lobby schema {SCHEMA_VERSION}" in done.stdout and "ratings 1" in done.stdout
    if backend == "postgresql":
        execute(db_path, "UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    else:
        execute(db_path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    for command in (["migrate"], ["replay", "--check"]):
        done = await run_cli_async([*command, "--db", str(db_path), "--config", str(fast_config)],
                                   db_path.parent)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "newer" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.postgresql
async def test_a_lobby_copied_to_postgresql_and_back_is_the_same_lobby(
        tmp_path: Path, template_db: Path, fast_config: Path) -> None:
    server = postgres.server_url()
    if server is None:
        pytest.skip(postgres.MISSING)
    source = tmp_path / "lobby.db"
    source.write_bytes(template_db.read_bytes())
    lobby = LobbyServer(source)
    await lobby.start()
    try:
        alice, bob, carol = await lobby.players("alice", "bob", "carol")
        for winner, loser in ((alice, bob), (bob, carol), (alice, carol), (carol, bob)):
            await play(winner, loser)
        await start_match(alice, carol)  # a match still being played
        admin = await lobby.admin()
        eid = (await admin.call("event create", name="Open", ladder="backgammon"))["id"]
        await admin.call("event result", new=True, event=eid, side_a="alice", side_b="bob", score_a=3,
                         score_b=1, length=3)
        await admin.call("event close", event=eid)
        await bob.call("shout", text="who plays?")  # talk: a shout, a block, a mute
        await alice.call("block", name="carol")
        await admin.call("mute", name="carol", minutes=60)
        await admin.call("ban", name="bob", until="2099-01-15", reason="spam")  # and a ban
    finally:
        await lobby.aclose()
    target = PgDb(postgres.new_database(server), tmp_path)
    copy = ["copy", "--from", f"sqlite:///{source}", "--to", target, "--config", str(fast_config)]
    done = await run_cli_async(copy, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "copied" in done.stdout
    assert _rows(target) == _rows(source)  # type: ignore[arg-type]
    assert len(sql(target, "SELECT * FROM live_players")) == 2  # type: ignore[arg-type]
    code, out = await replay_check(target, fast_config)  # type: ignore[arg-type]
    assert code == 0, out
    again = await run_cli_async(copy, tmp_path)  # into a database that holds a lobby: refused
    assert again.returncode == 2 and "already holds a lobby" in again.stderr, again.stderr
    # the copy serves: ids go on after the copied ones
    lobby = LobbyServer(target)  # type: ignore[arg-type]
    await lobby.start()
    try:
        dave, erin = await lobby.players("dave", "erin")
        await play(dave, erin)
        await dave.call("shout", text="me")
        assert [s["text"] for s in (await erin.call("shouts"))["shouts"]] == ["who plays?", "me"]
    finally:
        await lobby.aclose()
    assert sql(target, "SELECT count(*) FROM players") == [(6,)]  # type: ignore[arg-type]
    back = tmp_path / "back.db"
    done = await run_cli_async(["copy", "--from", target, "--to", f"sqlite:///{back}",
                                "--config", str(fast_config)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert _rows(back) == _rows(target)  # type: ignore[arg-type]
    code, out = await replay_check(back, fast_config)
    assert code == 0, out
