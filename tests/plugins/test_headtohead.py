"""The head-to-head plugin (tests/plugins/headtohead), an outside command plugin, in a real lobby.

Written as an outside author would, from docs/PLUGINS.md: its own package, found
by its entry point, importing only ``server.api``, on ``PluginBase`` with only
its command defined. Each test runs a real server on a free port over a real
SQLite file and asks ``h2h`` what the matches and events made of two players' record.
"""

from __future__ import annotations

import ast
from pathlib import Path

from testkit.clients import expect_error, start_match
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from server.api import PluginBase
from server.api.registry import plugin_factories

PLUGIN = Path(__file__).resolve().parent / "headtohead"


async def beat(winner: LobbyClient, loser: LobbyClient, length: int | str = 1) -> None:
    await start_match(winner, loser, length=length)
    await loser.resign()


def test_it_is_found_by_its_entry_point_and_defines_only_its_command() -> None:
    made = plugin_factories()["headtohead"](None)  # type: ignore[arg-type]  # it reads no setup
    assert isinstance(made, PluginBase)
    own = {k for k, v in vars(type(made)).items() if callable(v) and not k.startswith("_")}
    assert own == {"commands", "h2h"}, own
    source = Path(__import__(type(made).__module__, fromlist=["_"]).__file__ or "")
    assert source.is_relative_to(PLUGIN), source
    imported: set[str] = set()
    for path in (PLUGIN / "matchlobby_headtohead").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
    assert {m for m in imported if m.split(".")[0] in ("server", "ratings_plugin", "clients")} \
        == {"server.api"}


async def test_h2h_counts_each_players_wins_against_the_other_by_ladder(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    admin = await lobby.admin()
    guest = await lobby.client()
    assert await guest.call("h2h", a="alice", b="bob") == {
        "players": ["alice", "bob"], "total": {"alice": 0, "bob": 0}, "ladders": []}
    await beat(alice, bob)
    await beat(alice, bob, length=3)
    await beat(bob, alice)
    await beat(alice, carol)  # not between them
    await beat(bob, alice, length="unlimited")  # unrated: not counted
    eid = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
    await admin.call("event import", new=True, event=eid, csv=results_text([
        f"Open,{today()},bob,alice,400,300,,",
        f"Open,{today()},alice,bob,350,350,,",
        f"Open,{today()},carol,bob,300,200,,",
        f"Open,{today()},alice,bob,500,100,,no:forfeit",  # unrated: not counted
    ]))
    await admin.call("event close", event=eid)
    data = await guest.call("h2h", a="BOB", b="Alice")
    assert data == {"players": ["bob", "alice"], "total": {"bob": 2, "alice": 2}, "ladders": [
        {"ladder": "backgammon", "wins": {"bob": 1, "alice": 2}, "draws": 0, "last": today()},
        {"ladder": "scrabble", "wins": {"bob": 1, "alice": 0}, "draws": 1, "last": today()},
    ]}
    # the plain line gives the same answer
    line = await guest.send_line("h2h bob alice")
    assert line["ok"] and line["data"] == data


async def test_h2h_refuses_what_it_cannot_answer(lobby: LobbyServer) -> None:
    guest = await lobby.client()
    await lobby.players("alice")
    await expect_error(guest.call("h2h", a="alice", b="nobody"), "not_found")
    await expect_error(guest.call("h2h", a="alice", b="ALICE"), "bad_request")
    await expect_error(guest.call("h2h", a="alice"), "bad_request")
    assert (await guest.send_line("h2h alice"))["error"]["code"] == "bad_request"
    listed = {c["command"]: c for c in (await guest.call("help"))["commands"]}
    assert listed["h2h"] == {"command": "h2h", "usage": "h2h A B", "who": "anyone",
                             "summary": "Two players' wins against each other on each ladder."}
