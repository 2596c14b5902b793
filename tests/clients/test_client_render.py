"""The text renderers of ``clients/render.py`` on hand-built replies and pushes.

The ladders are described as the server describes them (its ``ladders`` reply); one made-up
system, unknown to every client, shows that nothing in the renderers is per system.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from testkit.constants import ROOT
from testkit.shapes import (
    CAS_COLUMNS,
    FIBS_COLUMNS,
    LADDERS,
    LADDERS_REPLY,
    P4P_COLUMNS,
    ZETA_COLUMNS,
    ZETA_ROWS,
)

from clients import render
from clients.render import render_push, render_reply
from server.commands import COMMANDS


def ok(cmd: str, data: Any) -> dict[str, Any]:
    return {"id": None, "ok": True, "cmd": cmd, "data": data}


ALICE: dict[str, Any] = {
    "player": "alice", "online": True, "status": "ready", "last_login": "2026-11-30T10:15:02Z",
    "role": "player", "match": None,
    "ratings": [
        {"ladder": "backgammon", "system": "fibs", "rank": 3, "of": 40, "player": "alice",
         "rating": 1523.4107, "games": 112, "active": True, "experience": 812},
        {"ladder": "scrabble", "system": "cas", "rank": 5, "of": 31, "player": "alice",
         "rating": 745, "games": 60, "active": True, "paluba": 120, "dansa": 1560,
         "peklo": 1580.2149},
        {"ladder": "foosball-doubles", "system": "p4p", "rank": 9, "of": 22, "player": "alice",
         "rating": 812, "games": 41, "active": True, "class": "Amateur"},
    ],
    "matches": {"played": 112, "dropped": 2, "disputed": 0},
}


def test_whois_shows_each_ladder_by_its_columns() -> None:
    """The FIBS line is the issue's example character for character; the others follow the
    same rule: every column but the games, as the server labels and rounds it."""
    assert render_reply(ok("whois", ALICE), LADDERS) == (
        "Information about alice:\n"
        "  Still logged in. Ready to play.\n"
        "  backgammon        rating 1523.41   experience 812                         "
        "rank 3 of 40\n"
        "  scrabble          strength 745   paluba 120   dansa 1560   peklo 1580.2   "
        "rank 5 of 31\n"
        "  foosball-doubles  points 812   class Amateur                              "
        "rank 9 of 22\n"
        "  Matches: 112 played, 2 dropped, 0 disputed."
    )
    one = {**ALICE, "ratings": ALICE["ratings"][:1]}
    assert render_reply(ok("whois", one), LADDERS).splitlines()[2] == (
        "  backgammon  rating 1523.41   experience 812   rank 3 of 40")


def test_a_ladder_not_described_is_shown_by_its_values() -> None:
    """Without a ``ladders`` reply (or for a ladder it does not list) a row's own fields are
    shown: a real number with two places, an integer whole."""
    assert render_reply(ok("whois", ALICE)).splitlines()[2:5] == [
        "  backgammon        rating 1523.41   experience 812                        rank 3 of 40",
        "  scrabble          rating 745   paluba 120   dansa 1560   peklo 1580.21   rank 5 of 31",
        "  foosball-doubles  rating 812   class Amateur                             rank 9 of 22",
    ]


def test_an_unknown_system_everywhere() -> None:
    whois = {**ALICE, "ratings": [{"ladder": "go", "system": "zeta", **ZETA_ROWS[0]},
                                  {"ladder": "go", "system": "zeta", **ZETA_ROWS[1]}]}
    assert render_reply(ok("whois", whois), LADDERS).splitlines()[2:4] == [
        "  go  score 1613   elo 1613.0   streak yes   mood calm   seen 2026-12-01   rank 1 of 2",
        "  go  score 1387   elo 1387.0   streak no   mood -   seen 2026-11-02       "
        "rank 2 of 2, inactive",
    ]
    ladder = {"ladder": "go", "system": "zeta", "total": 2, "columns": ZETA_COLUMNS,
              "players": ZETA_ROWS}
    assert render_reply(ok("ladder", ladder)).splitlines() == [  # the reply describes itself
        "go (zeta): 2 players",
        "rank  player  score     elo  streak  mood  seen        played  active",
        "   1  alice    1613  1613.0  yes     calm  2026-12-01       7  yes",
        "   2  bob      1387  1387.0  no      -     2026-11-02       7  no",
        "  score: Whole points.",
        "  elo: An estimate on the Elo scale.",
        "  streak: Won the last game.",
    ]
    rating = {"player": "alice", "ratings": whois["ratings"][:1]}
    assert render_reply(ok("rating", rating), LADDERS).splitlines()[1:] == [
        "  go (Zeta): score 1613, elo 1613.0, streak yes, mood calm, seen 2026-12-01; "
        "rank 1 of 2; played 7.",
    ]
    assert render_reply(ok("ladder", ladder), LADDERS).splitlines()[0] == "go (Zeta): 2 players"
    history = {"player": "alice", "ladder": "go", "entries": [
        {"ladder": "go", "at": "2026-12-01T08:00:00Z", "before": 1500, "after": 1613,
         "change": 113, "cause": {"match": 4}}]}
    assert render_reply(ok("history", history), LADDERS).splitlines()[2] == (
        "2026-12-01 08:00:00  go        1500   1613    +113  match 4")
    who = {"spectators": 0, "players": [{"player": "alice", "status": "ready",
                                         "ratings": {"go": 1613, "backgammon": 1500.0}}]}
    assert render_reply(ok("who", who), LADDERS).splitlines()[1] == (
        "alice   ready   go 1613, backgammon 1500.00")
    assert render_reply(ok("ladders", LADDERS_REPLY), LADDERS).splitlines() == [
        "ladder            system  format   live matches  updated               players",
        "backgammon        FIBS    singles  yes           after each match           40",
        "scrabble          ČAS     singles  no            when an event closes       31",
        "foosball-doubles  P4P     doubles  no            when an event closes       22",
        "go                Zeta    singles  yes           after each match            2",
    ]
    pushed = {"ladder": "go", "player": "bob", "before": 1500, "after": 1387, "change": -113,
              "cause": {"match": 4}}
    assert render_push({"event": "rating_changed", "data": pushed}, LADDERS) == (
        "** bob's go score: 1500 -> 1387 (-113).")  # the ladder's label for its rating
    finished = {**FINISHED, "ladder": "go", "length": 1, "changes": [
        {"player": "alice", "before": None, "after": 1613, "change": None},
        {"player": "bob", "before": 1500, "after": 1387, "change": -113}]}
    assert render_push({"event": "match_finished", "data": finished}, LADDERS).splitlines()[1:] == [
        "  alice: - -> 1613 (new)", "  bob: 1500 -> 1387 (-113)"]


@pytest.mark.parametrize(("changes", "line"), [
    ({"online": True, "status": "playing"}, "  Still logged in. Playing a match."),
    ({"online": True, "status": "away"}, "  Still logged in. Away."),
    ({"online": False, "status": "offline"},
     "  Not logged in right now. Last login: 2026-11-30 10:15:02 UTC."),
    ({"online": False, "status": "offline", "last_login": None}, "  Never logged in."),
])
def test_whois_status_sentences(changes: dict[str, Any], line: str) -> None:
    assert render.whois({**ALICE, **changes}).splitlines()[1] == line


def test_whois_inactive_and_unrated() -> None:
    rows = [dict(r, active=False) for r in ALICE["ratings"]]
    lines = render.whois({**ALICE, "ratings": rows}, LADDERS).splitlines()
    assert lines[2].endswith("rank 3 of 40, inactive")
    assert lines[3].endswith("rank 5 of 31, inactive")
    assert lines[4].endswith("rank 9 of 22, inactive")
    assert render.whois({**ALICE, "ratings": [], "matches": {}}).splitlines()[2:] == [
        "  No ratings yet.", "  Matches: 0 played, 0 dropped, 0 disputed."]


def test_ladder_tables_per_system() -> None:
    """Each ladder's table follows the columns its reply carries, then a legend of their help."""
    fibs = {"ladder": "backgammon", "system": "fibs", "total": 12, "columns": FIBS_COLUMNS,
            "players": [
                {"rank": 1, "of": 12, "player": "carol", "rating": 1612.004, "games": 3,
                 "active": True, "experience": 21},
                {"rank": 12, "of": 12, "player": "dave", "rating": 987.5, "games": 140,
                 "active": False, "experience": 1203}]}
    assert render_reply(ok("ladder", fibs)).splitlines() == [
        "backgammon (fibs): 12 players",
        "rank  player   rating  experience  matches  active",
        "   1  carol   1612.00          21        3  yes",
        "  12  dave     987.50        1203      140  no",
        "  experience: The lengths of every rated match added up.",
    ]
    cas = {"ladder": "scrabble", "system": "cas", "total": 2, "columns": CAS_COLUMNS,
           "players": [
               {"rank": 1, "of": 2, "player": "alice", "rating": 1000, "games": 2,
                "active": True, "paluba": 106, "dansa": 1530, "peklo": 1555.3807},
               {"rank": 2, "of": 2, "player": "bob", "rating": 0, "games": 2, "active": True,
                "paluba": 97, "dansa": 1470, "peklo": 1444.62}]}
    assert render_reply(ok("ladder", cas)).splitlines() == [
        "scrabble (cas): 2 players",
        "rank  player  strength  paluba  dansa   peklo  games  active",
        "   1  alice       1000     106   1530  1555.4      2  yes",
        "   2  bob            0      97   1470  1444.6      2  yes",
        "  strength: 0–1000: the mean of Paluba, Dansa and Peklo, each scaled so that the",
        "    ladder's lowest is 0 and its highest 1000. Every close rescales, so a player",
        "    can move without playing.",
        "  paluba: Short-term form, from the scores.",
        "  dansa: Medium-term form (NSA-style rating).",
        "  peklo: Long-term strength fitted to every game ever rated.",
    ]
    p4p = {"ladder": "foosball-singles", "system": "p4p", "total": 1, "columns": P4P_COLUMNS,
           "players": [{"rank": 1, "of": 1, "player": "eve", "rating": 290, "games": 1,
                        "active": True, "class": "Newcomer"}]}
    assert render_reply(ok("ladder", p4p)).splitlines() == [
        "foosball-singles (p4p): 1 players",
        "rank  player  points  class     games  active",
        "   1  eve        290  Newcomer      1  yes",
        "  class: Newcomer below 500 points, Amateur below 1000, Master below 1500, then",
        "    Elite.",
    ]
    empty = {"ladder": "scrabble", "system": "cas", "total": 0, "columns": CAS_COLUMNS,
             "players": []}
    assert render_reply(ok("ladder", empty)) == "scrabble (cas): 0 players\n  (nobody yet)"
    # a reply without columns (an older server): the ladder as described by the ladders reply,
    # else by the rows' own fields
    bare = {k: v for k, v in fibs.items() if k != "columns"}
    assert render_reply(ok("ladder", bare), LADDERS).splitlines()[1:] == render_reply(
        ok("ladder", fibs)).splitlines()[1:]
    # the system as the ladders reply titles it
    assert render_reply(ok("ladder", fibs), LADDERS).splitlines()[0] == (
        "backgammon (FIBS): 12 players")
    assert render_reply(ok("ladder", bare)).splitlines()[1:3] == [
        "rank  player   rating  experience  games  active",
        "   1  carol   1612.00          21      3  yes"]


