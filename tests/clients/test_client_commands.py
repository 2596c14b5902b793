"""Every command of the command table makes a round trip through :class:`LobbyClient`.

The cases are generated from the lobby's command table (``server.plugins.command_table``): a
command added to the table without a case here fails ``test_round_trip[that command]``. Each case
asserts what the command really did (pushes to the others, what ``whois``,
``rating``, ``ladder`` and ``history`` say afterwards), not only that it was
answered, and the refusals it can meet.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest
from testkit.cli import rate_file
from testkit.clients import (
    check_ladder_update,
    expect_error,
    settle,
    start_match,
    told_presence,
    until_offline,
)
from testkit.constants import ADMIN, PASSWORD
from testkit.fibs import FibsModel, check_changes, close
from testkit.outside import outside_commands, well_formed
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer
from testkit.shapes import LADDERS_REPLY

from clients.models import Ladder, LadderInfo, LadderUpdated, MatchFinished, Ratings, Whois
from server.plugins import command_table

DROP_TIMEOUT = 0.4  # the claim case's: short, so that a claim can be tested without a long wait
COMMANDS = command_table()  # the lobby's own commands and its plugins'
OUTSIDE = outside_commands()  # those of installed plugins the project does not ship

Case = Callable[[LobbyServer, Path], Awaitable[None]]
CASES: dict[str, Case] = {}


def case(command: str) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        assert command not in CASES, command
        CASES[command] = fn
        return fn
    return register


@pytest.mark.parametrize("command", list(COMMANDS))
async def test_round_trip(command: str, lobby: LobbyServer, tmp_path: Path) -> None:
    run = CASES.get(command) or (outside_case(command) if command in OUTSIDE else None)
    assert run is not None, f"no round-trip case for {command!r}: add one to CASES"
    await run(lobby, tmp_path)
    answered = [r for c in lobby.clients for r in c.replies if r["cmd"] == command]
    assert any(r["ok"] for r in answered), f"the case for {command!r} never had it accepted"


def outside_case(command: str) -> Case:
    """An outside plugin's command without a case of its own: run with well-formed arguments
    (two players and the match between them) by a caller its role admits."""
    spec = OUTSIDE[command]

    async def run(lobby: LobbyServer, tmp: Path) -> None:
        alice, bob = await lobby.player("alice"), await lobby.player("bob")
        match = await start_match(alice, bob)
        await bob.resign()
        caller = await lobby.admin() if spec.role == "admin" else alice
        await caller.call(command, **well_formed(spec, ("alice", "bob"), match))

    return run


def test_every_case_is_a_command() -> None:
    assert set(CASES) <= set(COMMANDS), set(CASES) - set(COMMANDS)


# ---- account ----------------------------------------------------------------------------


@case("help")
async def _help(lobby: LobbyServer, tmp: Path) -> None:
    c = await lobby.client()
    listing = await c.call("help")
    assert [x["command"] for x in listing["commands"]] == list(COMMANDS)
    for row in listing["commands"]:
        spec = COMMANDS[row["command"]]
        assert row == {"command": spec.name, "usage": spec.usage, "who": spec.role,
                       "summary": spec.summary}
    one = await c.call("help", command="event result")
    assert one["usage"] == ("event result EVENT SIDE_A SIDE_B SCORE_A SCORE_B [LENGTH] "
                            "[--unrated REASON] [--new]")
    assert one["who"] == "admin"
    assert (await c.send_line("help invite"))["data"]["usage"] == "invite NAME LADDER [LENGTH]"
    await expect_error(c.call("help", command="frobnicate"), "unknown_command")


@case("register")
async def _register(lobby: LobbyServer, tmp: Path) -> None:
    watcher = await lobby.client()
    await watcher.call("who")  # asks to hear who comes and goes
    alice = await lobby.client()
    registered = await alice.register("alice", PASSWORD)
    assert set(registered) == {"player", "role", "session"}
    assert (registered["player"], registered["role"]) == ("alice", "player")
    assert alice.credentials == ("alice", PASSWORD)
    await told_presence(watcher, {"alice": "ready"})
    profile = await watcher.whois("alice")
    assert isinstance(profile, Whois)
    assert (profile.player, profile.online, profile.status, profile.role) == (
        "alice", True, "ready", "player")
    assert profile.ratings == []
    assert profile.matches == {"played": 0, "dropped": 0, "disputed": 0}
    assert profile.last_login is not None and profile.last_login.startswith(today())
    other = await lobby.client()
    await expect_error(other.register("ALICE", PASSWORD), "conflict")  # unique ignoring case
    await expect_error(other.register("bob", "abc"), "bad_request")  # password too short
    await expect_error(other.register("no spaces", PASSWORD), "bad_request")
    await expect_error(other.register("x" * 21, PASSWORD), "bad_request")
    await expect_error(alice.register("alice2", PASSWORD), "conflict")  # log out first
    assert other.credentials is None
    await expect_error(watcher.whois("bob"), "not_found")


@case("login")
async def _login(lobby: LobbyServer, tmp: Path) -> None:
    first = await lobby.player("alice")
    await first.close()
    watcher = await lobby.client()
    await watcher.call("who")
    assert not (await watcher.whois("alice")).online
    c = await lobby.client()
    await expect_error(c.login("alice", "not-the-password"), "forbidden")
    await expect_error(c.login("nobody", PASSWORD), "forbidden")  # same answer: no probing
    assert c.credentials is None
    logged_in = await c.login("Alice", PASSWORD)
    assert set(logged_in) == {"player", "role", "match", "disputes", "session",
                              "other_sessions", "while_away"}
    assert (logged_in["player"], logged_in["role"], logged_in["match"],
            logged_in["while_away"]) == ("alice", "player", None, None)
    await told_presence(watcher, {"alice": "ready"})
    assert (await watcher.whois("alice")).online
    admin = await lobby.client()
    assert (await admin.login(ADMIN, "root-secret"))["role"] == "admin"
    assert (await watcher.whois(ADMIN)).role == "admin"


@case("logout")
async def _logout(lobby: LobbyServer, tmp: Path) -> None:
    watcher = await lobby.client()
    await watcher.call("who")
    alice = await lobby.player("alice")
    await told_presence(watcher, {"alice": "ready"})
    assert await alice.logout() == {"player": "alice", "logged_in": False, "revoked": True}
    assert alice.credentials is None
    await told_presence(watcher, {"alice": "offline"})
    profile = await watcher.whois("alice")
    assert (profile.online, profile.status) == (False, "offline")
    # still connected, now as a spectator
    await expect_error(alice.call("logout"), "not_logged_in")
    await expect_error(alice.call("invite", name="bob", ladder="backgammon"), "not_logged_in")
    assert (await alice.call("who"))["spectators"] == 2


@case("resume")
async def _resume(lobby: LobbyServer, tmp: Path) -> None:
    first = await lobby.client()
    token = (await first.register("alice", PASSWORD))["session"]["token"]
    await first.close()
    again = await lobby.client()
    assert await again.call("resume", token=token) == {"player": "alice", "role": "player",
                                                        "match": None, "disputes": [],
                                                        "while_away": None}
    assert (await again.whois("alice")).online
    await expect_error(again.call("resume", token="not-a-token"), "forbidden")
    await again.call("logout")
    await expect_error(again.call("resume", token=token), "forbidden")  # revoked


# ---- looking ------------------------------------------------------------------------------


@case("who")
async def _who(lobby: LobbyServer, tmp: Path) -> None:
    spectator = await lobby.client()
    assert await spectator.call("who") == {"players": [], "spectators": 1}
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    await start_match(alice, bob)
    assert await spectator.call("who") == {"spectators": 1, "players": [
        {"player": "alice", "status": "playing", "ratings": {}},
        {"player": "bob", "status": "playing", "ratings": {}},
        {"player": "carol", "status": "ready", "ratings": {}},
    ]}
    finished = await bob.resign()
    after = {c.player: c.after for c in finished.changes}
    await carol.close()
    await settle(spectator)
    assert await spectator.call("who") == {"spectators": 1, "players": [
        {"player": "alice", "status": "ready", "ratings": {"backgammon": after["alice"]}},
        {"player": "bob", "status": "ready", "ratings": {"backgammon": after["bob"]}},
    ]}


@case("whois")
async def _whois(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    model = FibsModel()
    await start_match(alice, bob, length=5)
    during = await bob.whois("alice")
    assert (during.online, during.status) == (True, "playing")
    await bob.resign()
    model.play("alice", "bob", 5)
    await bob.close()
    profile = await alice.whois("BOB")  # names match ignoring case
    assert isinstance(profile, Whois)
    assert (profile.player, profile.online, profile.status, profile.role) == (
        "bob", False, "offline", "player")
    assert profile.matches == {"played": 1, "dropped": 0, "disputed": 0}
    (row,) = profile.ratings
    assert (row.ladder, row.system, row.rank, row.of, row.player, row.games, row.active) == (
        "backgammon", "fibs", 2, 2, "bob", 1, True)
    assert close(row.rating, model.players["bob"].rating)
    assert row.extras == {"experience": 5}
    mine = await alice.whois("alice")
    assert (mine.online, mine.status, mine.ratings[0].rank) == (True, "ready", 1)
    assert close(mine.ratings[0].rating, model.players["alice"].rating)
    await expect_error(alice.whois("nobody"), "not_found")
    await expect_error(alice.call("whois"), "bad_request")  # NAME is required


@case("rating")
async def _rating(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    model = FibsModel()
    await start_match(alice, bob, length=3)
    await alice.resign()
    model.play("bob", "alice", 3)
    event = await admin.call("event create", name="Cup", ladder="scrabble")
    await admin.call("event result", new=True, event=event["id"], side_a="alice", side_b="bob",
                     score_a=420, score_b=380)
    await admin.call("event close", event=event["id"])

    own = await alice.rating()  # no NAME: your own
    assert isinstance(own, Ratings) and own.player == "alice"
    assert [r.ladder for r in own.ratings] == ["backgammon", "scrabble"]
    fibs = own.in_ladder("backgammon")
    assert fibs is not None and fibs.system == "fibs" and fibs.rank == 2
    assert close(fibs.rating, model.players["alice"].rating)
    assert fibs.extras == {"experience": 3}
    cas = own.in_ladder("scrabble")
    assert cas is not None and cas.system == "cas" and cas.rank == 1
    assert isinstance(cas.rating, int) and set(cas.extras) == {"paluba", "dansa", "peklo"}
    assert own.in_ladder("foosball-singles") is None
    one = await admin.rating("bob", "backgammon")
    assert [r.ladder for r in one.ratings] == ["backgammon"]
    assert close(one.ratings[0].rating, model.players["bob"].rating)
    assert (await alice.rating(ladder="scrabble")).ratings == [cas]
    # the same rows as whois and the ladder
    assert (await admin.whois("alice")).ratings == own.ratings
    spectator = await lobby.client()
    await expect_error(spectator.rating(), "bad_request")  # not logged in: give a NAME
    await expect_error(spectator.rating("nobody"), "not_found")
    await expect_error(spectator.rating("alice", "chess"), "not_found")


@case("ladder")
async def _ladder(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    admin = await lobby.admin()
    model = FibsModel()
    await start_match(alice, bob, length=1)
    await bob.resign()
    model.play("alice", "bob", 1)
    await start_match(carol, alice, length=3)
    await alice.resign()
    model.play("carol", "alice", 3)
    # a result from long ago: its players are inactive and listed only with --all
    old = await admin.call("event create", name="Old night", ladder="backgammon",
                           date="2020-01-04")
    await admin.call("event result", new=True, event=old["id"], side_a="dave", side_b="erin",
                     score_a=1, score_b=0)
    table = await bob.ladder("backgammon")
    assert isinstance(table, Ladder)
    assert (table.ladder, table.system, table.total) == ("backgammon", "fibs", 3)
    assert [r.player for r in table.players] == model.ranking()
    for i, row in enumerate(table.players, 1):
        entry = model.players[row.player]
        # ranks count every player of the ladder, the inactive ones listed last
        assert (row.rank, row.of, row.games, row.active) == (i, 5, entry.games, True)
        assert close(row.rating, entry.rating)
        assert row.extras == {"experience": entry.experience}
    page = await bob.ladder("backgammon", start=2, count=1)
    assert page.total == 3 and page.players == [table.players[1]]
    everyone = await bob.ladder("backgammon", all=True)
    assert everyone.total == 5
    assert everyone.players[:3] == table.players
    assert [(r.player, r.active) for r in everyone.players[3:]] == [("dave", False),
                                                                    ("erin", False)]
    empty = await bob.ladder("foosball-doubles")
    assert (empty.system, empty.total, empty.players) == ("p4p", 0, [])
    await expect_error(bob.ladder("chess"), "not_found")
    await expect_error(bob.ladder("backgammon", start=-1), "bad_request")


@case("history")
async def _history(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    model = FibsModel()
    m1 = await start_match(alice, bob, length=1)
    await bob.resign()
    model.play("alice", "bob", 1)
    m2 = await start_match(carol, alice, length=3)
    await alice.resign()
    model.play("carol", "alice", 3)
    history = await carol.call("history", name="alice")
    assert (history["player"], history["ladder"]) == ("alice", None)
    entries = history["entries"]
    assert [e["cause"] for e in entries] == [{"match": m1}, {"match": m2}]
    for e, (before, after) in zip(entries, model.players["alice"].history, strict=True):
        assert e["ladder"] == "backgammon" and e["at"].startswith(today())
        assert close(e["before"], before) and close(e["after"], after)
        assert e["change"] == e["after"] - e["before"]
    only = await carol.call("history", name="alice", ladder="backgammon")
    assert only["entries"] == entries and only["ladder"] == "backgammon"
    assert (await carol.call("history", name="alice", ladder="scrabble"))["entries"] == []
    # the last entry is what rating says now
    now = (await carol.rating("alice")).ratings[0].rating
    assert entries[-1]["after"] == now
    # the typed view, shown as the ladder's rating column says (two places on FIBS)
    typed = await carol.history("alice")
    assert [(e.ladder, e.at, e.before, e.after, e.change, e.cause) for e in typed.entries] == [
        (e["ladder"], e["at"], e["before"], e["after"], e["change"], e["cause"]) for e in entries]
    rating = {i.ladder: i for i in await carol.ladders()}["backgammon"].rating_column
    assert [e.cells(rating) for e in typed.entries] == [
        [f"{b:.2f}", f"{a:.2f}", f"{a - b:+.2f}"] for b, a in model.players["alice"].history]
    await expect_error(carol.call("history", name="nobody"), "not_found")


@case("ladders")
async def _ladders(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await start_match(alice, bob)
    await alice.resign()
    listed = (await alice.call("ladders"))["ladders"]
    assert [{k: x[k] for k in ("ladder", "system", "format", "updated", "live", "players")}
            for x in listed] == [
        {"ladder": "backgammon", "system": "fibs", "format": "singles",
         "updated": "after each match", "live": True, "players": 2},
        {"ladder": "scrabble", "system": "cas", "format": "singles",
         "updated": "when an event closes", "live": False, "players": 0},
        {"ladder": "foosball-singles", "system": "p4p", "format": "singles",
         "updated": "when an event closes", "live": False, "players": 0},
        {"ladder": "foosball-doubles", "system": "p4p", "format": "doubles",
         "updated": "when an event closes", "live": False, "players": 0},
    ]
    # each ladder's columns: what a client shows of its rows, every one a field of them
    rows = (await alice.call("ladder", ladder="backgammon"))["players"]
    fibs = listed[0]
    assert fibs["system_title"] == "FIBS"
    assert [c["key"] for c in fibs["columns"]] == ["rating", "experience", "games"]
    assert all(c["key"] in rows[0] for c in fibs["columns"])
    assert [c["key"] for c in listed[1]["columns"]] == ["rating", "paluba", "dansa", "peklo",
                                                        "games"]
    # the library's typed view: the descriptions the renderers' tests use, learned by the client
    described = {x["ladder"]: LadderInfo.from_dict({**x, "players": 0})
                 for x in LADDERS_REPLY["ladders"] if x["system"] != "zeta"}
    spectator = await lobby.client()
    assert spectator.ladder_info == {}
    infos = await spectator.ladders()
    assert {i.ladder: replace(i, players=0) for i in infos if i.ladder in described} == described
    assert [i.players for i in infos] == [2, 0, 0, 0]
    assert spectator.ladder_info == {i.ladder: i for i in infos}
    other = await lobby.client()
    assert (await other.send_line("ladders"))["ok"]  # any ladders reply teaches the client
    assert other.ladder_info == spectator.ladder_info
    table = await spectator.ladder("backgammon")
    assert table.columns == infos[0].columns
    assert table.cells() == [[f"{r['rating']:.2f}", str(r["experience"]), str(r["games"])]
                             for r in rows]


@case("evaluate")
async def _evaluate(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    for winner, loser in [(alice, bob), (alice, bob), (bob, alice)]:
        await start_match(winner, loser, 3)
        await loser.resign()
    guest = await lobby.client()
    report = await guest.call("evaluate", ladder="backgammon")
    assert (report["ladder"], report["system"]) == ("backgammon", "fibs")
    assert [(r["system"], r["games"]) for r in report["systems"]] == [
        ("fibs", 3), ("baseline", 3), ("win_rate", 3)]
    assert close(report["systems"][1]["log_loss"], 0.6931471805599453)  # ln 2
    assert (await guest.send_line("evaluate backgammon"))["data"] == report
    await expect_error(guest.call("evaluate", ladder="nowhere"), "not_found")


@case("watch")
async def _watch(lobby: LobbyServer, tmp: Path) -> None:
    watcher = await lobby.client()
    assert await watcher.watch("backgammon") == {"ladder": "backgammon", "watching": True}
    assert await watcher.watch("scrabble") == {"ladder": "scrabble", "watching": True}
    assert watcher.watching == {"backgammon", "scrabble"}
    await expect_error(watcher.watch("chess"), "not_found")
    assert watcher.watching == {"backgammon", "scrabble"}
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    watcher.drain_pushes()
    mid = await start_match(alice, bob, length=3)
    await bob.resign()
    pushes = await settle(watcher)
    assert [p["event"] for p in pushes] == ["match_finished", "rating_changed", "rating_changed"]
    assert pushes[0]["data"]["match"] == mid and pushes[0]["data"]["winner"] == "alice"
    check_changes([p["data"] for p in pushes[1:]], FibsModel().play("alice", "bob", 3))
    assert all(p["data"]["cause"] == {"match": mid} for p in pushes[1:])
    # an event closing on a watched ladder pushes one ladder_updated: the rows it moved
    event = await admin.call("event create", name="Cup", ladder="scrabble")
    await admin.call("event result", new=True, event=event["id"], side_a="alice", side_b="bob",
                     score_a=400, score_b=300)
    assert await settle(watcher) == []  # nothing is rated before the close
    await admin.call("event close", event=event["id"])
    pushes = await settle(watcher)
    assert [p["event"] for p in pushes] == ["ladder_updated"]  # the changes went to the players
    updated = LadderUpdated.from_dict(pushes[-1]["data"])
    assert (updated.ladder, updated.event, updated.moved) == ("scrabble", event["id"], 2)
    table = await watcher.ladder("scrabble", all=True)
    assert (updated.total, updated.changed) == (table.total, table.players)
    # a ladder not watched stays silent
    other = await admin.call("event create", name="Kicker", ladder="foosball-singles")
    await admin.call("event result", new=True, event=other["id"], side_a="alice", side_b="bob",
                     score_a=10, score_b=4)
    await admin.call("event close", event=other["id"])
    assert await settle(watcher) == []


@case("unwatch")
async def _unwatch(lobby: LobbyServer, tmp: Path) -> None:
    watcher = await lobby.client()
    await watcher.watch("backgammon")
    assert await watcher.unwatch("backgammon") == {"ladder": "backgammon", "watching": False}
    assert watcher.watching == set()
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    watcher.drain_pushes()
    await start_match(alice, bob)
    await bob.resign()
    assert [p["event"] for p in await settle(watcher)] == []
    await expect_error(watcher.unwatch("chess"), "not_found")


@case("ready off")
async def _ready_off(lobby: LobbyServer, tmp: Path) -> None:
    """Not ready: nobody can invite the player, who lists them as not ready (and is told,
    on every server, by ``presence``); a new login takes invitations again."""
    alice, bob = await lobby.players("alice", "bob")
    await alice.call("who")  # listens to presence from now on
    assert await bob.call("ready off") == {"player": "bob", "ready": False}
    told = await alice.next_push("presence")
    assert told["data"]["players"] == [{"player": "bob", "status": "not_ready"}]
    listed = {p["player"]: p["status"] for p in (await alice.call("who"))["players"]}
    assert listed == {"alice": "ready", "bob": "not_ready"}
    refused = await expect_error(alice.call("invite", name="bob", ladder="backgammon"),
                                 "conflict")
    assert "not taking invitations" in str(refused)
    await bob.call("invite", name="alice", ladder="backgammon")  # bob may still invite
    await alice.call("decline", name="bob")
    again = await lobby.login("bob")  # a new login takes invitations
    await alice.call("invite", name="bob", ladder="backgammon")
    assert (await again.next_push("invited"))["data"]["from"] == "alice"


@case("ready on")
async def _ready_on(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    await bob.call("ready off")
    await expect_error(alice.call("invite", name="bob", ladder="backgammon"), "conflict")
    assert await bob.call("ready on") == {"player": "bob", "ready": True}
    await alice.call("invite", name="bob", ladder="backgammon")
    assert (await bob.next_push("invited"))["data"]["from"] == "alice"


# ---- talk ---------------------------------------------------------------------------------


@case("tell")
async def _tell(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    assert await alice.call("tell", name="bob", text="hi") == {"to": "bob", "text": "hi"}
    assert (await bob.next_push("told"))["data"] == {"from": "alice", "text": "hi"}
    await bob.call("logout")
    await expect_error(alice.call("tell", name="bob", text="hi"), "not_found")


@case("say")
async def _say(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    await expect_error(alice.call("say", text="gl"), "conflict")
    mid = await start_match(alice, bob)
    assert await alice.call("say", text="gl") == {"to": "bob", "text": "gl", "match": mid}
    assert (await bob.next_push("said"))["data"] == {"from": "alice", "text": "gl", "match": mid}


@case("shout")
async def _shout(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    shout = await alice.call("shout", text="anyone?")
    assert (shout["from"], shout["text"]) == ("alice", "anyone?")
    assert (await bob.next_push("shouted"))["data"] == shout


@case("shouts")
async def _shouts(lobby: LobbyServer, tmp: Path) -> None:
    alice = await lobby.player("alice")
    guest = await lobby.client()
    assert await guest.call("shouts") == {"shouts": []}
    shout = await alice.call("shout", text="anyone?")
    assert await guest.call("shouts") == {"shouts": [shout]}


@case("block")
async def _block(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    assert await bob.call("block", name="alice") == {"player": "alice", "blocked": True}
    assert await bob.call("block") == {"blocking": ["alice"]}
    await alice.call("tell", name="bob", text="hi")  # looks sent
    assert [p for p in await settle(bob) if p["event"] == "told"] == []


@case("unblock")
async def _unblock(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    await bob.call("block", name="alice")
    assert await bob.call("unblock", name="alice") == {"player": "alice", "blocked": False}
    await alice.call("tell", name="bob", text="hi")
    assert (await bob.next_push("told"))["data"]["text"] == "hi"


@case("mute")
async def _mute(lobby: LobbyServer, tmp: Path) -> None:
    alice = await lobby.player("alice")
    admin = await lobby.admin()
    muted = await admin.call("mute", name="alice", minutes=10)
    assert muted["muted"] and muted["until"]
    await expect_error(alice.call("shout", text="hi"), "forbidden")


@case("unmute")
async def _unmute(lobby: LobbyServer, tmp: Path) -> None:
    alice = await lobby.player("alice")
    admin = await lobby.admin()
    await admin.call("mute", name="alice")
    assert await admin.call("unmute", name="alice") == {"player": "alice", "muted": False,
                                                         "until": None}
    await alice.call("shout", text="back")


@case("ban")
async def _ban(lobby: LobbyServer, tmp: Path) -> None:
    alice = await lobby.player("alice")
    admin = await lobby.admin()
    banned = await admin.call("ban", name="alice", until="2099-01-15", reason="spam")
    assert banned == {"player": "alice", "banned": True, "until": "2099-01-15T00:00:00Z",
                      "reason": "spam"}
    told = (await alice.next_push("logged_out", timeout=10))["data"]
    assert told["cause"] == "banned" and told["until"] == "2099-01-15T00:00:00Z"
    await expect_error((await lobby.client()).login("alice", PASSWORD), "banned")


@case("unban")
async def _unban(lobby: LobbyServer, tmp: Path) -> None:
    await lobby.player("alice")
    admin = await lobby.admin()
    await admin.send_line("ban alice no end to it")
    assert await admin.call("unban", name="alice") == {"player": "alice", "banned": False,
                                                       "lifted": True}
    assert (await (await lobby.client()).login("alice", PASSWORD))["player"] == "alice"


@case("seek")
async def _seek(lobby: LobbyServer, tmp: Path) -> None:
    """Two seekers of the same ladder and length are paired: both hear match_started with the
    stake, as after an invitation; a seek on a ladder rated by events is refused."""
    alice, bob = await lobby.players("alice", "bob")
    await expect_error(alice.call("seek", ladder="scrabble"), "bad_request")
    mine = await alice.call("seek", ladder="backgammon", length=3, range=50)
    assert (mine["ladder"], mine["length"], mine["range"], mine["replaced"]) == (
        "backgammon", 3, 50, None)
    await bob.send_line("seek backgammon 3 --range 50")
    started = (await alice.next_push("match_started"))["data"]
    assert (await bob.next_push("match_started"))["data"] == started
    assert {started["a"], started["b"]} == {"alice", "bob"} and started["stake"] is not None


@case("unseek")
async def _unseek(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.players("alice", "bob")
    await alice.call("seek", ladder="backgammon", length=5)
    assert await alice.call("unseek") == {"ladder": "backgammon", "length": 5}
    await expect_error(alice.call("unseek"), "not_found")
    assert (await bob.call("seeks"))["seeks"] == []


@case("seeks")
async def _seeks(lobby: LobbyServer, tmp: Path) -> None:
    alice = await lobby.player("alice")
    spectator = await lobby.client()
    assert (await spectator.call("seeks"))["seeks"] == []
    await alice.call("seek", ladder="backgammon", length=7, range=30)
    listed = (await spectator.call("seeks", ladder="backgammon"))["seeks"]
    assert [(s["player"], s["length"], s["range"], s["rating"]) for s in listed] == [
        ("alice", 7, 30, 1500.0)]
    await expect_error(spectator.call("seeks", ladder="nosuch"), "not_found")


# ---- playing ------------------------------------------------------------------------------


@case("invite")
async def _invite(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    seen: list[dict[str, object]] = []
    bob.on("invited", seen.append)
    invited = await alice.call("invite", name="bob", ladder="backgammon", length=5)
    assert {k: invited[k] for k in ("to", "ladder", "length", "replaced")} == {
        "to": "bob", "ladder": "backgammon", "length": 5, "replaced": False}
    assert [p["player"] for p in invited["stake"]["players"]] == ["alice", "bob"]
    push = await bob.next_push("invited")
    assert push["data"] == {"from": "alice", "ladder": "backgammon", "length": 5,
                            "expires_at": invited["expires_at"], "stake": invited["stake"]}
    assert seen == [push]
    assert (await alice.call("invite", name="Bob", ladder="backgammon", length="unlimited")
            )["length"] == "unlimited"
    assert (await bob.next_push("invited"))["data"]["length"] == "unlimited"
    await expect_error(alice.call("invite", name="bob", ladder="scrabble"), "bad_request")
    await expect_error(alice.call("invite", name="alice", ladder="backgammon"), "bad_request")
    await expect_error(alice.call("invite", name="nobody", ladder="backgammon"), "not_found")
    await expect_error(alice.call("invite", name="bob", ladder="chess"), "not_found")
    await expect_error(alice.call("invite", name="bob", ladder="backgammon", length=0),
                       "bad_request")
    await bob.logout()
    await expect_error(alice.call("invite", name="bob", ladder="backgammon"), "not_found")
    await expect_error(bob.call("invite", name="alice", ladder="backgammon"), "not_logged_in")


@case("join")
async def _join(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    await expect_error(bob.call("join", name="alice"), "not_found")  # no invitation
    await alice.call("invite", name="bob", ladder="backgammon", length=3)
    await bob.next_push("invited")
    started = await bob.call("join", name="alice")
    assert started == {"match": started["match"], "ladder": "backgammon", "length": 3,
                       "a": "alice", "b": "bob", "status": "playing", "stake": started["stake"]}
    assert [p["player"] for p in started["stake"]["players"]] == ["alice", "bob"]
    assert (await alice.next_push("match_started"))["data"] == started
    for name in ("alice", "bob"):
        assert (await carol.whois(name)).status == "playing"
    await expect_error(carol.call("invite", name="alice", ladder="backgammon"), "conflict")
    await expect_error(alice.call("invite", name="carol", ladder="backgammon"), "conflict")


@case("decline")
async def _decline(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.next_push("invited")
    assert await bob.call("decline", name="alice") == {"declined": "alice"}
    assert (await alice.next_push("declined"))["data"] == {"by": "bob"}
    await expect_error(bob.call("join", name="alice"), "not_found")
    await expect_error(bob.call("decline", name="alice"), "not_found")
    assert (await alice.whois("bob")).status == "ready"


@case("stake")
async def _stake(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    at_stake = await alice.call("stake", name="bob", ladder="backgammon", length=3)
    assert (at_stake["ladder"], at_stake["length"]) == ("backgammon", 3)
    first, second = at_stake["players"]
    assert (first["player"], first["rating"], first["chance"]) == ("alice", 1500.0, 0.5)
    assert (second["player"], second["rating"], second["chance"]) == ("bob", 1500.0, 0.5)
    await start_match(alice, bob, length=3)
    finished = await bob.resign()  # what alice's win was said to be worth, it was
    assert finished.change_of("alice").change == first["win"]
    assert finished.change_of("bob").change == second["loss"]
    await expect_error(alice.call("stake", name="bob", ladder="backgammon", length="unlimited"),
                       "bad_request")
    await expect_error(alice.call("stake", name="alice", ladder="backgammon"), "bad_request")
    await expect_error(alice.call("stake", name="nobody", ladder="backgammon"), "not_found")


@case("invitations")
async def _invitations(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    assert await alice.call("invitations") == {"sent": [], "received": []}
    sent = await alice.call("invite", name="bob", ladder="backgammon", length=7)
    mine = await alice.call("invitations")
    assert mine == {"sent": [{"to": "bob", "ladder": "backgammon", "length": 7,
                              "expires_at": sent["expires_at"]}], "received": []}
    assert await bob.call("invitations") == {"sent": [], "received": [
        {"from": "alice", "ladder": "backgammon", "length": 7, "expires_at": sent["expires_at"],
         "stake": sent["stake"]}]}


@case("uninvite")
async def _uninvite(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.next_push("invited")
    assert await alice.call("uninvite", name="bob") == {"withdrawn": "bob"}
    assert (await bob.next_push("invitation_withdrawn"))["data"] == {"from": "alice",
                                                                     "ladder": "backgammon"}
    await expect_error(bob.call("join", name="alice"), "not_found")
    await expect_error(alice.call("uninvite", name="bob"), "not_found")


@case("resign")
async def _resign(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    model = FibsModel()
    await expect_error(bob.resign(), "conflict")  # not playing
    mid = await start_match(alice, bob, length=5)
    finished = await bob.resign()
    assert isinstance(finished, MatchFinished)
    assert (finished.match, finished.ladder, finished.length, finished.winner, finished.how,
            finished.rated) == (mid, "backgammon", 5, "alice", "resign", True)
    expected = model.play("alice", "bob", 5)
    check_changes(finished.changes, expected)
    assert finished.change_of("alice").change == finished.change_of("alice").after - 1500.0
    pushed = await alice.next_push("match_finished")
    assert MatchFinished.from_dict(pushed["data"]) == finished
    mine = await alice.next_push("rating_changed")
    assert mine["data"]["player"] == "alice" and mine["data"]["cause"] == {"match": mid}
    for name in ("alice", "bob"):
        profile = await alice.whois(name)
        assert profile.status == "ready" and profile.matches["played"] == 1
        assert profile.ratings[0].rating == finished.change_of(name).after
        assert (await alice.rating(name)).ratings == profile.ratings
    # an unlimited match is played but never rated
    await start_match(bob, alice, length="unlimited")
    unrated = await alice.resign()
    assert (unrated.rated, unrated.changes, unrated.length) == (False, [], "unlimited")
    assert (await alice.rating("bob")).ratings[0].games == 1


@case("report win")
async def _report_win(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await expect_error(alice.call("report win"), "conflict")
    mid = await start_match(alice, bob, length=3)
    await expect_error(alice.call("report win", score_a=2, score_b=1), "bad_request")
    await expect_error(alice.call("report win", score_a=3), "bad_request")
    claimed = await alice.call("report win", score_a=3, score_b=1)
    assert claimed == {"match": mid, "by": "alice", "scores": [3, 1], "status": "claimed"}
    assert (await bob.next_push("result_claimed"))["data"] == claimed
    await expect_error(alice.call("report win"), "conflict")  # only once
    await expect_error(bob.call("report win"), "conflict")
    # nothing is rated before the opponent answers
    assert (await alice.rating("alice")).ratings == []
    assert (await alice.whois("bob")).status == "playing"


@case("confirm")
async def _confirm(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    model = FibsModel()
    mid = await start_match(alice, bob, length=3)
    await expect_error(bob.confirm(mid), "conflict")  # nothing claimed yet
    await bob.call("report win", score_a=3, score_b=2)
    await expect_error(bob.confirm(mid), "forbidden")  # not your own claim
    await expect_error(alice.confirm(mid + 100), "not_found")
    finished = await alice.confirm(mid)
    assert (finished.match, finished.winner, finished.how, finished.length) == (
        mid, "bob", "confirm", 3)
    check_changes(finished.changes, model.play("bob", "alice", 3))
    assert MatchFinished.from_dict((await bob.next_push("match_finished"))["data"]) == finished
    history = await alice.call("history", name="bob", ladder="backgammon")
    assert [e["cause"] for e in history["entries"]] == [{"match": mid}]
    assert history["entries"][0]["after"] == finished.change_of("bob").after
    await expect_error(alice.confirm(mid), "not_found")  # no longer live


@case("dispute")
async def _dispute(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    mid = await start_match(alice, bob, length=3)
    await alice.call("report win")
    await expect_error(alice.call("dispute", match=mid), "forbidden")
    disputed = await bob.call("dispute", match=mid)
    assert disputed == {"match": mid, "status": "disputed", "by": "bob",
                        "since": disputed["since"]}
    assert (await admin.next_push("result_disputed"))["data"] == disputed
    assert (await alice.next_push("result_disputed"))["data"] == disputed
    await expect_error(bob.resign(), "conflict")  # an admin decides now
    await expect_error(bob.confirm(mid), "conflict")
    for name in ("alice", "bob"):
        assert (await admin.whois(name)).matches == {"played": 0, "dropped": 0, "disputed": 1}


@case("claim")
async def _claim(lobby: LobbyServer, tmp: Path) -> None:
    await lobby.restart(drop_timeout=DROP_TIMEOUT)
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    model = FibsModel()
    mid = await start_match(alice, bob, length=5)
    await expect_error(alice.claim(mid), "conflict")  # bob is connected
    await bob.close()
    await until_offline(alice, "bob")
    await expect_error(alice.claim(mid), "conflict")  # not away long enough yet
    await asyncio.sleep(DROP_TIMEOUT + 0.1)
    finished = await alice.claim(mid)
    assert (finished.match, finished.winner, finished.how) == (mid, "alice", "claim")
    check_changes(finished.changes, model.play("alice", "bob", 5))
    profile = await alice.whois("bob")
    assert profile.matches == {"played": 1, "dropped": 1, "disputed": 0}
    assert profile.ratings[0].rating == finished.change_of("bob").after
    assert (await alice.whois("alice")).matches["dropped"] == 0


@case("abort")
async def _abort(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await expect_error(alice.call("abort"), "conflict")
    mid = await start_match(alice, bob, length=3)
    proposed = await alice.call("abort")
    assert proposed == {"match": mid, "status": "abort_requested", "by": "alice"}
    assert (await bob.next_push("abort_requested"))["data"] == proposed
    assert (await alice.whois("bob")).status == "playing"
    assert await bob.call("abort") == {"match": mid, "status": "aborted", "rated": False}
    assert (await alice.next_push("match_aborted"))["data"] == {
        "match": mid, "status": "aborted", "rated": False}
    for name in ("alice", "bob"):
        profile = await alice.whois(name)
        assert (profile.status, profile.ratings, profile.matches["played"]) == ("ready", [], 0)
    assert (await alice.call("history", name="alice"))["entries"] == []


# ---- directing ----------------------------------------------------------------------------


@case("event create")
async def _event_create(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    created = await admin.call("event create", name="Brno Open", ladder="scrabble",
                               date="2026-03-14")
    assert created == {"id": created["id"], "name": "Brno Open", "ladder": "scrabble",
                       "date": "2026-03-14", "status": "open"}
    line = await admin.send_line('event create "League day 3" foosball-doubles')
    assert line["id"] is None and line["cmd"] == "event create"
    assert line["data"] == {"id": created["id"] + 1, "name": "League day 3",
                            "ladder": "foosball-doubles", "date": today(), "status": "open"}
    listed = (await admin.call("events"))["events"]
    assert [(e["id"], e["name"], e["games"]) for e in listed] == [
        (created["id"], "Brno Open", 0), (created["id"] + 1, "League day 3", 0)]
    player = await lobby.player("alice")
    await expect_error(player.call("event create", name="Mine", ladder="scrabble"), "forbidden")
    spectator = await lobby.client()
    await expect_error(spectator.call("event create", name="Mine", ladder="scrabble"),
                       "not_logged_in")
    await expect_error(admin.call("event create", name="X", ladder="chess"), "not_found")
    await expect_error(admin.call("event create", name="X", ladder="scrabble",
                                  date="14.3.2026"), "bad_request")


@case("event result")
async def _event_result(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    alice = await lobby.player("alice")
    model = FibsModel()
    night = await admin.call("event create", name="BG night", ladder="backgammon")
    got = await admin.call("event result", new=True, event=night["id"], side_a="alice", side_b="bob",
                           score_a=5, score_b=2, length=5)
    assert (got["event"], got["side_a"], got["side_b"], got["rated"]) == (
        night["id"], "alice", "bob", True)
    # a FIBS ladder rates an event's game at once, like a live match
    check_changes(got["changes"], model.play("alice", "bob", 5))
    pushed = await alice.next_push("rating_changed")
    assert pushed["data"]["cause"]["match"] == got["match"]
    assert close((await alice.rating()).ratings[0].rating, model.players["alice"].rating)
    # bob had no account: he is now a ladder entry without a password
    assert (await alice.whois("bob")).role == "entry"
    unrated = await admin.call("event result", new=True, event=night["id"], side_a="bob",
                               side_b="alice", score_a=5, score_b=0, length=5,
                               unrated="forfeit")
    assert (unrated["rated"], unrated["unrated"]) == (False, "forfeit")
    assert "changes" not in unrated
    await expect_error(admin.call("event result", new=True, event=night["id"], side_a="alice",
                                  side_b="bob", score_a=4, score_b=2, length=5), "bad_request")
    await expect_error(admin.call("event result", new=True, event=999, side_a="alice", side_b="bob",
                                  score_a=1, score_b=0), "not_found")
    # a ČAS ladder waits for the close; doubles need a doubles ladder
    cup = await admin.call("event create", name="Cup", ladder="scrabble")
    scored = await admin.call("event result", new=True, event=cup["id"], side_a="alice", side_b="carol",
                              score_a=350, score_b=350)
    assert scored["rated"] is True and "changes" not in scored
    assert (await alice.rating("alice", "scrabble")).ratings == []
    await expect_error(admin.call("event result", new=True, event=cup["id"], side_a="alice+bob",
                                  side_b="carol+dave", score_a=1, score_b=0), "bad_request")
    await admin.call("event close", event=cup["id"])
    await expect_error(admin.call("event result", new=True, event=cup["id"], side_a="alice",
                                  side_b="carol", score_a=1, score_b=0), "conflict")


@case("event import")
async def _event_import(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    event = await admin.call("event create", name="Kicker Cup", ladder="foosball-singles")
    rows = [f"Kicker Cup,{today()},alice,bob,10,7,,", f"Kicker Cup,{today()},bob,carol,10,3,,",
            f"kicker cup,{today()},carol,alice,2,10,,no:forfeit"]
    got = await admin.call("event import", new=True, event=event["id"], csv=results_text(rows))
    assert (got["event"], got["imported"]) == (event["id"], 3)
    assert [(g["side_a"], g["side_b"], g["score_a"], g["score_b"], g["rated"])
            for g in got["games"]] == [("alice", "bob", 10, 7, True),
                                       ("bob", "carol", 10, 3, True),
                                       ("carol", "alice", 2, 10, False)]
    shown = await admin.call("event show", event=event["id"])
    assert [g["match"] for g in shown["games"]] == [g["match"] for g in got["games"]]
    # all or nothing: a bad row records none of the others
    bad = [f"Kicker Cup,{today()},dave,erin,10,7,,", f"Other Cup,{today()},dave,erin,10,7,,"]
    error = await expect_error(
        admin.call("event import", new=True, event=event["id"], csv=results_text(bad)), "bad_request")
    assert "CSV:3" in error.message
    await expect_error(admin.call("event import", new=True, event=event["id"], csv="not,a,header\n"),
                       "bad_request")
    assert len((await admin.call("event show", event=event["id"]))["games"]) == 3
    await expect_error(admin.whois("dave"), "not_found")


@case("event close")
async def _event_close(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    alice = await lobby.player("alice")
    watcher = await lobby.client()
    await watcher.watch("foosball-doubles")
    event = await admin.call("event create", name="League day", ladder="foosball-doubles")
    rows = [f"League day,{today()},alice+bob,carol+dave,10,7,,",
            f"League day,{today()},carol+dave,erin+frank,10,4,,",
            f"League day,{today()},alice+erin,bob+frank,6,10,,"]
    await admin.call("event import", new=True, event=event["id"], csv=results_text(rows))
    assert (await admin.ladder("foosball-doubles")).total == 0  # rated only on close
    closed = await admin.call("event close", event=event["id"])
    assert {k: closed[k] for k in ("id", "name", "ladder", "status")} == {
        "id": event["id"], "name": "League day", "ladder": "foosball-doubles",
        "status": "closed"}
    # the same rows rated offline by `matchlobby rate`
    offline = await rate_file("p4p", rows, tmp / "p4p-results.csv")
    table = await admin.ladder("foosball-doubles")
    assert [(r.rank, r.player, r.rating, r.games, r.extras["class"]) for r in table.players] == [
        (p["rank"], p["player"], p["rating"], p["games"], p["class"])
        for p in offline["players"]]
    assert {c["player"]: c["after"] for c in closed["changes"]} == {
        p["player"]: p["rating"] for p in offline["players"]}
    updated = await watcher.ladder_updated("foosball-doubles")
    assert updated.event == event["id"]
    played = {c["player"] for c in closed["changes"]}
    assert updated.changed == [r for r in table.players if r.player in played]
    assert (updated.total, updated.more) == (table.total, 0)
    mine = await alice.next_push("rating_changed")
    assert mine["data"]["player"] == "alice" and mine["data"]["cause"] == {"event": event["id"]}
    await expect_error(admin.call("event close", event=event["id"]), "conflict")
    await expect_error(admin.call("event close", event=999), "not_found")
    await expect_error(alice.call("event close", event=event["id"]), "forbidden")


@case("events")
async def _events(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    a = await admin.call("event create", name="Spring", ladder="scrabble", date="2026-03-01")
    b = await admin.call("event create", name="Summer", ladder="foosball-singles",
                         date="2026-06-01")
    await admin.call("event result", new=True, event=a["id"], side_a="alice", side_b="bob",
                     score_a=400, score_b=300)
    await admin.call("event close", event=a["id"])
    spectator = await lobby.client()
    everything = await spectator.call("events")
    assert everything == {"events": [
        {"id": a["id"], "name": "Spring", "ladder": "scrabble", "date": "2026-03-01",
         "status": "closed", "games": 1},
        {"id": b["id"], "name": "Summer", "ladder": "foosball-singles", "date": "2026-06-01",
         "status": "open", "games": 0}]}
    assert (await spectator.call("events", status="open"))["events"] == everything["events"][1:]
    assert (await spectator.call("events", status="closed"))["events"] == everything["events"][:1]
    await expect_error(spectator.call("events", status="someday"), "bad_request")


@case("event show")
async def _event_show(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    event = await admin.call("event create", name="Brno Open", ladder="scrabble",
                             date="2026-03-14")
    rows = ["Brno Open,2026-03-14,alice,bob,412,389,,", "Brno Open,2026-03-14,carol,alice,350,350,,",
            "Brno Open,2026-03-14,bob,carol,300,0,,no:forfeit"]
    games = (await admin.call("event import", new=True, event=event["id"], csv=results_text(rows)))["games"]
    spectator = await lobby.client()
    shown = await spectator.call("event show", event=event["id"])
    assert {k: shown[k] for k in ("id", "name", "ladder", "date", "status")} == {
        "id": event["id"], "name": "Brno Open", "ladder": "scrabble", "date": "2026-03-14",
        "status": "open"}
    assert [(g["match"], g["side_a"], g["side_b"], g["score_a"], g["score_b"], g["rated"],
             g["unrated"]) for g in shown["games"]] == [
        (games[0]["match"], "alice", "bob", 412, 389, True, None),
        (games[1]["match"], "carol", "alice", 350, 350, True, None),
        (games[2]["match"], "bob", "carol", 300, 0, False, "forfeit")]
    # the standings count the rated games only
    assert shown["standings"] == [
        {"player": "alice", "played": 2, "won": 1, "drawn": 1, "lost": 0, "points": 1.5},
        {"player": "carol", "played": 1, "won": 0, "drawn": 1, "lost": 0, "points": 0.5},
        {"player": "bob", "played": 1, "won": 0, "drawn": 0, "lost": 1, "points": 0.0}]
    await expect_error(spectator.call("event show", event=999), "not_found")


@case("player remove")
async def _player_remove(lobby: LobbyServer, tmp: Path) -> None:
    admin = await lobby.admin()
    alice = await lobby.player("alice")
    night = (await admin.call("event create", name="BG night", ladder="backgammon"))["id"]
    await admin.call("event result", new=True, event=night, side_a="ann", side_b="ben",
                     score_a=3, score_b=1, length=3)
    # a name never seen on the ladder is refused unless the director says it is new
    refused = await admin.request("event result", {"event": night, "side_a": "ann",
                                                   "side_b": "bne", "score_a": 3, "score_b": 0,
                                                   "length": 3})
    assert refused["error"] == {"code": "new_player", "message": (
        "bne has never played on backgammon: check the spelling, or confirm bne as a new "
        "player.")}
    assert len((await admin.call("event show", event=night))["games"]) == 1
    typo = await admin.call("event result", new=True, event=night, side_a="ann", side_b="bne",
                            score_a=3, score_b=0, length=3)
    assert typo["new_players"] == ["bne"]
    # while a result names them, they stay; voided, they can go
    await expect_error(admin.call("player remove", name="bne"), "conflict")
    await admin.call("void", match=typo["match"], reason="misspelt")
    await expect_error(alice.call("player remove", name="bne"), "forbidden")
    assert await admin.call("player remove", name="BNE") == {"player": "bne", "removed": True}
    await expect_error(alice.call("whois", name="bne"), "not_found")
    await expect_error(admin.call("player remove", name="bne"), "not_found")
    assert "bne" not in [r.player for r in (await alice.ladder("backgammon", all=True)).players]
    # an account, or a name with results, is not removed
    await expect_error(admin.call("player remove", name="alice"), "conflict")
    await expect_error(admin.call("player remove", name="ben"), "conflict")
    # the name can be entered again, as new
    again = await admin.call("event result", new=True, event=night, side_a="bne", side_b="ben",
                             score_a=3, score_b=2, length=3)
    assert again["new_players"] == ["bne"]


@case("void")
async def _void(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    admin = await lobby.admin()
    watcher = await lobby.client()
    await watcher.watch("backgammon")
    m1 = await start_match(alice, bob, length=3)
    await bob.resign()
    m2 = await start_match(carol, alice, length=5)
    await alice.resign()
    watcher.drain_pushes()
    await expect_error(alice.call("void", match=m1, reason="mistake"), "forbidden")
    voided = await admin.call("void", match=m1, reason="wrong players")
    assert {k: voided[k] for k in ("match", "ladder", "status", "reason", "recomputed")} == {
        "match": m1, "ladder": "backgammon", "status": "voided", "reason": "wrong players",
        "recomputed": True}
    # the ladder is what it would have been without the voided match
    model = FibsModel()
    model.play("carol", "alice", 5)
    table = await watcher.ladder("backgammon", all=True)
    rated = {r.player: r for r in table.players}
    for name, entry in model.players.items():
        assert close(rated[name].rating, entry.rating)
        assert rated[name].extras["experience"] == entry.experience
    history = await watcher.call("history", name="alice", ladder="backgammon")
    assert [e["cause"] for e in history["entries"]] == [{"match": m2}]
    assert close(history["entries"][0]["before"], 1500.0)
    corrected = await bob.next_push("match_corrected")
    assert corrected["data"]["match"] == m1 and corrected["data"]["status"] == "voided"
    pushes = await settle(watcher)
    assert pushes[-1]["event"] == "ladder_updated"
    check_ladder_update(pushes[-1]["data"],
                        await watcher.call("ladder", ladder="backgammon", all=True),
                        [c["player"] for c in voided["changes"]])
    await expect_error(admin.call("void", match=m1, reason="again"), "conflict")
    await expect_error(admin.call("void", match=999, reason="none"), "not_found")
    # a live match can be voided too; it ends unrated
    m3 = await start_match(alice, bob)
    assert (await admin.call("void", match=m3, reason="test"))["recomputed"] is False
    assert (await admin.whois("alice")).status == "ready"


@case("disputes")
async def _disputes(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    assert await admin.call("disputes") == {"disputes": []}
    mid = await start_match(alice, bob, length=3)
    await alice.call("report win", score_a=3, score_b=2)
    assert await admin.call("disputes") == {"disputes": []}  # claimed, not disputed yet
    await bob.call("dispute", match=mid)
    await expect_error(bob.call("disputes"), "forbidden")
    since = (await bob.next_push("result_disputed"))["data"]["since"]
    listed = {"match": mid, "ladder": "backgammon", "length": 3, "a": "alice", "b": "bob",
              "status": "disputed", "claimant": "alice", "by": "bob", "scores": [3, 2],
              "since": since}
    (got,) = (await admin.call("disputes"))["disputes"]
    assert isinstance(got.pop("age"), int) and got == listed
    decided = await admin.adjudicate(mid, "alice")
    assert decided["match"] == mid
    assert await admin.call("disputes") == {"disputes": []}


@case("adjudicate")
async def _adjudicate(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    admin = await lobby.admin()
    model = FibsModel()
    mid = await start_match(alice, bob, length=3)
    await alice.call("report win", score_a=3, score_b=0)
    await bob.call("dispute", match=mid)
    await expect_error(admin.adjudicate(mid, "carol"), "bad_request")
    await expect_error(alice.adjudicate(mid, "alice"), "forbidden")
    decided = MatchFinished.from_dict(await admin.adjudicate(mid, "bob"))
    assert (decided.match, decided.winner, decided.how) == (mid, "bob", "adjudicate")
    check_changes(decided.changes, model.play("bob", "alice", 3))
    assert MatchFinished.from_dict((await alice.next_push("match_finished"))["data"]) == decided
    # a finished match can be decided the other way: the ladder is recomputed
    flipped = await admin.adjudicate(mid, "alice")
    assert (flipped["status"], flipped["winner"], flipped["recomputed"]) == (
        "finished", "alice", True)
    model = FibsModel()
    model.play("alice", "bob", 3)
    for name in ("alice", "bob"):
        row = (await admin.rating(name, "backgammon")).ratings[0]
        assert close(row.rating, model.players[name].rating)
    await expect_error(admin.adjudicate(mid, "alice"), "conflict")  # already alice's
    await expect_error(admin.adjudicate(999, "alice"), "not_found")


# ---- added by a plugin: the streaks plugin (tests/plugins/streaks) ---------------------------


@case("streak")
async def _streak(lobby: LobbyServer, tmp: Path) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    guest = await lobby.client()
    for _ in range(2):
        await start_match(alice, bob)
        await bob.resign()
    assert await guest.call("streak", name="alice") == {
        "player": "alice", "streaks": [{"ladder": "backgammon", "current": 2, "best": 2}]}
    await start_match(bob, alice)
    await alice.resign()
    assert (await guest.call("streak", name="ALICE"))["streaks"] == [
        {"ladder": "backgammon", "current": 0, "best": 2}]
    assert (await alice.call("streak", name="bob"))["streaks"] == [
        {"ladder": "backgammon", "current": 1, "best": 1}]
    await expect_error(guest.call("streak", name="nobody"), "not_found")
