"""Events: created, filled by `event result` and `event import`, closed, and rated exactly as
`matchlobby rate` rates the same rows."""

from __future__ import annotations

import asyncio
from pathlib import Path

from testkit.cli import add_user, rate_file
from testkit.clients import check_ladder_update, expect_error
from testkit.db import sql
from testkit.fibs import FibsModel, check_changes, check_fibs_state
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient


async def _create(admin: LobbyClient, name: str, ladder: str) -> int:
    event = await admin.call("event create", name=name, ladder=ladder)
    assert event == {"id": event["id"], "name": name, "ladder": ladder, "date": today(),
                     "status": "open"}
    return int(event["id"])


def _row(event: str, a: str, b: str, sa: int, sb: int, rated: str = "") -> str:
    return f"{event},{today()},{a},{b},{sa},{sb},,{rated}"


async def _result(admin: LobbyClient, eid: int, a: str, b: str, sa: int, sb: int) -> dict:
    data = await admin.call("event result", new=True, event=eid, side_a=a, side_b=b, score_a=sa, score_b=sb)
    assert data["event"] == eid and data["score_a"] == sa and data["score_b"] == sb
    assert data["rated"] is True and "changes" not in data  # rated only when the event closes
    return data


async def _close_and_compare(admin: LobbyClient, watcher: LobbyClient, eid: int, ladder: str,
                             system: str, rows: list[str], tmp: Path) -> dict:
    closed = await admin.call("event close", event=eid)
    assert closed["status"] == "closed" and closed["id"] == eid
    # a watcher hears of a close once: the players' own changes go to them alone
    update = await watcher.next_push()
    assert update["event"] == "ladder_updated"
    assert update["data"]["ladder"] == ladder and update["data"]["event"] == eid
    table = await watcher.call("ladder", ladder=ladder, all=True)
    assert table["system"] == system
    offline = await rate_file(system, rows, tmp / f"{ladder}-{eid}.csv")
    assert offline["as_of"] == today()
    # every field of every row: player, rank, of, rating, games, active and the system's own
    assert table["players"] == offline["players"]
    check_ladder_update(update["data"], table, [c["player"] for c in closed["changes"]])
    assert table["total"] == len(offline["players"]) > 0
    return closed