def test_rating() -> None:
    data = {"player": "alice", "ratings": ALICE["ratings"][:2]}
    assert render_reply(ok("rating", data), LADDERS).splitlines() == [
        "Ratings of alice:",
        "  backgammon (FIBS): rating 1523.41, experience 812; rank 3 of 40; 112 matches.",
        "  scrabble (ČAS): strength 745, paluba 120, dansa 1560, peklo 1580.2; rank 5 of 31; "
        "60 games.",
    ]
    one = {"player": "alice", "ratings": [dict(ALICE["ratings"][0], active=False, games=1)]}
    assert render_reply(ok("rating", one)).splitlines()[1] == (  # no ladders described
        "  backgammon (fibs): rating 1523.41, experience 812; rank 3 of 40 (inactive); 1 game.")
    assert render_reply(ok("rating", {"player": "bob", "ratings": []})) == (
        "bob has no ratings yet.")


def test_history() -> None:
    data = {"player": "alice", "ladder": None, "entries": [
        {"ladder": "backgammon", "at": "2026-11-30T10:15:02Z", "before": 1500.0,
         "after": 1522.136, "change": 22.136, "cause": {"match": 17}},
        {"ladder": "scrabble", "at": "2026-12-01T08:00:00Z", "before": None, "after": 1000,
         "change": None, "cause": {"event": 3}},
        {"ladder": "scrabble", "at": "2026-12-02T08:00:00Z", "before": 1000, "after": 950,
         "change": -50, "cause": {}},
        {"ladder": "backgammon", "at": "2026-12-03T08:00:00Z", "before": 1522.136,
         "after": 1530.0, "change": 7.864, "cause": {"match": 20, "event": 4}},
    ]}
    assert render_reply(ok("history", data)).splitlines() == [
        "Rating history of alice:",
        "when (UTC)           ladder       before    after  change  what happened",
        "2026-11-30 10:15:02  backgammon  1500.00  1522.14  +22.14  match 17",
        "2026-12-01 08:00:00  scrabble          -     1000     new  event 3",
        "2026-12-02 08:00:00  scrabble       1000      950     -50  correction",
        "2026-12-03 08:00:00  backgammon  1522.14  1530.00   +7.86  match 20, event 4",
    ]
    # the ladder's rating column decides: whole numbers for an integer one, whatever the JSON
    whole = {"player": "alice", "ladder": "scrabble", "entries": [
        {"ladder": "scrabble", "at": "2026-12-02T08:00:00Z", "before": 1000.0, "after": 949.6,
         "change": -50.4, "cause": {"event": 5}}]}
    assert render_reply(ok("history", whole), LADDERS).splitlines()[2] == (
        "2026-12-02 08:00:00  scrabble    1000    950     -50  event 5")
    assert render_reply(ok("history", whole)).splitlines()[2] == (
        "2026-12-02 08:00:00  scrabble  1000.00  949.60  -50.40  event 5")
    # the story of each change, as the server tells it
    told = {"player": "alice", "ladder": None, "entries": [
        {"ladder": "backgammon", "at": "2026-11-30T10:15:02Z", "before": 1500.0,
         "after": 1522.136, "change": 22.136, "cause": {"match": 17}, "match": 17,
         "opponents": ["bob"], "partners": [], "result": "won", "score": [3, 1], "length": 3,
         "event": None, "rated": True},
        {"ladder": "foosball-doubles", "at": "2026-12-01T08:00:00Z", "before": 1000,
         "after": 990, "change": -10, "cause": {"event": 3}, "match": None,
         "opponents": ["carol", "dave"], "partners": ["bob"], "result": "1 won, 2 lost",
         "score": None, "length": None, "event": {"id": 3, "name": "League day 3"},
         "rated": True},
        {"ladder": "backgammon", "at": "2026-12-03T08:00:00Z", "before": 1522.136,
         "after": 1530.0, "change": 7.864, "cause": {"match": 20, "event": 4}, "match": 20,
         "opponents": ["erin"], "partners": [], "result": "lost", "score": [2, 5],
         "length": 5, "event": {"id": 4, "name": "Club night"}, "rated": False}]}
    assert [line.split("  ")[-1] for line in render_reply(ok("history", told)).splitlines()[2:]
            ] == ["won 3-1 v bob, 3 points, match 17",
                  "1 won, 2 lost with bob v carol, dave at League day 3 (#3)",
                  "lost 2-5 v erin, 5 points, match 20 at Club night (#4) (unrated)"]
    assert render_reply(ok("history", {"player": "bob", "ladder": "scrabble", "entries": []})
                        ) == "bob has no rating history in scrabble."
    assert render_reply(ok("history", {"player": "bob", "ladder": None, "entries": []})
                        ) == "bob has no rating history."


