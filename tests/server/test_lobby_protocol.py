"""The protocol over a real connection: both frame forms, the role checks of every command, and
bad frames answered with the right error while the connection stays usable."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from testkit.clients import expect_error, start_match
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer
from websockets.asyncio.client import connect

from clients import LobbyClient
from server.commands import ADMIN, ANYONE, PLAYER, CommandSpec
from server.plugins import command_table

COMMANDS = command_table()  # the lobby's own commands and its plugins'

# ---- plain lines and JSON give the same answers -------------------------------------------

# Refusals decided before any storage is reached (parsing, roles, arguments): the same code on
# either backend, so they run on SQLite; the commands themselves run on both (the first test).
SAME_ON_EVERY_BACKEND = pytest.mark.sqlite_only("decided by the router before any storage")


async def test_plain_lines_and_json_give_the_same_answers(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    await start_match(alice, bob, length=3)
    await bob.call("resign")
    eid = (await admin.call("event create", name="Brno Open", ladder="scrabble"))["id"]
    await admin.call("event import", new=True, event=eid, csv=results_text(
        [f"Brno Open,{today()},alice,bob,400,300,,", f"Brno Open,{today()},carol,alice,350,351,,"]))
    await admin.call("event close", event=eid)

    cases: list[tuple[str, str, dict[str, Any]]] = [
        ("who", "who", {}),
        ("whois alice", "whois", {"name": "alice"}),
        ("WHOIS Carol", "whois", {"name": "carol"}),
        ("rating", "rating", {}),
        ("rating bob", "rating", {"name": "bob"}),
        ("rating alice scrabble", "rating", {"name": "alice", "ladder": "scrabble"}),
        ("rating backgammon", "rating", {"name": "backgammon"}),
        ("ladder backgammon", "ladder", {"ladder": "backgammon"}),
        ("ladder scrabble --all", "ladder", {"ladder": "scrabble", "all": True}),
        ("ladder scrabble 2 1", "ladder", {"ladder": "scrabble", "from": 2, "count": 1}),
        ("history alice", "history", {"name": "alice"}),
        ("history alice backgammon", "history", {"name": "alice", "ladder": "backgammon"}),
        ("streak alice", "streak", {"name": "alice"}),
        ("STREAK Carol", "streak", {"name": "carol"}),
        ("ladders", "ladders", {}),
        ("events", "events", {}),
        ("events closed", "events", {"status": "closed"}),
        (f"event show {eid}", "event show", {"event": eid}),
        (f"  EVENT   SHOW   {eid}  ", "event show", {"event": eid}),
        ("help", "help", {}),
        ("help invite", "help", {"command": "invite"}),
        ('help "event close"', "help", {"command": "event close"}),
        ("help streak", "help", {"command": "streak"}),
    ]
    for line, cmd, args in cases:
        plain = await alice.send_line(line)
        as_json = await alice.request(cmd, args)
        assert plain["ok"] is True and as_json["ok"] is True, (line, plain, as_json)
        assert plain["cmd"] == as_json["cmd"] == cmd
        assert plain["id"] is None
        assert plain["data"] == as_json["data"], line
    # spot checks that the answers are the real ones, not merely equal
    assert (await alice.send_line("rating"))["data"]["player"] == "alice"
    assert [r["ladder"] for r in (await alice.send_line("rating alice scrabble"))["data"]["ratings"]] \
        == ["scrabble"]
    assert (await alice.send_line("ladder scrabble 2 1"))["data"]["players"][0]["rank"] == 2
    assert (await alice.send_line("streak carol"))["data"]["streaks"] == [
        {"ladder": "scrabble", "current": 0, "best": 0}]
    listed = (await alice.send_line("help"))["data"]["commands"]
    assert [c["command"] for c in listed] == list(COMMANDS)
    # and refusals are the same too
    for line, cmd, args in (("whois nobody", "whois", {"name": "nobody"}),
                            ("ladder chess", "ladder", {"ladder": "chess"}),
                            ("event show 99", "event show", {"event": 99})):
        plain, as_json = await alice.send_line(line), await alice.request(cmd, args)
        assert plain["ok"] is False and plain["error"] == as_json["error"]
        assert plain["error"]["code"] == "not_found"


# ---- every command refused to a caller without the right ----------------------------------

SAMPLE: dict[str, Any] = {
    "name": "nobody1",
    "password": "secret-1",
    "text": "who",
    "message": "gl",
    "ladder": "backgammon",
    "count": 1,
    "length": 3,
    "score": 1,
    "id": 1,
    "title": "Spring Open",
    "date": "2026-01-01",
    "side": "pa",
    "csv": results_text(["Spring Open,2026-01-01,pa,pb,3,1,,"]),
    "reason": "typo",
    "status": "open",
}


def _args(spec: CommandSpec) -> dict[str, Any]:
    """Syntactically valid values for every argument of ``spec``."""
    args = {a.name: SAMPLE[a.kind] for a in spec.args}
    if "side_b" in args:
        args["side_b"] = "pb"
    return args


def _line(spec: CommandSpec) -> str:
    return " ".join([spec.name, *(shlex.quote(str(v)) for v in _args(spec).values())])


RESTRICTED = [name for name, spec in COMMANDS.items() if spec.role in (PLAYER, ADMIN)]
ADMIN_ONLY = [name for name, spec in COMMANDS.items() if spec.role == ADMIN]


def test_the_sample_table_covers_every_argument_kind() -> None:
    kinds = {a.kind for s in COMMANDS.values() for a in s.args}
    kinds |= {f.kind for s in COMMANDS.values() for f in s.flags if f.kind}
    assert kinds <= set(SAMPLE), f"add sample values for {kinds - set(SAMPLE)}"
    assert {s.role for s in COMMANDS.values()} == {ANYONE, PLAYER, ADMIN}
    assert len(ADMIN_ONLY) >= 6 and len(RESTRICTED) > len(ADMIN_ONLY)


async def _refused(client: LobbyClient, spec: CommandSpec, code: str) -> None:
    as_json = await client.request(spec.name, _args(spec))
    assert as_json["ok"] is False, as_json
    assert as_json["error"]["code"] == code, as_json
    assert as_json["cmd"] == spec.name
    plain = await client.send_line(_line(spec))
    assert plain["ok"] is False and plain["error"]["code"] == code, (_line(spec), plain)


@SAME_ON_EVERY_BACKEND
@pytest.mark.parametrize("name", RESTRICTED)
async def test_a_guest_must_log_in(lobby: LobbyServer, name: str) -> None:
    guest = await lobby.client()
    await _refused(guest, COMMANDS[name], "not_logged_in")
    assert (await guest.call("who"))["players"] == []  # still usable


@SAME_ON_EVERY_BACKEND
@pytest.mark.parametrize("name", ADMIN_ONLY)
async def test_a_player_is_forbidden_admin_commands(lobby: LobbyServer, name: str) -> None:
    player = await lobby.player("pa")
    await _refused(player, COMMANDS[name], "forbidden")
    # nothing happened on their behalf
    assert (await player.call("events"))["events"] == []
    # while the admin passes the role check with the very same arguments
    admin = await lobby.admin()
    reply = await admin.request(name, _args(COMMANDS[name]))
    if not reply["ok"]:
        assert reply["error"]["code"] not in ("forbidden", "not_logged_in", "internal"), reply


@pytest.mark.parametrize("name", [n for n, s in COMMANDS.items() if s.role == ANYONE])
async def test_anyone_commands_need_no_login(lobby: LobbyServer, name: str) -> None:
    guest = await lobby.client()
    reply = await guest.request(name, _args(COMMANDS[name]))
    if not reply["ok"]:
        assert reply["error"]["code"] not in ("not_logged_in", "internal"), reply


# ---- bad frames ---------------------------------------------------------------------------


async def _usable(client: LobbyClient) -> None:
    assert (await client.call("ladders"))["ladders"][0]["ladder"] == "backgammon"


async def _bad_line(client: LobbyClient, frame: str, code: str) -> dict[str, Any]:
    reply = await client.send_line(frame)
    assert reply["ok"] is False, (frame, reply)
    assert reply["error"]["code"] == code, (frame, reply)
    assert reply["error"]["message"]
    await _usable(client)
    return reply


@SAME_ON_EVERY_BACKEND
async def test_malformed_and_unknown_frames(lobby: LobbyServer) -> None:
    c = await lobby.client()
    for frame in ('{"cmd": "who"', "{}", '{"cmd": ""}', "[1, 2]", '{"cmd": "who", "extra": 1}',
                  '{"cmd": "whois", "args": [1]}', '{"cmd": 5}',
                  '{"cmd": "ladder", "args": {"ladder": "backgammon", "from": NaN}}',
                  '{"cmd": "who", "id": true}', '{"cmd": "who", "id": 1e400}',
                  "", "   ", 'event create "Brno', "who\x00"):
        await _bad_line(c, frame, "bad_request")
    for frame in ("frobnicate", "event", "event frobnicate 1", '{"cmd": "frobnicate"}',
                  "x" * 300):
        reply = await _bad_line(c, frame, "unknown_command")
        assert len(reply["error"]["message"]) < 200
    # the id of a JSON request is echoed even when the request is refused
    reply = await c.request("frobnicate", request_id="echo-me-7")
    assert reply["ok"] is False and reply["error"]["code"] == "unknown_command"
    assert reply["id"] == "echo-me-7"
    reply = await c.request("whois", {"name": "alice", "extra": 1})
    assert reply["error"]["code"] == "bad_request" and reply["cmd"] == "whois"
    await _usable(c)


@SAME_ON_EVERY_BACKEND
async def test_missing_and_invalid_arguments(lobby: LobbyServer) -> None:
    c = await lobby.player("alice")
    for frame in ("whois", "who extra", "invite bob", "event result 1 ann", "whois bad!name",
                  "whois " + "a" * 21, "register x+y secret", "confirm abc", "confirm 0",
                  "confirm -1", "ladder backgammon -1", "ladder back/gammon", "events soon",
                  "invite bob backgammon 0", "invite bob backgammon five",
                  "event create Open scrabble 2026-13-01", "ladder backgammon --al",
                  "help " + "x" * 201):
        await _bad_line(c, frame, "bad_request")
    for cmd, args in (("whois", {}), ("whois", {"name": 5}), ("whois", {"name": "a b"}),
                      ("ladder", {"ladder": "backgammon", "all": "yes"}),
                      ("ladder", {"ladder": "backgammon", "count": 1.5}),
                      ("ladder", {"ladder": "backgammon", "count": True}),
                      ("register", {"name": "bob", "password": ""})):
        reply = await c.request(cmd, args)
        assert reply["ok"] is False and reply["error"]["code"] == "bad_request", (cmd, args, reply)
        await _usable(c)


@SAME_ON_EVERY_BACKEND
async def test_impossible_scores_are_refused(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    mid = await start_match(alice, bob, length=5)
    for frame in ("report win 3 5", "report win 4 2", "report win 5 -1", "report win 6 5",
                  "report win 5 5", "report win 5"):
        await _bad_line(alice, frame, "bad_request")
    await expect_error(alice.call("report win", score_a=-5, score_b=1), "bad_request")
    # still playing, and a possible score is taken
    assert (await alice.send_line("report win 5 4"))["data"]["status"] == "claimed"
    assert (await bob.call("confirm", match=mid))["winner"] == "alice"

    singles = (await admin.call("event create", name="Day", ladder="foosball-singles"))["id"]
    doubles = (await admin.call("event create", name="Night", ladder="foosball-doubles"))["id"]
    for frame in (f"event result {singles} ann ben 5 5",  # a draw in P4P
                  f"event result {singles} ann ann 5 3",  # a player on both sides
                  f"event result {singles} ann ben -3 1",
                  f"event result {singles} ann+cid ben 5 3",  # doubles side on a singles ladder
                  f"event result {doubles} ann+ben ben+cid 5 3",
                  f"event result {doubles} ann+ann ben+cid 5 3",
                  f"event result {doubles} ann+ben+cid dot+eve 5 3",
                  f"event result {singles} ann ben 5 3 --unrated"):
        await _bad_line(admin, frame, "bad_request")
    bad_rows = [f"Day,{today()},ann,ben,5,3,,", f"Day,{today()},cid,dot,4,4,,"]
    reply = await admin.request("event import", {"event": singles, "csv": results_text(bad_rows)})
    assert reply["error"]["code"] == "bad_request" and "CSV:3" in reply["error"]["message"]
    reply = await admin.request("event import", {"event": singles, "csv": "event,date\nDay,x\n"})
    assert reply["error"]["code"] == "bad_request"
    reply = await admin.request("event import", {"event": singles, "csv": results_text(
        [f"Other,{today()},ann,ben,5,3,,"])})
    assert reply["error"]["code"] == "bad_request"
    await expect_error(admin.call("event result", new=True, event=999, side_a="ann", side_b="ben",
                                  score_a=1, score_b=0), "not_found")
    # nothing of it was recorded, and the good result still goes in
    assert (await admin.call("event show", event=singles))["games"] == []
    ok = await admin.send_line(f"event result {singles} ann ben 5 3 --unrated forfeit --new")
    assert ok["data"]["rated"] is False and ok["data"]["unrated"] == "forfeit"


@SAME_ON_EVERY_BACKEND
async def test_binary_frames_are_refused_and_the_connection_stays(lobby: LobbyServer) -> None:
    async with connect(lobby.url) as ws:
        assert json.loads(await ws.recv())["event"] == "hello"
        for frame in (b"who", b"\xff\x00\x01"):
            await ws.send(frame)
            reply = json.loads(await ws.recv())
            assert reply["ok"] is False and reply["error"]["code"] == "bad_request"
            assert "Binary" in reply["error"]["message"]
            await ws.send(json.dumps({"id": 3, "cmd": "ladders"}))
            good = json.loads(await ws.recv())
            assert good["ok"] is True and good["id"] == 3


@SAME_ON_EVERY_BACKEND
async def test_an_oversized_frame_closes_the_connection_with_1009(lobby: LobbyServer) -> None:
    c = await lobby.client()
    # at the limit: answered normally (here: HELP's argument is too long)
    at_limit = "help " + "x" * (64 * 1024 - 5)
    assert len(at_limit.encode()) == 64 * 1024
    await _bad_line(c, at_limit, "bad_request")
    # over it: too_large, then the connection is closed with 1009; a new connection works
    ascii_frame = "help " + "x" * (64 * 1024)
    wide_frame = json.dumps({"cmd": "help", "args": {"command": "é" * 40_000}}, ensure_ascii=False)
    assert len(wide_frame) < 64 * 1024 < len(wide_frame.encode())  # over the limit in bytes only
    for frame in (ascii_frame, wide_frame):
        reply = await c.send_line(frame)
        assert reply["ok"] is False and reply["error"]["code"] == "too_large"
        gone = await c.next_push("disconnected")
        assert gone["data"]["code"] == 1009
        assert not c.connected
        c = await lobby.client()
        await _usable(c)
    assert (await c.call("who"))["spectators"] == 1  # the closed ones are gone
