"""Big replies in pages: `ladder`, `event show` and `history` hold at most a page each, and
`next` (the arguments of the same command) brings the rest of what was asked.

The joined pages are checked against views of the same data built whole elsewhere: the
ladder `matchlobby rate` makes of the same results, the standings recomputed here from the
games, as a director would add them up, and the history table read with SQLite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from testkit.cli import rate_file
from testkit.db import sql
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from ratings_plugin.plugin import CHANGED_ROWS
from server.api.paging import EVENT_PAGE, HISTORY_PAGE, LADDER_PAGE

PLAYERS = 1200  # more than two ladder pages


async def all_pages(client: LobbyClient, cmd: str, **args: Any) -> tuple[list[dict[str, Any]], int]:
    """Every page of a reply, following `next` by hand; (the pages, how many requests)."""
    pages = [await client.call(cmd, **args)]
    while pages[-1]["next"] is not None:
        pages.append(await client.call(cmd, **pages[-1]["next"]))
    return pages, len(pages)


async def test_a_ladder_comes_in_pages_and_next_brings_the_rest(harness: LobbyServer,
                                                                tmp_path: Path) -> None:
    await harness.start()
    admin, watcher = await harness.admin(), await harness.client()
    await watcher.watch("backgammon")
    eid = (await admin.call("event create", name="Big", ladder="backgammon"))["id"]
    rows = [f"Big,{today()},p{2 * i:04d},p{2 * i + 1:04d},{1 + i % 3},0,1,"
            for i in range(PLAYERS // 2)]
    await admin.call("event import", new=True, event=eid, csv=results_text(rows))
    whole = (await rate_file("fibs", rows, tmp_path / "big.csv"))["players"]
    assert len(whole) == PLAYERS
    # the watcher is told that every row moved, the best-placed few of them by name
    update = (await watcher.next_push("ladder_updated"))["data"]
    assert (update["total"], update["changed"], update["more"]) == (
        PLAYERS, whole[:CHANGED_ROWS], PLAYERS - CHANGED_ROWS)

    first = await admin.call("ladder", ladder="backgammon", count=1000, all=True)
    assert (first["total"], first["from"], len(first["players"])) == (PLAYERS, 1, LADDER_PAGE)
    assert first["next"] == {"ladder": "backgammon", "from": LADDER_PAGE + 1,
                             "count": 1000 - LADDER_PAGE, "all": True}
    second = await admin.call("ladder", **first["next"])
    assert second["next"] is None  # the 1,000 asked for are served
    assert first["players"] + second["players"] == whole[:1000]

    pages, requests = await all_pages(admin, "ladder", ladder="backgammon", count=100_000)
    assert requests == -(-PLAYERS // LADDER_PAGE)
    assert [r for p in pages for r in p["players"]] == whole  # every row once, in order
    assert max(len(p["players"]) for p in pages) == LADDER_PAGE

    # the library follows `next` itself
    assert [r.player for r in (await admin.ladder("backgammon", count=1000)).players] == \
        [r["player"] for r in whole[:1000]]

    for args, shown in (({}, whole[:50]),  # the default page of 50: nothing more was asked
                        ({"from": 1190, "count": 50}, whole[1189:]),
                        ({"from": 2000}, []), ({"count": 0}, [])):
        page = await admin.call("ladder", ladder="backgammon", **args)
        assert (page["players"], page["next"]) == (shown, None), args


def standings_of(games: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The standings of the rated, finished games: a win 1 point, a draw ½, each player of a
    side counted; best first, ties by name ignoring case."""
    table: dict[str, dict[str, Any]] = {}
    for g in games:
        if g["status"] != "finished" or not g["rated"]:
            continue
        winner = "a" if g["score_a"] > g["score_b"] else "b" if g["score_b"] > g["score_a"] else None
        for side in ("a", "b"):
            for name in g[f"side_{side}"].split("+"):
                t = table.setdefault(name, {"player": name, "played": 0, "won": 0, "drawn": 0,
                                            "lost": 0, "points": 0.0})
                t["played"] += 1
                if winner is None:
                    t["drawn"] += 1
                    t["points"] += 0.5
                elif winner == side:
                    t["won"] += 1
                    t["points"] += 1
                else:
                    t["lost"] += 1
    return sorted(table.values(), key=lambda t: (-t["points"], t["player"].casefold()))