def test_who() -> None:
    data = {"spectators": 3, "players": [
        {"player": "alice", "status": "playing",
         "ratings": {"backgammon": 1509.98, "scrabble": 1000}},
        {"player": "bob", "status": "away", "ratings": {}}]}
    assert render_reply(ok("who", data)).splitlines() == [
        "player  status   ratings",
        "alice   playing  backgammon 1509.98, scrabble 1000",
        "bob     away     -",
        "2 players, 3 spectators.",
    ]
    assert render_reply(ok("who", {"players": [], "spectators": 0})) == (
        "Nobody is logged in (0 spectators).")


def test_ladders_events_and_an_event() -> None:
    assert render_reply(ok("ladders", {"ladders": [
        {"ladder": "backgammon", "system": "fibs", "format": "singles",
         "updated": "after each match", "players": 12}]})).splitlines() == [  # no title, no live
        "ladder      system  format   live matches  updated           players",
        "backgammon  fibs    singles  -             after each match       12",
    ]
    assert render_reply(ok("events", {"events": []})) == "No events."
    assert render_reply(ok("events", {"events": [
        {"id": 3, "name": "Brno Open", "ladder": "scrabble", "date": "2026-03-14",
         "status": "open", "games": 12},
        {"id": 14, "name": "Cup", "ladder": "foosball-doubles", "date": "2026-03-21",
         "status": "closed", "games": 0}]})).splitlines() == [
        "id  name       ladder            date        status  games",
        " 3  Brno Open  scrabble          2026-03-14  open       12",
        "14  Cup        foosball-doubles  2026-03-21  closed      0",
    ]
    shown = {"id": 3, "name": "Cup", "ladder": "foosball-doubles", "date": "2026-03-21",
             "status": "open",
             "games": [{"match": 9, "side_a": "eve+frank", "side_b": "gina+hal", "score_a": 10,
                        "score_b": 7, "status": "finished", "rated": True, "unrated": None},
                       {"match": 10, "side_a": "eve+gina", "side_b": "frank+hal",
                        "score_a": None, "score_b": None, "status": "voided", "rated": False,
                        "unrated": "forfeit"}],
             "standings": [{"player": "eve", "played": 1, "won": 1, "drawn": 0, "lost": 0,
                            "points": 1.0}]}
    assert render_reply(ok("event show", shown)).splitlines() == [
        "Event 3: Cup (foosball-doubles, 2026-03-21, open)",
        "match  side a     side b     score  status",
        "    9  eve+frank  gina+hal   10:7   finished",
        "   10  eve+gina   frank+hal  -:-    voided",
        "player  played  won  drawn  lost  points",
        "eve          1    1      0     0     1.0",
    ]
    created = {"id": 4, "name": "League", "ladder": "scrabble", "date": "2026-04-01",
               "status": "open"}
    assert render_reply(ok("event create", created)) == (
        "Event 4: League (scrabble, 2026-04-01, open)")
    closed = {**created, "status": "closed", "changes": [
        {"ladder": "scrabble", "player": "amy", "before": None, "after": 1000, "change": None,
         "cause": {"event": 4}},
        {"ladder": "scrabble", "player": "ben", "before": 508, "after": 500, "change": -8,
         "cause": {"event": 4}}]}
    assert render_reply(ok("event close", closed)).splitlines() == [
        "Event 4: League (scrabble, 2026-04-01, closed)",
        "  amy: - -> 1000 (new)",
        "  ben: 508 -> 500 (-8)",
    ]


