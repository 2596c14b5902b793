"""The parser, the command table and the router's table check, without a socket.

``server/protocol.py`` turns a frame into a :class:`Request` of a :class:`CommandTable`
(or a :class:`ProtocolError`) with no I/O, and the router refuses to be built over a table
whose commands and handlers differ: both are tested here directly, on small tables made for
the test and on the lobby's own. What the same refusals look like on the wire is in
test_lobby_protocol.py.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from server.api import PluginCommand
from server.commands import ADMIN, ANYONE, COMMANDS, PLAYER, Arg, CommandSpec, CommandTable, Flag
from server.config import Config
from server.handlers import HANDLERS
from server.lobby.lobby import Lobby
from server.lobby.router import Router
from server.plugins import command_table, load_plugins
from server.protocol import (
    NOT_AN_OBJECT,
    ProtocolError,
    Request,
    bind,
    help_text,
    parse_frame,
    parse_json,
    parse_line,
)
from server.store import Database

LOBBY = command_table()  # the lobby's own commands and its plugins'

SMALL = CommandTable([
    CommandSpec("greet", ANYONE, "Say hello.", (Arg("name", "name"), Arg("times", "count", True))),
    CommandSpec("game start", PLAYER, "Start a game.", (Arg("ladder", "ladder"),
                                                       Arg("length", "length", True))),
    CommandSpec("game stop", ADMIN, "Stop a game.", (Arg("game", "id"), Arg("reason", "reason")),
                flags=(Flag("quiet"), Flag("note", "text"))),
    CommandSpec("pair", ADMIN, "A side against a side.", (Arg("a", "side"), Arg("b", "side"),
                                                          Arg("on", "date", True))),
])


def refused(code: str, parse: Any, *args: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        parse(*args)
    e = caught.value
    assert e.code == code, (args, e.code, e.message)
    assert e.message.strip(), "a refusal explains itself"
    return e


# ---- CommandTable ------------------------------------------------------------------------


def test_a_table_keeps_help_order_and_knows_its_groups() -> None:
    assert list(SMALL) == ["greet", "game start", "game stop", "pair"]
    assert len(SMALL) == 4 and SMALL["pair"].role == ADMIN
    assert "game" not in SMALL and SMALL.get("game") is None
    assert SMALL.groups == frozenset({"game"})
    assert SMALL.subcommands("game") == ["start", "stop"]
    assert LOBBY.groups == frozenset({"event", "player", "ready", "report"})
    assert LOBBY.subcommands("event") == ["close", "create", "import", "result", "show"]
    assert list(LOBBY)[:len(COMMANDS)] == list(COMMANDS)  # the lobby's own first, then plugins'


@pytest.mark.parametrize("names", [["greet", "greet"], ["Greet"], ["game  start"], [" greet"],
                                   ["game Start"]])
def test_a_table_refuses_twin_or_ill_formed_names(names: list[str]) -> None:
    with pytest.raises(ValueError, match=r"two commands|lower case words"):
        CommandTable(CommandSpec(n, ANYONE, "x") for n in names)


def test_a_spec_refuses_an_unknown_role_or_argument_kind() -> None:
    with pytest.raises(ValueError, match="role"):
        CommandSpec("x", "owner", "x")
    with pytest.raises(ValueError, match="argument kind"):
        CommandSpec("x", ANYONE, "x", (Arg("a", "colour"),))


def test_usage_is_made_from_the_row() -> None:
    assert SMALL["greet"].usage == "greet NAME [TIMES]"
    assert SMALL["game stop"].usage == "game stop GAME REASON [--quiet] [--note TEXT]"


# ---- bind --------------------------------------------------------------------------------


def test_bind_takes_positional_then_named_and_converts() -> None:
    greet = SMALL["greet"]
    assert bind(greet, ["alice"], {}) == {"name": "alice"}
    assert bind(greet, ["alice", "3"], {}) == {"name": "alice", "times": 3}
    assert bind(greet, [], {"name": "alice", "times": 3.0}) == {"name": "alice", "times": 3}
    assert bind(greet, ["alice"], {"times": None}) == {"name": "alice"}  # null: left out
    # a named value wins over the positional one in the same place
    assert bind(greet, ["bob"], {"name": "alice"}) == {"name": "alice"}
    stop = SMALL["game stop"]
    assert bind(stop, ["7", "typo"], {}) == {"game": 7, "reason": "typo", "quiet": False}
    assert bind(stop, [], {"game": 7, "reason": "typo", "quiet": True, "note": "later"}) == {
        "game": 7, "reason": "typo", "quiet": True, "note": "later"}


@pytest.mark.parametrize(("positional", "named", "says"), [
    (["alice", "1", "2"], {}, "Too many arguments. Usage: greet NAME [TIMES]"),
    ([], {}, "Missing NAME. Usage: greet NAME [TIMES]"),
    ([], {"name": None}, "Missing NAME."),
    (["alice"], {"colour": "red"}, "Unknown argument 'colour'. Usage: greet NAME [TIMES]"),
    (["bad name"], {}, "not a valid name"),
    (["a" * 21], {}, "not a valid name"),
    ([5], {}, "NAME must be text."),
    (["alice", "-1"], {}, "TIMES cannot be negative"),
    (["alice", "100001"], {}, "TIMES must be at most 100000."),
    (["alice", "1" * 17], {}, "TIMES is too large."),
    (["alice", True], {}, "TIMES must be a whole number."),
    (["alice", 1.5], {}, "TIMES must be a whole number."),
    (["alice", float("nan")], {}, "TIMES must be a whole number."),
    (["alice", "٣"], {}, "TIMES must be a whole number"),  # a digit, but not an ASCII one
])
def test_bind_refuses_with_the_usage(positional: list[Any], named: dict[str, Any], says: str
                                     ) -> None:
    e = refused("bad_request", bind, SMALL["greet"], positional, named)
    assert says in e.message


def test_bind_converts_every_kind() -> None:
    start, stop, pair = SMALL["game start"], SMALL["game stop"], SMALL["pair"]
    assert bind(start, ["chess", " Unlimited "], {})["length"] == "unlimited"
    assert bind(start, ["chess", "1000"], {})["length"] == 1000
    for length in ("0", "1001", "five"):
        refused("bad_request", bind, start, ["chess", length], {})
    refused("bad_request", bind, start, ["back/gammon"], {})
    assert bind(pair, ["ann+bob", "cid"], {"on": "2026-03-14"}) == {
        "a": ("ann", "bob"), "b": ("cid",), "on": "2026-03-14"}
    for a in ("ann+Ann", "ann+bob+cid", "ann+"):
        refused("bad_request", bind, pair, [a, "cid"], {})
    for on in ("2026-13-01", "2026-3-14", "14.03.2026", 20260314):
        refused("bad_request", bind, pair, ["ann", "cid"], {"on": on})
    for game in ("0", str(2**53 + 1)):
        refused("bad_request", bind, stop, [game, "typo"], {})
    assert bind(stop, [str(2**53), "typo"], {})["game"] == 2**53
    refused("bad_request", bind, stop, ["1", "a\x07b"], {})  # a control character in free text
    refused("bad_request", bind, stop, ["1", "x" * 201], {})
    e = refused("bad_request", bind, stop, ["1", "typo"], {"quiet": "yes"})
    assert e.message == "--quiet is a flag: true or false."


# ---- parse_line --------------------------------------------------------------------------


def test_a_line_names_a_command_in_any_case_with_its_group() -> None:
    request = parse_line("GAME Start chess 3", SMALL)
    assert request == Request(SMALL["game start"], {"ladder": "chess", "length": 3})
    assert request.cmd == "game start" and request.id is None
    assert parse_line('greet "alice"', SMALL).args == {"name": "alice"}
    stop = parse_line("game stop 7 'no show' --note 'see log' --quiet", SMALL)
    assert stop.args == {"game": 7, "reason": "no show", "quiet": True, "note": "see log"}


@pytest.mark.parametrize(("line", "code", "cmd", "says"), [
    ("", "bad_request", None, "Empty command; try 'help'."),
    ("greet 'alice", "bad_request", None, "Cannot split the command line"),
    ("wave", "unknown_command", "wave", "Unknown command 'wave'; try 'help'."),
    ("w" * 60, "unknown_command", "w" * 40 + "…", "Unknown command"),
    ("game", "unknown_command", "game", "'game' needs a sub-command: start, stop."),
    ("game pause 1", "unknown_command", "game", "'game' needs a sub-command: start, stop."),
    ("game stop 7 typo --loud", "bad_request", "game stop", "Unknown option '--loud'."),
    ("game stop 7 typo --note", "bad_request", "game stop", "--note needs a value."),
    ("greet alice 1 2", "bad_request", "greet", "Too many arguments."),
    ("greet bad!name", "bad_request", "greet", "not a valid name"),
])
def test_a_bad_line_is_refused_naming_the_command(line: str, code: str, cmd: str | None,
                                                  says: str) -> None:
    e = refused(code, parse_line, line, SMALL)
    assert says in e.message
    assert e.cmd == cmd and e.id is None


# ---- parse_json --------------------------------------------------------------------------


def test_a_json_frame_carries_its_id_and_named_arguments() -> None:
    request = parse_json('{"id": 7, "cmd": " Game   START ", "args": {"ladder": "chess"}}',
                         SMALL)
    assert request == Request(SMALL["game start"], {"ladder": "chess"}, 7)
    assert parse_json('{"cmd": "greet", "args": {"name": "al"}, "id": "x-1"}', SMALL).id == "x-1"
    assert parse_json('{"cmd": "pair", "args": null, "id": null}',
                      CommandTable([CommandSpec("pair", ANYONE, "x")])).args == {}


@pytest.mark.parametrize(("frame", "code", "id", "cmd", "says"), [
    ('{"cmd": "greet"', "bad_request", None, None, "Malformed JSON"),
    ('{"cmd": "greet", "args": {"times": NaN}}', "bad_request", None, None, "Malformed JSON"),
    ("[" * 100_000 + "]" * 100_000, "bad_request", None, None, "Malformed JSON"),
    ('"greet"', "bad_request", None, None, NOT_AN_OBJECT),
    ("[1, 2]", "bad_request", None, None, NOT_AN_OBJECT),
    ('{"id": 3, "cmd": "greet", "extra": 1}', "bad_request", 3, None, "Unknown field(s) ['extra']"),
    ('{"id": 3}', "bad_request", 3, None, "'cmd' must be a command name"),
    ('{"id": 3, "cmd": "  "}', "bad_request", 3, None, "'cmd' must be a command name"),
    ('{"id": 3, "cmd": 5}', "bad_request", 3, None, "'cmd' must be a command name"),
    ('{"id": 3, "cmd": "wave"}', "unknown_command", 3, "wave", "Unknown command 'wave'"),
    ('{"id": 3, "cmd": "game"}', "unknown_command", 3, "game", "needs a sub-command"),
    ('{"id": 3, "cmd": "greet", "args": [1]}', "bad_request", 3, "greet", "'args' must be"),
    ('{"id": 3, "cmd": "greet", "args": {"times": 1}}', "bad_request", 3, "greet",
     "Missing NAME."),
    ('{"id": "k", "cmd": "greet", "args": {"name": "\\ud800"}}', "bad_request", "k", None,
     "valid Unicode"),
    ('{"id": true, "cmd": "greet"}', "bad_request", None, None, "id must be"),
    ('{"id": 1e400, "cmd": "greet"}', "bad_request", None, None, "id must be"),
    ('{"id": 9007199254740993, "cmd": "greet"}', "bad_request", None, None, "id must be"),
    ('{"id": "' + "i" * 65 + '", "cmd": "greet"}', "bad_request", None, None, "id must be"),
    ('{"id": "\\udc00", "cmd": "greet"}', "bad_request", None, None, "id must be"),
])
def test_a_bad_json_frame_is_refused_echoing_what_it_could_read(
        frame: str, code: str, id: Any, cmd: str | None, says: str) -> None:
    e = refused(code, parse_json, frame, SMALL)
    assert says in e.message
    assert (e.id, e.cmd) == (id, cmd)


# ---- parse_frame -------------------------------------------------------------------------


def test_a_frame_is_json_or_a_line_by_its_first_character() -> None:
    as_json = parse_frame('  {"cmd": "greet", "args": {"name": "al"}}', SMALL)
    as_line = parse_frame("  greet al \n", SMALL)
    assert as_json == as_line == Request(SMALL["greet"], {"name": "al"})
    # the same refusal for a JSON array as parse_json gives
    assert refused("bad_request", parse_frame, " [1]", SMALL).message == NOT_AN_OBJECT


@pytest.mark.parametrize("frame", ['"greet al"', "7", " -1.5 ", "true", "null", '"\\u00e9"'])
def test_a_frame_that_is_one_json_value_is_refused_as_json(frame: str) -> None:
    assert refused("bad_request", parse_frame, frame, SMALL).message == NOT_AN_OBJECT


@pytest.mark.parametrize(("frame", "expected"), [
    ('"greet" al', Request(SMALL["greet"], {"name": "al"})),  # quoted words, not a JSON value
    ("greet null", Request(SMALL["greet"], {"name": "null"})),
])
def test_a_line_that_only_starts_like_json_is_a_line(frame: str, expected: Request) -> None:
    assert parse_frame(frame, SMALL) == expected


def test_a_nul_in_a_line_is_refused() -> None:
    assert "NUL" in refused("bad_request", parse_frame, "greet al\x00", SMALL).message
    assert parse_frame('{"cmd": "greet", "args": {"name": "al"}}', SMALL).args == {"name": "al"}


SAMPLE = {"name": "alice", "side": "ann+bob", "ladder": "chess", "password": "secret12",
          "id": "3", "count": "2", "score": "5", "length": "3", "date": "2026-03-14",
          "status": "open", "csv": "event,date\nCup,2026-03-14", "title": "Brno Open",
          "reason": "no show", "text": "help",
          "message": "gl"}  # a line's message is the rest of the line as typed: one plain word


@pytest.mark.parametrize("name", list(LOBBY))
def test_every_command_of_the_lobby_reads_the_same_as_a_line_and_as_json(name: str) -> None:
    spec = LOBBY[name]
    values = {a.name: SAMPLE[a.kind] for a in spec.args}
    line = parse_frame(" ".join([name.upper(), *map(shlex.quote, values.values())]), LOBBY)
    as_json = parse_frame(json.dumps({"id": 1, "cmd": name, "args": values}), LOBBY)
    assert line.spec is as_json.spec is spec
    assert line.args == as_json.args == bind(spec, list(values.values()), {})
    assert set(line.args) == {a.name for a in spec.args} | {f.name for f in spec.flags
                                                            if f.kind is None}


# ---- help_text ---------------------------------------------------------------------------


def test_help_lists_every_command_in_order_or_explains_one() -> None:
    listed = help_text(SMALL)["commands"]
    assert [c["command"] for c in listed] == list(SMALL)
    assert listed[2] == {"command": "game stop", "usage": SMALL["game stop"].usage,
                         "who": ADMIN, "summary": "Stop a game."}
    assert help_text(SMALL, "  GAME   start ") == {
        "command": "game start", "usage": "game start LADDER [LENGTH]", "who": PLAYER,
        "summary": "Start a game."}
    assert [c["command"] for c in help_text(LOBBY)["commands"]] == list(LOBBY)
    assert help_text(LOBBY, "rating")["command"] == "rating"  # a plugin's command too
    # a group's first word lists its commands (help report: report win)
    assert help_text(SMALL, "Game") == {"commands": listed[1:3]}
    assert [c["command"] for c in help_text(LOBBY, "report")["commands"]] == ["report win"]
    assert [c["command"] for c in help_text(LOBBY, "event")["commands"]] == [
        c for c in LOBBY if c.startswith("event ")]
    refused("unknown_command", help_text, SMALL, "wave")


def test_help_of_a_multi_word_command_needs_no_quotes() -> None:
    for line in ("help report win", "help event close", "HELP Event   Close", "help 'report win'"):
        request = parse_line(line, LOBBY)
        assert request.cmd == "help"
        name = help_text(LOBBY, request.args["command"])["command"]
        assert name == " ".join(line.lower().split()[1:]).strip("'"), line
    # the last argument takes the rest only when it is free text
    e = refused("bad_request", parse_line, "whois alice bob", LOBBY)
    assert "Usage: whois NAME" in e.message


# ---- the router's table check ------------------------------------------------------------


def router(tmp_path: Path, handlers: dict[str, Any], plugins: bool = True) -> Router:
    """A router over a lobby that is built but never opened: no socket, no connection."""
    config = Config(database=str(tmp_path / "lobby.db"))
    lobby = Lobby(config, Database(config.database), load_plugins(config) if plugins else ())
    return Router(lobby, handlers)


def test_the_router_table_is_the_lobby_commands_and_its_plugins(tmp_path: Path) -> None:
    r = router(tmp_path, HANDLERS)
    assert list(r.table) == list(LOBBY)
    assert r.lobby.commands is r.table
    assert set(r.added) == set(LOBBY) - set(COMMANDS)  # the plugins' commands
    assert not (tmp_path / "lobby.db").exists()


def test_the_router_refuses_a_command_without_a_handler(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"commands without a handler: \['who'\]; "
                                         r"handlers without a command: \[\]; handled twice: \[\]"):
        router(tmp_path, {k: v for k, v in HANDLERS.items() if k != "who"})


def test_the_router_refuses_a_handler_without_a_command(tmp_path: Path) -> None:
    async def dance(call: Any) -> None:
        return None

    with pytest.raises(ValueError, match=r"handlers without a command: \['dance'\]"):
        router(tmp_path, {**HANDLERS, "dance": dance})


def test_the_router_refuses_a_command_handled_twice(tmp_path: Path) -> None:
    plugin_command: PluginCommand = next(c for p in load_plugins(Config()) for c in p.commands())
    name = plugin_command.spec.name
    with pytest.raises(ValueError, match=rf"handled twice: \['{name}'\]"):
        router(tmp_path, {**HANDLERS, name: HANDLERS["who"]})
    # without the plugins loaded, the lobby's own handlers are the whole table
    assert set(router(tmp_path, HANDLERS, plugins=False).table) == set(COMMANDS)


def test_a_flag_s_value_is_named_as_its_help_names_it() -> None:
    """``seek``'s ``--range`` takes a count, which the usage line and a refusal call POINTS."""
    spec = COMMANDS["seek"]
    assert spec.usage == "seek LADDER [LENGTH] [--range POINTS]"
    with pytest.raises(ProtocolError) as refused:
        bind(spec, ["backgammon"], {"range": "lots"})
    assert refused.value.code == "bad_request" and "POINTS" in refused.value.message