@pytest.mark.parametrize("ladder", ["scrabble", "foosball-doubles"])
async def test_event_show_comes_in_pages_of_games_and_standings(harness: LobbyServer,
                                                                ladder: str) -> None:
    """Singles with draws (ČAS), doubles without (P4P); some games unrated."""
    await harness.start()
    admin = await harness.admin()
    eid = (await admin.call("event create", name="League", ladder=ladder))["id"]
    names = [f"Pl{i:03d}" for i in range(300)]
    rows = []
    for g in range(450):
        a, b, c, d = (names[(g * k + k) % 300] for k in (1, 7, 13, 29))
        if len({a, b, c, d}) < 4:
            continue
        sides = (a, c) if ladder == "scrabble" else (f"{a}+{b}", f"{c}+{d}")
        score_b = 5 if g % 7 == 0 and ladder == "scrabble" else 6 + g % 5 if g % 2 else g % 5
        rated = "no:forfeit" if g % 11 == 0 else ""
        rows.append(f"League,{today()},{sides[0]},{sides[1]},5,{score_b},,{rated}")
    await admin.call("event import", new=True, event=eid, csv=results_text(rows))

    first = await admin.call("event show", event=eid)
    assert (first["total"], len(first["games"])) == (len(rows), EVENT_PAGE)
    assert len(first["standings"]) == EVENT_PAGE
    assert first["next"] == {"event": eid, "from": EVENT_PAGE + 1}
    pages, requests = await all_pages(admin, "event show", event=eid)
    assert requests == -(-max(first["total"], first["total_standings"]) // EVENT_PAGE)
    games = [g for p in pages for g in p["games"]]
    standings = [s for p in pages for s in p["standings"]]
    assert [g["match"] for g in games] == sorted(g["match"] for g in games)
    assert [f"{g['side_a']},{g['side_b']}" for g in games] == [",".join(r.split(",")[2:4])
                                                               for r in rows]
    assert len({s["player"] for s in standings}) == len(standings) == first["total_standings"]
    assert standings == standings_of(games)
    assert {p["id"] for p in pages} == {eid} and {p["name"] for p in pages} == {"League"}

    window = await admin.call("event show", event=eid, count=50, **{"from": 101})
    assert (window["games"], window["standings"], window["next"]) == \
        (games[100:150], standings[100:150], None)
    assert (await admin.event(eid))["games"] == games  # the library follows `next` itself


async def test_a_long_history_comes_in_pages(harness: LobbyServer) -> None:
    await harness.start()
    admin = await harness.admin()
    games = 2 * HISTORY_PAGE + 100
    eid = (await admin.call("event create", name="Marathon", ladder="backgammon"))["id"]
    rows = [f"Marathon,{today()},hero,rival{i:04d},{i % 2},{1 - i % 2},1," for i in range(games)]
    await admin.call("event import", new=True, event=eid, csv=results_text(rows))
    stored = sql(harness.db, "SELECT h.after FROM history h JOIN players p ON p.id = h.player_id "
                             "WHERE p.name = 'hero' ORDER BY h.id")
    assert len(stored) == games

    first = await admin.call("history", name="hero")
    assert (first["total"], len(first["entries"]), first["next"]) == \
        (games, HISTORY_PAGE, {"name": "hero", "from": HISTORY_PAGE + 1})
    pages, requests = await all_pages(admin, "history", name="hero", ladder="backgammon")
    assert requests == 3
    entries = [e for p in pages for e in p["entries"]]
    assert [e["after"] for e in entries] == [row[0] for row in stored]
    assert [e["cause"] for e in entries] == [{"match": e["cause"]["match"], "event": eid}
                                             for e in entries]
    window = await admin.call("history", name="hero", ladder="backgammon", count=50,
                              **{"from": 1001})
    assert (window["entries"], window["next"]) == (entries[1000:1050], None)
    assert (await admin.call("history", name="hero", ladder="scrabble"))["entries"] == []