ROW = {"rank": 1, "of": 6, "player": "amy", "rating": 1000, "games": 1, "active": True}
FINISHED = {"match": 17, "ladder": "backgammon", "length": 5, "winner": "alice",
            "loser": "bob", "how": "resign", "rated": True, "changes": [
                {"player": "alice", "before": 1500.0, "after": 1522.136, "change": 22.136},
                {"player": "bob", "before": 1500.0, "after": 1477.864, "change": -22.136}]}


@pytest.mark.parametrize(("cmd", "sentence"), [
    ("resign", "bob resigned; alice wins match 17 (backgammon, 5 points)."),
    ("confirm", "bob confirmed alice's win in match 17 (backgammon, 5 points)."),
    ("claim", "bob left and did not come back in time; alice claimed match 17 (backgammon, "
              "5 points) and wins."),
    ("adjudicate", "An admin decided match 17 (backgammon, 5 points): alice wins."),
])
def test_a_finished_match(cmd: str, sentence: str) -> None:
    """How the match ended, in words (the server's ``how`` is a command's name)."""
    assert render_reply(ok(cmd, {**FINISHED, "how": cmd})).splitlines() == [
        sentence,
        "  alice: 1500.00 -> 1522.14 (+22.14)",
        "  bob: 1500.00 -> 1477.86 (-22.14)",
    ]


def test_an_unrated_or_short_match() -> None:
    assert render.match_finished({**FINISHED, "length": "unlimited", "rated": False,
                                  "changes": []}) == (
        "bob resigned; alice wins match 17 (backgammon, unlimited). Not rated.")
    assert render.match_finished({**FINISHED, "length": 1}).splitlines()[0] == (
        "bob resigned; alice wins match 17 (backgammon, 1 point).")


def test_a_correction_is_not_a_finished_match() -> None:
    corrected = {"match": 5, "ladder": "backgammon", "status": "voided", "winner": None,
                 "reason": "cheating", "recomputed": True, "changes": [
                     {"ladder": "backgammon", "player": "alice", "before": 1522.136,
                      "after": 1500.0, "change": -22.136, "cause": {"match": 5}}]}
    assert render_reply(ok("void", corrected)).splitlines() == [
        "Match 5 (backgammon) is void: cheating. The ladder was recomputed:",
        "  alice: 1522.14 -> 1500.00 (-22.14)"]
    assert render_reply(ok("void", {**corrected, "recomputed": False})) == (
        "Match 5 (backgammon) is void: cheating. It was never rated; no rating moved.")
    assert render_reply(ok("adjudicate", {**corrected, "status": "finished",
                                          "winner": "bob", "reason": None})).splitlines()[0] == (
        "Match 5 (backgammon) now counts as won by bob. The ladder was recomputed:")


def test_help() -> None:
    listing = {"commands": [
        {"command": "who", "usage": "who", "who": "anyone", "summary": "Online players."},
        {"command": "event close", "usage": "event close EVENT", "who": "admin",
         "summary": "Close the event."}]}
    assert render_reply(ok("help", listing)).splitlines() == [
        "usage              who     what",
        "who                anyone  Online players.",
        "event close EVENT  admin   Close the event.",
    ]
    assert render_reply(ok("help", listing["commands"][1])) == (
        "event close EVENT\n  Close the event.\n  For: admin")


