"""Who plays a live match is kept in ``live_players`` beside the matches' statuses, so a join's
check reads two rows instead of both players' whole histories. The table must say exactly what
the matches say, after every way a match starts or ends; a database of the schema before it
gets the rows of its live matches when it is migrated."""

from __future__ import annotations

import asyncio
from pathlib import Path

from testkit.clients import start_match
from testkit.db import execute, sql
from testkit.server_loop import LobbyServer

from server.store.connection import open_connection
from server.store.schema import migrate

# What ``live_players`` stands for: the players of the matches being played or claimed.
FROM_MATCHES = """SELECT mp.player_id, m.id FROM match_players mp JOIN matches m
    ON m.id = mp.match_id WHERE m.status IN ('playing', 'claimed')"""


def agrees(lobby: LobbyServer) -> set[tuple[int, int]]:
    """``live_players``' rows, asserted equal to what the matches say."""
    kept = {(int(p), int(m)) for p, m in sql(lobby.db, "SELECT player_id, match_id FROM "
                                                       "live_players")}
    assert kept == {(int(p), int(m)) for p, m in sql(lobby.db, FROM_MATCHES)}
    return kept


async def test_live_players_follow_every_start_and_end_of_a_match(lobby: LobbyServer) -> None:
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    admin = await lobby.admin()
    ids = dict(sql(lobby.db, "SELECT name, id FROM players"))

    def live() -> set[tuple[int, int]]:
        return agrees(lobby)

    first = await start_match(alice, bob)
    second = await start_match(carol, dave)
    assert live() == {(ids["alice"], first), (ids["bob"], first), (ids["carol"], second),
                      (ids["dave"], second)}
    await alice.call("resign")  # finished by a resignation
    assert live() == {(ids["carol"], second), (ids["dave"], second)}
    await carol.call("report win", score_a=1, score_b=0)  # claimed: still live
    await dave.next_push("result_claimed")
    assert live() == {(ids["carol"], second), (ids["dave"], second)}
    await dave.call("confirm", match=second)  # the claim accepted: finished
    assert live() == set()

    third = await start_match(bob, carol)
    await bob.call("abort")  # both agree to abort
    await carol.next_push("abort_requested")
    await carol.call("abort")
    assert live() == set()

    fourth = await start_match(bob, carol, length=3)  # a dispute holds nobody
    await bob.call("report win", score_a=3, score_b=1)
    await carol.next_push("result_claimed")
    await carol.call("dispute", match=fourth)
    assert live() == set()

    fifth = await start_match(alice, dave)  # an admin voids a live match
    assert live() == {(ids["alice"], fifth), (ids["dave"], fifth)}
    await admin.call("void", match=fifth, reason="wrong length")
    assert live() == set()

    sixth = await start_match(dave, alice)  # an admin decides a live match
    await admin.call("adjudicate", match=sixth, winner="alice")
    assert live() == set()
    statuses = dict(sql(lobby.db, "SELECT id, status FROM matches"))
    assert [statuses[m] for m in (first, second, third, fourth, fifth, sixth)] == [
        "finished", "finished", "aborted", "disputed", "voided", "finished"]
    # and free players start matches again (the join's check reads this table)
    await start_match(alice, bob)
    await start_match(carol, dave)
    assert len(live()) == 4


async def test_rows_a_server_did_not_keep_hold_nobody_and_a_start_mends_them(
        lobby: LobbyServer) -> None:
    """A server of the version before the table, sharing the database, changes statuses
    without it: a row it leaves behind holds nobody (the check reads the match's status, and
    starting a match replaces the row); a server's start makes the table agree again."""
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    ids = dict(sql(lobby.db, "SELECT name, id FROM players"))
    old = await start_match(alice, bob)
    await alice.call("resign")
    # left behind: alice and bob still named for their finished match
    execute(lobby.db, "INSERT INTO live_players (player_id, match_id) VALUES (?, ?), (?, ?)",
            (ids["alice"], old, ids["bob"], old))
    new = await start_match(alice, carol)  # not refused: the match is finished
    assert (await bob.call("whois", name="bob"))["match"] is None
    kept = set(sql(lobby.db, "SELECT player_id, match_id FROM live_players"))
    assert {(ids["alice"], new), (ids["carol"], new), (ids["bob"], old)} == kept
    # missing: a match started without its rows
    other = await start_match(bob, dave)
    execute(lobby.db, "DELETE FROM live_players WHERE match_id = ?", (other,))
    await lobby.restart()
    assert agrees(lobby) == {(ids["alice"], new), (ids["carol"], new), (ids["bob"], other),
                             (ids["dave"], other)}


async def test_a_database_of_the_schema_before_gets_its_live_matches_players(
        tmp_path: Path) -> None:
    db = tmp_path / "lobby.db"
    conn = await asyncio.to_thread(open_connection, db)
    try:
        await migrate(conn, 15)
        conn.executemany("INSERT INTO players (id, name, name_key, created_at) VALUES "
                         "(?, ?, ?, '2026-01-01')", [(i, f"p{i}", f"p{i}") for i in range(1, 8)])
        # (match, status, side a, side b): two matches held, three not, p1 in a finished one too
        matches = [(1, "finished", 1, 3), (2, "playing", 1, 2), (3, "claimed", 3, 4),
                   (4, "disputed", 5, 6), (5, "aborted", 5, 7), (6, "voided", 6, 7)]
        for mid, status, a, b in matches:
            conn.execute("INSERT INTO matches (id, ladder, side_a, side_b, played_on, status, "
                         "created_at) VALUES (?, 'backgammon', ?, ?, '2026-01-01', ?, "
                         "'2026-01-01')", (mid, f"p{a}", f"p{b}", status))
            conn.executemany("INSERT INTO match_players (match_id, player_id, side) VALUES "
                             "(?, ?, ?)", [(mid, a, "a"), (mid, b, "b")])
        assert await migrate(conn) >= 16
        rows = {tuple(r) for r in conn.execute("SELECT player_id, match_id FROM live_players")}
        assert rows == {(1, 2), (2, 2), (3, 3), (4, 3)}
        with_fk = conn.execute("PRAGMA foreign_key_check").fetchall()
        assert with_fk == []
    finally:
        conn.close()
