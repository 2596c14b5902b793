"""The Python library's typed views of a ladder's shape (``clients/models.py``), on the
descriptions the renderers' tests use: the four ladders as the server describes them and a
system no client knows."""

from __future__ import annotations

from typing import Any

import pytest
from testkit.shapes import LADDERS_REPLY, ZETA_COLUMNS, ZETA_ROWS

from clients.models import Column, History, Ladder, LadderInfo, LadderRow


def test_a_ladders_reply_becomes_ladder_infos() -> None:
    infos = [LadderInfo.from_dict(x) for x in LADDERS_REPLY["ladders"]]
    assert [(i.ladder, i.system, i.system_title, i.live, i.players) for i in infos] == [
        ("backgammon", "fibs", "FIBS", True, 40), ("scrabble", "cas", "ČAS", False, 31),
        ("foosball-doubles", "p4p", "P4P", False, 22), ("go", "zeta", "Zeta", True, 2)]
    go = infos[3]
    assert [c.key for c in go.columns] == ["rating", "elo", "streak", "mood", "seen", "games"]
    assert go.column("elo") == Column("elo", "Elo", "real", 1, "An estimate on the Elo scale.")
    assert go.column("nothing") is None
    assert go.rating_column == Column("rating", "Score", "integer", None, "Whole points.")
    scrabble = infos[1]
    assert scrabble.rating_column.label == "Strength"
    assert scrabble.rating_column.help.startswith("0–1000: the mean of Paluba")
    # an older server's reply: no title, no live flag, no columns
    bare = LadderInfo.from_dict({"ladder": "x", "system": "s", "format": "singles",
                                 "updated": "after each match", "players": 1})
    assert (bare.system_title, bare.live, bare.columns) == ("s", False, ())
    assert bare.rating_column == Column("rating", "Rating", "real")


@pytest.mark.parametrize(("column", "value", "text", "change"), [
    (Column("r", "R", "real", 2), 1523.4107, "1523.41", "+1523.41"),
    (Column("r", "R", "real", 1), 1580.2149, "1580.2", "+1580.2"),
    (Column("r", "R", "real", 0), 2.7, "3", "+3"),
    (Column("r", "R", "real"), -9.984, "-9.98", "-9.98"),  # no decimals named: two
    (Column("i", "I", "integer"), 812, "812", "+812"),
    (Column("i", "I", "integer"), 949.6, "950", "+950"),  # whole, whatever the JSON
    (Column("i", "I", "integer"), -50, "-50", "-50"),
    (Column("b", "B", "boolean"), True, "yes", "True"),
    (Column("b", "B", "boolean"), False, "no", "False"),
    (Column("t", "T", "text"), "Amateur", "Amateur", "Amateur"),
    (Column("d", "D", "date"), "2026-12-01", "2026-12-01", "2026-12-01"),  # unknown type
    (Column("r", "R", "real", 2), None, "-", "new"),
    (Column("i", "I", "integer"), True, "True", "True"),  # a boolean is not a number here
])
def test_a_value_as_its_column_shows_it(column: Column, value: Any, text: str,
                                        change: str) -> None:
    assert column.text(value) == text
    assert column.change_text(value) == change


def test_column_from_dict_keeps_what_it_can_use() -> None:
    assert Column.from_dict({"key": "elo", "label": "Elo", "type": "real", "decimals": 1,
                             "help": "h"}) == Column("elo", "Elo", "real", 1, "h")
    assert Column.from_dict({"key": "x"}) == Column("x", "x", "text", None, "")
    assert Column.from_dict({"key": "x", "label": "X", "type": "real", "decimals": True}
                            ).decimals is None
    assert Column.from_dict({"key": "x", "label": "X", "type": "real", "decimals": "2"}
                            ).places == 2  # not a number: the default


def test_a_ladder_of_an_unknown_system_gives_its_cells() -> None:
    ladder = Ladder.from_dict({"ladder": "go", "system": "zeta", "total": 2,
                               "columns": ZETA_COLUMNS, "players": ZETA_ROWS})
    assert [c.label for c in ladder.columns] == ["Score", "Elo", "Streak", "Mood", "Seen",
                                                 "Played"]
    assert ladder.cells() == [["1613", "1613.0", "yes", "calm", "2026-12-01", "7"],
                              ["1387", "1387.0", "no", "-", "2026-11-02", "7"]]
    alice = ladder.players[0]
    assert (alice.rating, alice.value("elo"), alice.value("streak"), alice.value("games")) == (
        1613, 1612.96, True, 7)
    assert alice.value("absent") is None


def test_a_ladder_without_columns_is_described_by_its_first_row() -> None:
    row = {"rank": 1, "of": 1, "player": "eve", "rating": 1612.004, "games": 3,
           "active": True, "experience": 21, "provisional": False}
    ladder = Ladder.from_dict({"ladder": "backgammon", "system": "fibs", "total": 1,
                               "players": [row]})
    assert [(c.key, c.type) for c in ladder.columns] == [
        ("rating", "real"), ("experience", "integer"), ("provisional", "boolean"),
        ("games", "integer")]
    assert ladder.cells() == [["1612.00", "21", "no", "3"]]
    assert LadderRow.from_dict(row).cells([Column("games", "G", "integer")]) == ["3"]
    assert Ladder.from_dict({"ladder": "x", "system": "s", "total": 0, "players": []}
                            ).columns == ()


def test_history_in_the_ladders_rounding() -> None:
    history = History.from_dict({"player": "alice", "ladder": None, "entries": [
        {"ladder": "go", "at": "2026-12-01T08:00:00Z", "before": None, "after": 1500.4,
         "change": None, "cause": {"event": 3}},
        {"ladder": "go", "at": "2026-12-02T08:00:00Z", "before": 1500.4, "after": 1387.2,
         "change": -113.2, "cause": {"match": 4, "event": 5}}]})
    score = LadderInfo.from_dict(
        next(x for x in LADDERS_REPLY["ladders"] if x["ladder"] == "go")).rating_column
    assert [e.cells(score) for e in history.entries] == [["-", "1500", "new"],
                                                         ["1500", "1387", "-113"]]
    assert [e.cells(Column("rating", "Elo", "real", 1)) for e in history.entries] == [
        ["-", "1500.4", "new"], ["1500.4", "1387.2", "-113.2"]]
    assert history.entries[1].cause == {"match": 4, "event": 5}