def test_errors_and_odd_replies() -> None:
    refused = {"id": 7, "ok": False, "cmd": "whois",
               "error": {"code": "not_found", "message": "No player named 'bob'."}}
    assert render_reply(refused) == "Error (not_found): No player named 'bob'."
    assert render_reply({"ok": False}) == "Error (?): "
    typo = {"ok": False, "cmd": "event result", "error": {"code": "new_player", "message": (
        "eve has never played on scrabble: check the spelling, or confirm eve as a new player.")}}
    assert render_reply(typo).endswith("as a new player. Type it again with --new to add them.")
    typos = {"ok": False, "cmd": "event import", "error": {"code": "new_player", "message": (
        "eve and frank have never played on scrabble: check the spelling, or confirm them as "
        "new players.")}}
    assert render_reply(typos) == (
        "Error (new_player): eve and frank have never played on scrabble: check the spelling, "
        "or confirm them as new players. Import it again with --new to add them.")
    assert render_reply(ok("player remove", {"player": "eve", "removed": True})) == (
        "Removed eve: the name is free again.")
    assert render_reply(ok("invite", {"to": "bob", "ladder": "backgammon", "length": 3})) == (
        "You invited bob to a 3-point backgammon match.")  # no expiry, no stake
    # a reply that lacks what its renderer needs falls back to the plain form, never raises,
    # and drops nothing
    assert render_reply(ok("whois", {"player": "x", "ratings": [{"ladder": "chess"}]})
                        ) == "player: x\nratings:\n  ladder\n  chess"
    assert render_reply(ok("ladder", None)) == "-"
    assert render_reply(ok("logout", {"player": "a", "logged_in": False})) == "Logged out of a."
    # a plugin's command, which this client knows nothing of, shows its fields
    assert render_reply(ok("streak", {"player": "a", "streak": 3, "best": None})) == (
        "player: a, streak: 3, best: -")


@pytest.mark.parametrize(("push", "text"), [
    ({"event": "hello", "data": {"server": "matchlobby", "version": "0.1.0", "protocol": 1}},
     "Connected to matchlobby 0.1.0 (protocol 1)."),
    ({"event": "invited", "data": {"from": "bob", "ladder": "backgammon", "length": 5}},
     "** bob invites you to a 5-point backgammon match. Type 'join bob' or 'decline bob'."),
    ({"event": "match_started", "data": {"match": 4, "ladder": "backgammon", "length": 5,
                                         "a": "bob", "b": "alice", "status": "playing"}},
     "** Match 4 started: bob vs alice (backgammon, 5 points)."),
    ({"event": "match_finished", "data": FINISHED},
     "** bob resigned; alice wins match 17 (backgammon, 5 points).\n"
     "  alice: 1500.00 -> 1522.14 (+22.14)\n  bob: 1500.00 -> 1477.86 (-22.14)"),
    ({"event": "rating_changed", "data": {"ladder": "scrabble", "player": "amy", "before": None,
                                          "after": 1000, "change": None,
                                          "cause": {"event": 3}}},
     "** amy's scrabble rating: - -> 1000 (new)."),
    ({"event": "result_claimed", "data": {"match": 4, "by": "bob", "scores": [5, 2],
                                          "status": "claimed"}},
     "** bob reports a win in match 4 (5 to 2). Type 'confirm 4' or 'dispute 4'."),
    ({"event": "ladder_updated", "data": {"ladder": "scrabble", "event": 3, "total": 6, "more": 0,
                                          "changed": [ROW | {"player": "amy", "rank": 1},
                                                      ROW | {"player": "bob", "rank": 3}]}},
     "** Ladder scrabble updated after event 3 (6 players): amy 1000 (#1), bob 1000 (#3)."),
    ({"event": "ladder_updated", "data": {
        "ladder": "backgammon", "event": None, "total": 900, "more": 14,
        "changed": [ROW | {"player": f"p{i}", "rank": i, "rating": 1500.5} for i in range(1, 7)]}},
     "** Ladder backgammon updated (900 players): p1 1500.50 (#1), p2 1500.50 (#2), "
     "p3 1500.50 (#3), p4 1500.50 (#4), p5 1500.50 (#5) and 15 more."),
    ({"event": "presence", "data": {"players": [{"player": "bob", "status": "ready"}]}},
     "** bob is online, free to play."),
    ({"event": "presence", "data": {"players": [{"player": "bob", "status": "offline"},
                                                {"player": "carol", "status": "playing"}]}},
     "** bob left. carol is playing a match."),
    ({"event": "logged_out", "data": {"reason": "Replaced.", "cause": "replaced"}},
     "** Replaced."),
    ({"event": "refresh", "data": {"reason": "Missed."}},
     "** The server missed some of the lobby's updates: type 'ladder', 'matches' or 'who' "
     "again for the current state."),
    ({"event": "declined", "data": {"by": "bob"}}, "** bob declined your invitation."),
    ({"event": "declined", "data": {}}, "** declined: "),  # incomplete
    ({"event": "invited", "data": {"from": "bob"}}, "** invited: from: bob"),  # incomplete
])
def test_pushes(push: dict[str, Any], text: str) -> None:
    assert render_push(push) == text


# ---- every reply and push of docs/PROTOCOL.md as a sentence -----------------------------------

PROTOCOL = (ROOT / "docs" / "PROTOCOL.md").read_text(encoding="utf-8")


def test_every_push_of_the_protocol_and_every_lobby_command_has_its_sentence() -> None:
    table = PROTOCOL[PROTOCOL.index("## Pushes"):]
    pushes = re.findall(r"^\| `([a-z_]+)` \|", table, flags=re.M)
    assert "invitation_expired" in pushes and len(pushes) >= 16
    assert set(pushes) - {"hello"} <= set(render.PUSHES), set(pushes) - set(render.PUSHES)
    assert set(COMMANDS) <= set(render.REPLIES), set(COMMANDS) - set(render.REPLIES)