async def test_cas_event_by_result_and_import(lobby: LobbyServer, tmp_path: Path) -> None:
    admin = await lobby.admin()
    alice = await lobby.player("alice")  # an account; the others become ladder entries
    watcher = await lobby.client()
    await watcher.watch("scrabble")
    created = await admin.send_line('event create "Brno Open" scrabble')  # a quoted word
    eid = created["data"]["id"]
    assert created["data"] == {"id": eid, "name": "Brno Open", "ladder": "scrabble",
                               "date": today(), "status": "open"}
    assert (await watcher.call("events", status="open"))["events"] == [
        {"id": eid, "name": "Brno Open", "ladder": "scrabble", "date": today(), "status": "open",
         "games": 0}]

    rows: list[str] = []
    for a, b, sa, sb in (("ALICE", "bob", 412, 389), ("carol", "dave", 350, 350),
                         ("bob", "carol", 301, 455)):
        await _result(admin, eid, a, b, sa, sb)
        rows.append(_row("Brno Open", a, b, sa, sb))
    imported = [_row("brno open", "dave", "alice", 398, 377), _row("Brno Open", "eve", "bob", 420, 310),
                _row("Brno Open", "alice", "carol", 380, 402),
                _row("Brno Open", "eve", "dave", 0, 0, "no:forfeit")]
    data = await admin.call("event import", new=True, event=eid, csv=results_text(imported))
    assert data["imported"] == 4 and data["event"] == eid
    assert [g["rated"] for g in data["games"]] == [True, True, True, False]
    assert data["games"][3]["unrated"] == "forfeit"
    assert [g["side_a"] for g in data["games"]] == ["dave", "eve", "alice", "eve"]
    rows += imported
    # nothing is rated while the event is open
    assert sql(lobby.db, "SELECT count(*) FROM ratings WHERE ladder = 'scrabble'") == [(0,)]

    shown = await watcher.call("event show", event=eid)
    assert len(shown["games"]) == 7 and shown["status"] == "open"
    assert shown["games"][0]["side_a"] == "alice"  # the account's spelling, not the row's
    standings = {s["player"]: s for s in shown["standings"]}
    assert standings["carol"]["won"] == 2 and standings["carol"]["drawn"] == 1

    closed = await _close_and_compare(admin, watcher, eid, "scrabble", "cas",
                                      [r.replace("ALICE", "alice") for r in rows], tmp_path)
    assert {c["player"] for c in closed["changes"]} == {"alice", "bob", "carol", "dave", "eve"}
    assert all(c["cause"] == {"event": eid} for c in closed["changes"])
    # the player's own view agrees with the ladder and history names the event
    table = {r["player"]: r for r in (await alice.call("ladder", ladder="scrabble"))["players"]}
    mine = (await alice.call("rating"))["ratings"]
    assert mine == [{"ladder": "scrabble", "system": "cas", **table["alice"]}]
    hist = await alice.call("history", name="alice", ladder="scrabble")
    assert [(e["before"], e["after"], e["cause"]) for e in hist["entries"]] == [
        (None, table["alice"]["rating"], {"event": eid})]
    assert (await watcher.call("whois", name="dave"))["role"] == "entry"

    # a closed event takes nothing more
    await expect_error(admin.call("event result", new=True, event=eid, side_a="eve", side_b="bob",
                                  score_a=1, score_b=2), "conflict")
    await expect_error(admin.call("event import", new=True, event=eid,
                                  csv=results_text([_row("Brno Open", "eve", "bob", 3, 1)])),
                       "conflict")
    await expect_error(admin.call("event close", event=eid), "conflict")
    assert (await watcher.call("events", status="closed"))["events"][0]["games"] == 7
    assert (await watcher.call("events", status="open"))["events"] == []


async def test_p4p_doubles_event(lobby: LobbyServer, tmp_path: Path) -> None:
    admin = await lobby.admin()
    watcher = await lobby.client()
    await watcher.watch("foosball-doubles")
    eid = await _create(admin, "League day 3", "foosball-doubles")
    rows: list[str] = []
    for a, b, sa, sb in (("ann+ben", "cid+dot", 10, 7), ("cid+ann", "ben+eve", 4, 10)):
        await _result(admin, eid, a, b, sa, sb)
        rows.append(_row("League day 3", a, b, sa, sb))
    # refused: a draw in P4P, a singles side, one player on both sides
    await expect_error(admin.call("event result", new=True, event=eid, side_a="ann+ben", side_b="cid+dot",
                                  score_a=5, score_b=5), "bad_request")
    await expect_error(admin.call("event result", new=True, event=eid, side_a="ann", side_b="cid+dot",
                                  score_a=5, score_b=3), "bad_request")
    await expect_error(admin.call("event result", new=True, event=eid, side_a="ann+ben", side_b="ben+dot",
                                  score_a=5, score_b=3), "bad_request")
    bad_import = [_row("League day 3", "eve+dot", "ann+cid", 10, 2),
                  _row("League day 3", "eve+dot", "ann+cid", 6, 6)]
    await expect_error(admin.call("event import", new=True, event=eid, csv=results_text(bad_import)),
                       "bad_request")
    assert (await admin.call("event show", event=eid))["games"].__len__() == 2  # all or nothing
    imported = [_row("League day 3", "eve+dot", "ann+cid", 10, 2),
                _row("League day 3", "ben+cid", "dot+ann", 3, 10),
                _row("League day 3", "eve+ann", "ben+dot", 0, 10, "no:no-show")]
    data = await admin.call("event import", new=True, event=eid, csv=results_text(imported))
    assert data["imported"] == 3
    rows += imported

    closed = await _close_and_compare(admin, watcher, eid, "foosball-doubles", "p4p", rows, tmp_path)
    assert {c["player"] for c in closed["changes"]} == {"ann", "ben", "cid", "dot", "eve"}
    for c in closed["changes"]:
        assert c["before"] == 250 and c["change"] == c["after"] - 250
    await expect_error(admin.call("event result", new=True, event=eid, side_a="ann+ben", side_b="cid+dot",
                                  score_a=10, score_b=1), "conflict")


