"""Tab completion's choices, from the server's own command table (its usages)."""

from __future__ import annotations

import pytest

from clients.completion import Names, placeholders
from server.plugins import command_table

COMMANDS = command_table()  # the lobby's own commands and its plugins'


def names() -> Names:
    n = Names(lambda: ["backgammon", "scrabble"], {"quit"})
    n.learn({"commands": [{"command": c.name, "usage": c.usage} for c in COMMANDS.values()]})
    n.players = {"bob", "alice"}
    return n


def test_the_arguments_of_a_usage() -> None:
    assert placeholders("invite", "invite NAME LADDER [LENGTH]") == ["NAME", "LADDER", "LENGTH"]
    assert placeholders("event result", COMMANDS["event result"].usage) == [
        "EVENT", "SIDE_A", "SIDE_B", "SCORE_A", "SCORE_B", "LENGTH"]  # not the flag's REASON
    assert placeholders("ladder", "ladder LADDER [FROM] [COUNT] [--all]") == [
        "LADDER", "FROM", "COUNT"]


@pytest.mark.parametrize(("done", "offered"), [
    ([], None),  # every command's first word and the client's own
    (["invite"], ["alice", "bob"]),
    (["invite", "bob"], ["backgammon", "scrabble"]),
    (["invite", "bob", "backgammon"], ["unlimited"]),
    (["invite", "bob", "backgammon", "3"], []),
    (["stake", "alice"], ["backgammon", "scrabble"]),
    (["ladder"], ["backgammon", "scrabble"]),
    (["ladder", "scrabble", "--all"], []),  # FROM: a number
    (["rating"], ["alice", "bob"]),
    (["history", "bob"], ["backgammon", "scrabble"]),
    (["adjudicate", "7"], ["alice", "bob"]),
    (["events"], ["closed", "open"]),
    (["event"], ["close", "create", "import", "result", "show"]),
    (["EVENT", "create", "Open"], ["backgammon", "scrabble"]),
    (["event", "result", "1"], ["alice", "bob"]),
    (["report"], ["win"]),
    (["report", "win"], []),
    (["help"], None),
    (["help", "event"], ["close", "create", "import", "result", "show"]),
    (["help", "event", "close"], []),
    (["whois", "bob"], []),
    (["frobnicate"], []),
])
def test_what_comes_next(done: list[str], offered: list[str] | None) -> None:
    got = names().offers(done)
    if offered is None:
        assert "invite" in got and "quit" in got and "event" in got and "win" not in got
        assert got == sorted(got)
    else:
        assert got == offered