STAKE = {"ladder": "backgammon", "length": 3, "players": [
    {"player": "alice", "rating": 1517.2166, "chance": 0.51716, "win": 16.5923, "loss": -17.7716},
    {"player": "bob", "rating": 1482.7834, "chance": 0.48284, "win": 17.7716, "loss": -16.5923}]}
AT_STAKE = ["  alice (rating 1517.22): 51.7% to win; a win +16.59, a loss -17.77.",
            "  bob (rating 1482.78): 48.3% to win; a win +17.77, a loss -16.59."]
SUMMARY = {"match": 4, "ladder": "backgammon", "length": 3, "a": "alice", "b": "bob",
           "status": "playing", "stake": STAKE}
ALICE_READS = render.Viewer("alice", "player")


@pytest.mark.parametrize(("cmd", "data", "text"), [
    ("register", {"player": "alice", "role": "player", "session": {"token": "t"}},
     "Welcome, alice: your account is made and you are logged in."),
    ("login", {"player": "root", "role": "admin", "match": None}, "Logged in as root (admin)."),
    ("login", {"player": "alice", "role": "player", "match": {**SUMMARY, "status": "claimed"}},
     "Logged in as alice.\nYou are in match 4: alice vs bob (backgammon, 3 points), a win is "
     "reported.\n" + "\n".join(AT_STAKE)),
    ("resume", {"player": "alice", "role": "player", "match": None},
     "Logged in again as alice."),
    ("logout", {"player": "alice", "logged_in": False, "revoked": True},
     "Logged out of alice. This login's session has ended."),
    ("logout", {"player": "alice", "logged_in": False, "revoked": True, "ended": 3},
     "Logged out of alice everywhere (3 sessions ended)."),
    ("logout", {"player": "alice", "logged_in": True, "revoked": False, "ended": 1},
     "Ended your other sessions (1 session); you stay logged in here."),
    ("login", {"player": "alice", "role": "player", "match": None, "other_sessions": 2},
     "Logged in as alice.\nYou have 2 other sessions open (other devices or browsers); "
     "'logout --others' ends them."),
    ("ban", {"player": "alice", "banned": True, "until": "2099-01-15T00:00:00Z",
             "reason": "spam"},
     "Banned alice until 2099-01-15 (spam): their connection is closed, their logins refused."),
    ("ban", {"player": "alice", "banned": True, "until": None, "reason": None},
     "Banned alice with no end date: their connection is closed, their logins refused."),
    ("unban", {"player": "alice", "banned": False, "lifted": True}, "alice may log in again."),
    ("unban", {"player": "alice", "banned": False, "lifted": False}, "alice was not banned."),
    ("watch", {"ladder": "scrabble", "watching": True},
     "Watching scrabble: its results and rating changes are shown here."),
    ("unwatch", {"ladder": "scrabble", "watching": False}, "No longer watching scrabble."),
    ("stake", STAKE, "At stake in a 3-point backgammon match of alice against bob:\n"
     + "\n".join(AT_STAKE)),
    ("invite", {"to": "bob", "ladder": "backgammon", "length": 3,
                "expires_at": "2026-12-01T20:58:30Z", "replaced": False, "stake": STAKE},
     "You invited bob to a 3-point backgammon match, open until 20:58:30 UTC.\n"
     + "\n".join(AT_STAKE)),
    ("invite", {"to": "bob", "ladder": "backgammon", "length": "unlimited", "expires_at": None,
                "replaced": True, "stake": None},
     "You invited bob again (this replaces your earlier invitation) to an unlimited (unrated) "
     "backgammon match."),
    ("invitations", {"sent": [], "received": []}, "No invitations, sent or received."),
    ("invitations", {"sent": [{"to": "bob", "ladder": "backgammon", "length": 11,
                               "expires_at": "2026-12-01T20:58:30Z"}], "received": []},
     "Invitations you sent:\n  to bob: an 11-point backgammon match, open until 20:58:30 UTC. "
     "Type 'uninvite bob' to withdraw it.\nYou have received no invitations."),
    ("uninvite", {"withdrawn": "bob"}, "Your invitation to bob is withdrawn."),
    ("join", SUMMARY, "Match 4 started: alice vs bob (backgammon, 3 points).\n"
     + "\n".join(AT_STAKE)),
    ("join", {**SUMMARY, "length": "unlimited", "stake": None},
     "Match 4 started: alice vs bob (backgammon, unlimited)."),
    ("decline", {"declined": "carol"}, "You declined carol's invitation."),
    ("report win", {"match": 2, "by": "alice", "scores": None, "status": "claimed"},
     "You report a win in match 2; your opponent is asked to confirm or dispute it."),
    ("dispute", {"match": 3, "status": "disputed", "by": "alice"},
     "You dispute the reported win in match 3: an admin will decide it. You are free to play "
     "other matches meanwhile."),
    ("abort", {"match": 4, "status": "abort_requested", "by": "alice"},
     "You propose to abort match 4: it ends unrated if your opponent agrees (they type "
     "'abort')."),
    ("abort", {"match": 4, "status": "aborted", "rated": False},
     "Match 4 is aborted; it is not rated."),
    ("event result", {"event": 1, "match": 8, "side_a": "alice", "side_b": "dave",
                      "score_a": 10, "score_b": 0, "rated": False, "unrated": "forfeit"},
     "Recorded in event 1 as match 8: alice 10, dave 0. Not rated (forfeit)."),
    ("event result", {"event": 2, "match": 9, "side_a": "alice", "side_b": "bob",
                      "score_a": 5, "score_b": 3, "rated": True, "changes": [
                          {"ladder": "backgammon", "player": "alice", "before": 1500.0,
                           "after": 1517.2166, "change": 17.2166,
                           "cause": {"match": 9, "event": 2}}]},
     "Recorded in event 2 as match 9: alice 5, bob 3.\n  alice: 1500.00 -> 1517.22 (+17.22)"),
    ("event import", {"event": 1, "imported": 1, "games": [{"match": 8}]},
     "Imported 1 game into event 1 (match 8)."),
    ("seek", {"ladder": "backgammon", "length": 5, "range": 100,
              "since": "2026-12-01T20:58:30.125Z", "replaced": None},
     "Looking for an opponent for a 5-point backgammon match within 100 points of your rating, "
     "wider the longer you wait. The match starts as soon as one is found; 'unseek' stops "
     "looking."),
    ("seek", {"ladder": "backgammon", "length": 1, "range": 40, "since": "2026-12-01T20:58:30Z",
              "replaced": {"ladder": "backgammon", "length": "unlimited"}},
     "Looking for an opponent for a 1-point backgammon match within 40 points of your rating "
     "(instead of an unlimited (unrated) backgammon match), wider the longer you wait. The "
     "match starts as soon as one is found; 'unseek' stops looking."),
    ("unseek", {"ladder": "backgammon", "length": 3}, "No longer looking for a 3-point "
     "backgammon match."),
    ("seeks", {"seeks": []}, "Nobody is looking for a match."),
    ("seeks", {"seeks": [
        {"player": "alice", "ladder": "backgammon", "length": 3, "range": 100,
         "since": "2026-12-01T20:58:30.125Z", "rating": 1517.2166},
        {"player": "bob", "ladder": "backgammon", "length": "unlimited", "range": 50,
         "since": "2026-12-01T20:59:01.000Z", "rating": None}]},
     "Looking for a match:\n"
     "  you, rating 1517.22: a 3-point backgammon match within 100 points, since 20:58:30 UTC\n"
     "  bob: an unlimited (unrated) backgammon match within 50 points, since 20:59:01 UTC"),
    ("disputes", {"disputes": []}, "No disputed matches: nothing waits for a decision."),
    ("disputes", {"disputes": [
        {**SUMMARY, "status": "disputed", "claimant": "bob", "by": "alice", "scores": [3, 1]},
        {**SUMMARY, "match": 6, "length": "unlimited", "status": "disputed", "claimant": "alice",
         "by": "bob", "scores": None}]},
     "Disputed matches, waiting for a decision:\n"
     "  Match 4: alice vs bob (backgammon, 3 points); bob reports a win (3 to 1), alice "
     "disputes it. Type 'adjudicate 4 WINNER' or 'void 4 REASON'.\n"
     "  Match 6: alice vs bob (backgammon, unlimited); alice reports a win, bob disputes it. "
     "Type 'adjudicate 6 WINNER' or 'void 6 REASON'."),
])
def test_replies_read_as_sentences(cmd: str, data: Any, text: str) -> None:
    assert render_reply(ok(cmd, data), LADDERS, ALICE_READS) == text