async def test_two_open_events_are_rated_in_the_order_they_close(lobby: LobbyServer,
                                                                  tmp_path: Path) -> None:
    admin = await lobby.admin()
    watcher = await lobby.client()
    await watcher.watch("scrabble")
    first = await _create(admin, "Spring", "scrabble")
    second = await _create(admin, "Summer", "scrabble")
    spring: list[str] = []
    summer: list[str] = []
    games = [(first, "ann", "ben", 400, 350), (second, "ann", "cid", 300, 420),
             (first, "cid", "dot", 390, 380), (second, "ben", "dot", 333, 444),
             (first, "ann", "dot", 410, 300), (second, "cid", "ben", 350, 352)]
    for eid, a, b, sa, sb in games:
        await _result(admin, eid, a, b, sa, sb)
        (spring if eid == first else summer).append(_row("Spring" if eid == first else "Summer",
                                                         a, b, sa, sb))
    # the order matters for these rows, so the comparison below can tell them apart
    in_close_order = await rate_file("cas", summer + spring, tmp_path / "close-order.csv")
    in_open_order = await rate_file("cas", spring + summer, tmp_path / "open-order.csv")
    assert in_close_order["players"] != in_open_order["players"]

    await admin.call("event close", event=second)
    await watcher.next_push("ladder_updated", where=lambda p: p["data"]["event"] == second)
    await _close_and_compare(admin, watcher, first, "scrabble", "cas", summer + spring, tmp_path)
    assert sql(lobby.db, "SELECT id FROM events ORDER BY seq") == [(second,), (first,)]


