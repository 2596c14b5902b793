"""What ``event show`` and ``events`` show is kept between requests (per version of the events)
and is never older than the last change acknowledged: a result, an import, a void, an
adjudication, a close, and a correction after the close. Each step is checked against the
standings worked out here from the games as the test knows them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testkit.results import today
from testkit.server_loop import LobbyServer

from clients import LobbyClient

HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated\n"


@dataclass
class Game:
    match: int
    a: str
    b: str
    sa: int
    sb: int
    status: str = "finished"
    rated: bool = True

    @property
    def winner(self) -> str:
        return "a" if self.sa > self.sb else "b" if self.sb > self.sa else "draw"


def expected(games: list[Game]) -> list[dict[str, Any]]:
    """Standings as PROTOCOL.md says: rated finished games, a win 1 point and a draw ½ for each
    player of a side; best first, equal points by name ignoring case."""
    table: dict[str, dict[str, Any]] = {}
    for g in games:
        if g.status != "finished" or not g.rated:
            continue
        for side, names in (("a", g.a), ("b", g.b)):
            for player in names.split("+"):
                row = table.setdefault(player, {"player": player, "played": 0, "won": 0,
                                                "drawn": 0, "lost": 0, "points": 0.0})
                row["played"] += 1
                result = "drawn" if g.winner == "draw" else "won" if g.winner == side else "lost"
                row[result] += 1
                row["points"] += {"won": 1.0, "drawn": 0.5, "lost": 0.0}[result]
    return sorted(table.values(), key=lambda r: (-r["points"], r["player"].casefold()))


async def check(viewer: LobbyClient, eid: int, games: list[Game], status: str) -> None:
    shown = await viewer.call_all("event show", event=eid)
    assert shown["status"] == status
    assert shown["standings"] == expected(games)
    assert [(g["match"], g["status"]) for g in shown["games"]] == [
        (g.match, g.status) for g in games]
    assert shown["total"] == len(games)
    assert shown["total_standings"] == len(expected(games))
    listed = {e["id"]: e for e in (await viewer.call("events"))["events"]}
    assert listed[eid]["games"] == sum(g.status == "finished" for g in games)
    assert listed[eid]["status"] == status


async def test_event_show_and_events_follow_every_change(lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    viewer = await lobby.client()
    eid = (await admin.call("event create", name="Open", ladder="foosball-singles"))["id"]
    games: list[Game] = []
    await check(viewer, eid, games, "open")

    for a, b, sa, sb in (("alice", "bob", 10, 4), ("carol", "dave", 7, 10), ("alice", "carol", 10, 9)):
        data = await admin.call("event result", new=True, event=eid, side_a=a, side_b=b, score_a=sa,
                                score_b=sb)
        games.append(Game(data["match"], a, b, sa, sb))
        await check(viewer, eid, games, "open")  # asked between every two changes

    rows = [("bob", "dave", 10, 2, ""), ("erin", "alice", 10, 8, ""),
            ("dave", "erin", 10, 3, "no:forfeit")]
    csv = HEADER + "".join(f"Open,{today()},{a},{b},{sa},{sb},,{r}\n" for a, b, sa, sb, r in rows)
    imported = await admin.call("event import", new=True, event=eid, csv=csv)
    for (a, b, sa, sb, r), g in zip(rows, imported["games"], strict=True):
        games.append(Game(g["match"], a, b, sa, sb, rated=not r))
    await check(viewer, eid, games, "open")

    await admin.call("void", match=games[1].match, reason="wrong table")
    games[1].status = "voided"
    await check(viewer, eid, games, "open")

    await admin.call("adjudicate", match=games[0].match, winner="bob")
    games[0].sa, games[0].sb = games[0].sb, games[0].sa  # the scores follow the winner
    await check(viewer, eid, games, "open")

    await admin.call("event close", event=eid)
    await check(viewer, eid, games, "closed")

    await admin.call("adjudicate", match=games[2].match, winner="carol")  # after the close
    games[2].sa, games[2].sb = games[2].sb, games[2].sa
    await check(viewer, eid, games, "closed")
    await admin.call("void", match=games[3].match, reason="not played")
    games[3].status = "voided"
    await check(viewer, eid, games, "closed")

    # a second event: the first's standings are not mistaken for its own
    other = (await admin.call("event create", name="Next", ladder="foosball-singles"))["id"]
    data = await admin.call("event result", new=True, event=other, side_a="dave", side_b="alice",
                            score_a=10, score_b=0)
    await check(viewer, other, [Game(data["match"], "dave", "alice", 10, 0)], "open")
    await check(viewer, eid, games, "closed")


async def test_a_restart_shows_what_was_stored(lobby: LobbyServer) -> None:
    """Nothing kept in memory outlives the process: after a restart the same standings."""
    admin = await lobby.admin()
    eid = (await admin.call("event create", name="Day", ladder="scrabble"))["id"]
    data = await admin.call("event result", new=True, event=eid, side_a="alice", side_b="bob",
                            score_a=400, score_b=380)
    games = [Game(data["match"], "alice", "bob", 400, 380)]
    viewer = await lobby.client()
    await check(viewer, eid, games, "open")
    await lobby.restart()
    viewer = await lobby.client()
    await check(viewer, eid, games, "open")
    admin = await lobby.admin()
    await admin.call("void", match=games[0].match, reason="mistake")
    games[0].status = "voided"
    await check(viewer, eid, games, "open")