@pytest.mark.parametrize(("push", "viewer", "text"), [
    ({"event": "invited", "data": {"from": "bob", "ladder": "backgammon", "length": "unlimited",
                                   "expires_at": "2026-12-01T20:58:30Z", "stake": None}},
     ALICE_READS, "** bob invites you to an unlimited (unrated) backgammon match, open until "
                  "20:58:30 UTC. Type 'join bob' or 'decline bob'."),
    ({"event": "invited", "data": {"from": "bob", "ladder": "backgammon", "length": 8,
                                   "expires_at": None, "stake": STAKE}},
     ALICE_READS, "** bob invites you to an 8-point backgammon match. Type 'join bob' or "
                  "'decline bob'.\n" + "\n".join(AT_STAKE)),
    ({"event": "invitation_withdrawn", "data": {"from": "bob", "ladder": "scrabble"}},
     ALICE_READS, "** bob withdrew the invitation to a scrabble match."),
    ({"event": "invitation_expired", "data": {"from": "alice", "to": "bob",
                                              "ladder": "backgammon"}},
     ALICE_READS, "** Your invitation to bob (backgammon) has expired."),
    ({"event": "invitation_expired", "data": {"from": "bob", "to": "alice",
                                              "ladder": "backgammon"}},
     ALICE_READS, "** bob's invitation (backgammon) has expired."),
    ({"event": "invitation_expired", "data": {"from": "bob", "to": "carol",
                                              "ladder": "backgammon"}},
     render.NOBODY, "** bob's invitation to carol (backgammon) has expired."),
    ({"event": "match_started", "data": SUMMARY}, ALICE_READS,
     "** Match 4 started: alice vs bob (backgammon, 3 points).\n" + "\n".join(AT_STAKE)),
    ({"event": "result_disputed", "data": {"match": 3, "status": "disputed", "by": "bob"}},
     ALICE_READS, "** bob disputes your reported win in match 3; an admin will decide it. You "
                  "are free to play other matches meanwhile."),
    ({"event": "result_disputed", "data": {"match": 3, "status": "disputed", "by": "bob"}},
     render.Viewer("root", "admin"), "** bob disputes the reported win in match 3. Decide "
                                     "it: 'adjudicate 3 WINNER' or 'void 3 REASON'."),
    ({"event": "abort_requested", "data": {"match": 4, "status": "abort_requested",
                                           "by": "bob"}},
     ALICE_READS, "** bob proposes to abort match 4 unrated. Type 'abort' to agree."),
    ({"event": "match_aborted", "data": {"match": 4, "status": "aborted", "rated": False}},
     ALICE_READS, "** Match 4 is aborted: your opponent agreed. It is not rated."),
    ({"event": "match_corrected", "data": {"match": 5, "ladder": "backgammon",
                                           "status": "finished", "winner": "bob",
                                           "reason": None, "recomputed": True}},
     ALICE_READS, "** Match 5 (backgammon) was corrected by an admin: bob is the winner."),
    ({"event": "rating_changed", "data": {"ladder": "backgammon", "player": "alice",
                                          "before": 1500.0, "after": 1509.98, "change": 9.98,
                                          "cause": {"match": 1}}},
     ALICE_READS, "** Your backgammon rating: 1500.00 -> 1509.98 (+9.98)."),
    ({"event": "rating_changed", "data": {"ladder": "scrabble", "player": "alice",
                                          "before": 1000, "after": 943, "change": -57,
                                          "cause": {"event": 2}, "played": False}},
     ALICE_READS, "** Your scrabble strength: 1000 -> 943 (-57), moved by normalisation "
                  "(did not play)."),
    ({"event": "rating_changed", "data": {"ladder": "scrabble", "player": "bob",
                                          "before": 900, "after": 950, "change": 50,
                                          "cause": {"event": 2}, "played": True}},
     ALICE_READS, "** bob's scrabble strength: 900 -> 950 (+50), played."),
    ({"event": "disconnected", "data": {"code": 1006, "reason": ""}}, ALICE_READS,
     "** Connection lost."),
    ({"event": "reconnected", "data": {"attempts": 1}}, ALICE_READS, "** Connected again."),
])
def test_pushes_read_as_sentences(push: dict[str, Any], viewer: render.Viewer,
                                  text: str) -> None:
    assert render_push(push, LADDERS, viewer) == text