async def test_results_in_a_fibs_event_are_rated_at_once(lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    eid = await _create(admin, "Club night", "backgammon")
    model = FibsModel()
    for a, b, sa, sb, n in (("ann", "ben", 5, 2, 5), ("ben", "cid", 0, 3, 3), ("ann", "cid", 1, 7, 7)):
        data = await admin.call("event result", new=True, event=eid, side_a=a, side_b=b, score_a=sa,
                                score_b=sb, length=n)
        expected = model.play(a, b, n) if sa > sb else model.play(b, a, n)
        check_changes(data["changes"], expected)
    await expect_error(admin.call("event result", new=True, event=eid, side_a="ann", side_b="ben",
                                  score_a=4, score_b=2, length=5), "bad_request")
    await check_fibs_state(admin, model)
    closed = await admin.call("event close", event=eid)
    assert closed["changes"] == []
    await check_fibs_state(admin, model)


async def test_concurrent_results_naming_the_same_new_player(lobby: LobbyServer,
                                                            fast_config: Path) -> None:
    """Two directors recording results that both create 'Newbie' at once: one player, no error."""
    await asyncio.to_thread(add_user, lobby.db, fast_config, "deputy", "deputy-pw", True)
    first, second = await lobby.admin(), await lobby.client()
    assert (await second.login("deputy", "deputy-pw"))["role"] == "admin"
    e1 = await _create(first, "Table A", "scrabble")
    e2 = await _create(second, "Table B", "scrabble")
    header = "event,date,side_a,side_b,score_a,score_b\n"
    day = today()
    results = await asyncio.gather(
        first.call("event import", new=True, event=e1, csv=f"{header}Table A,{day},Newbie,xa,400,300\n"),
        second.call("event import", new=True, event=e2, csv=f"{header}Table B,{day},NEWBIE,xb,350,360\n"),
        first.call("event result", new=True, event=e1, side_a="newbie", side_b="xc", score_a=1, score_b=2),
    )
    assert [r["imported"] for r in results[:2]] == [1, 1]
    name = (await first.whois("newbie")).player  # as the import that came first spelt it
    assert name in ("Newbie", "NEWBIE")
    for eid in (e1, e2):
        shown = await first.call("event show", event=eid)
        assert shown["games"][0]["side_a"] == name
    for eid in (e1, e2):
        await first.call("event close", event=eid)
    ladder = [r.player.casefold() for r in (await first.ladder("scrabble", all=True)).players]
    assert ladder.count("newbie") == 1


async def test_a_name_new_on_the_ladder_is_named_in_the_reply(lobby: LobbyServer) -> None:
    """A result or an import naming someone who has never played on the ladder (a new entry,
    or a player of other ladders only) says so: a director's misspelling shows at once. A
    name that has played there is not named, whatever its case."""
    admin = await lobby.admin()
    alice, bob = await lobby.players("alice", "bob")  # accounts, never on scrabble
    first = await _create(admin, "Monday", "scrabble")
    got = await admin.call("event result", new=True, event=first, side_a="alice", side_b="Anne",
                           score_a=400, score_b=380)
    assert got["new_players"] == ["alice", "Anne"]
    got = await admin.call("event result", new=True, event=first, side_a="ALICE", side_b="anne",
                           score_a=400, score_b=380)
    assert got["new_players"] == []
    second = await _create(admin, "Tuesday", "scrabble")
    imported = await admin.call("event import", new=True, event=second, csv=results_text([
        _row("Tuesday", "anne", "Bob", 400, 300), _row("Tuesday", "anne", "Ane", 410, 300),
        _row("Tuesday", "Ane", "bob", 390, 300)]))
    assert imported["new_players"] == ["bob", "Ane"]
    await alice.close()
    await bob.close()


async def test_an_import_naming_someone_new_asks_first(lobby: LobbyServer) -> None:
    """An import naming someone who has never played on the ladder is refused (new_player,
    naming them all) and writes nothing, the whole file being one transaction; said again
    with `new`, it is recorded and its reply still names them."""
    admin = await lobby.admin()
    monday = await _create(admin, "Monday", "scrabble")
    await admin.call("event result", new=True, event=monday, side_a="alice", side_b="bob",
                     score_a=400, score_b=300)
    tuesday = await _create(admin, "Tuesday", "scrabble")
    rows = [_row("Tuesday", "alice", "bob", 380, 360), _row("Tuesday", "eve", "ALICE", 410, 300),
            _row("Tuesday", "bob", "frank", 390, 300), _row("Tuesday", "Eve", "frank", 1, 2)]
    written = "SELECT (SELECT count(*) FROM matches), (SELECT count(*) FROM players)"
    before = sql(lobby.db, written)
    refused = await admin.request("event import", {"event": tuesday, "csv": results_text(rows)})
    assert refused["error"] == {"code": "new_player", "message": (
        "eve and frank have never played on scrabble: check the spelling, or confirm them as "
        "new players.")}
    one = await admin.request("event import", {"event": tuesday, "csv": results_text(rows[1:2])})
    assert one["error"] == {"code": "new_player", "message": (
        "eve has never played on scrabble: check the spelling, or confirm eve as a new "
        "player.")}
    assert sql(lobby.db, written) == before
    assert (await admin.call("event show", event=tuesday))["games"] == []
    await expect_error(admin.call("whois", name="eve"), "not_found")
    # a file naming only players of the ladder needs no `new`
    known = await admin.call("event import", event=tuesday, csv=results_text(rows[:1]))
    assert (known["imported"], known["new_players"]) == (1, [])
    imported = await admin.call("event import", new=True, event=tuesday,
                                csv=results_text(rows[1:]))
    assert (imported["imported"], imported["new_players"]) == (3, ["eve", "frank"])
    assert len((await admin.call("event show", event=tuesday))["games"]) == 4
    assert (await admin.call("whois", name="EVE"))["player"] == "eve"