@pytest.mark.parametrize(("length", "phrase"), [
    (1, "a 1-point"), (3, "a 3-point"), (8, "an 8-point"), (11, "an 11-point"),
    (18, "an 18-point"), (81, "an 81-point"), (100, "a 100-point"), (111, "a 111-point"),
    ("unlimited", "an unlimited (unrated)")])
def test_a_or_an(length: Any, phrase: str) -> None:
    assert render.match_kind(length, "backgammon") == f"{phrase} backgammon match"


def test_help_wraps_to_the_screen() -> None:
    listing = {"commands": [
        {"command": "who", "usage": "who", "who": "anyone", "summary": "Online players."},
        {"command": "event result", "who": "admin",
         "usage": "event result EVENT SIDE_A SIDE_B SCORE_A SCORE_B [LENGTH] [--unrated REASON]",
         "summary": "Record a game; a side is NAME or NAME1+NAME2; REASON is up to 200 "
                    "characters, without control or invisible ones."}]}
    wide = render_reply(ok("help", listing), viewer=render.Viewer(width=200))
    assert wide == render_reply(ok("help", listing))  # what fits is not wrapped
    assert wide.splitlines()[2].endswith("admin   Record a game; a side is NAME or "
                                         "NAME1+NAME2; REASON is up to 200 characters, "
                                         "without control or invisible ones.")
    narrow = render_reply(ok("help", listing), viewer=render.Viewer(width=60)).splitlines()
    assert narrow == [  # the summary keeps 30 columns, the usage has the rest
        "usage                 who     what",
        "who                   anyone  Online players.",
        "event result EVENT    admin   Record a game; a side is NAME",
        "  SIDE_A SIDE_B               or NAME1+NAME2; REASON is up",
        "  SCORE_A SCORE_B             to 200 characters, without",
        "  [LENGTH]                    control or invisible ones.",
        "  [--unrated REASON]",
    ]
    assert max(map(len, narrow)) <= 60
    one = render_reply(ok("help", listing["commands"][1]), viewer=render.Viewer(width=40))
    assert one.splitlines() == [
        "event result EVENT SIDE_A SIDE_B SCORE_A",
        "  SCORE_B [LENGTH] [--unrated REASON]",
        "  Record a game; a side is NAME or",
        "  NAME1+NAME2; REASON is up to 200",
        "  characters, without control or",
        "  invisible ones.",
        "  For: admin"]


def test_a_long_push_wraps_at_spaces_to_the_screen() -> None:
    """A push wider than the terminal is broken between words, its continuation lines
    indented under its text; nothing is lost, and a narrow enough push is left alone."""
    push = {"event": "invited", "data": {
        "from": "bob", "ladder": "backgammon", "length": 5, "expires_at": "2026-12-03T10:00:00Z",
        "players": [{"player": "bob", "rating": 1500.0, "win": 0.5, "if_won": 9.98,
                     "if_lost": -9.98},
                    {"player": "alice", "rating": 1500.0, "win": 0.5, "if_won": 9.98,
                     "if_lost": -9.98}]}}
    wide = render_push(push)
    narrow = render_push(push, viewer=render.Viewer("alice", width=40))
    assert max(len(line) for line in narrow.splitlines()) <= 40 < max(map(len, wide.splitlines()))
    assert narrow.split() == wide.split()  # the same words, in order, none broken
    first, second = narrow.splitlines()[:2]
    assert first.startswith("** ") and second.startswith("   ") and not second.startswith("    ")
    assert render_push(push, viewer=render.Viewer("alice", width=500)) == wide


def test_a_result_or_import_names_who_is_new_on_the_ladder() -> None:
    recorded = {"event": 3, "match": 9, "side_a": "ann", "side_b": "Ane", "score_a": 400,
                "score_b": 380, "rated": True, "new_players": ["Ane"]}
    assert render_reply({"ok": True, "cmd": "event result", "data": recorded}) == (
        "Recorded in event 3 as match 9: ann 400, Ane 380. New on this ladder: Ane (check the "
        "spelling: a misspelt name becomes a new player).")
    imported = {"event": 3, "imported": 2, "games": [{"match": 10}, {"match": 11}],
                "new_players": []}
    assert render_reply({"ok": True, "cmd": "event import", "data": imported}) == (
        "Imported 2 games into event 3 (matches 10 to 11).")
