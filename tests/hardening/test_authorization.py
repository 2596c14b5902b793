"""Authorization: every command × every role, with the outcome each one must get.

The table below names, for every command, the situation it is tried in (a live match
between two players, a claimed result, a dispute, a dropped opponent, an invitation,
an open event, a finished match) and the expected result for each role:

- ``guest``: connected, not logged in;
- ``player``: the player the command concerns (in the match, invited, answering the claim);
- ``other``: another logged-in player, not part of it;
- ``admin``: a tournament director, not part of it either.

The cases are generated from the command table (``server.plugins.command_table``), so a new
command of the project (the lobby's or the ratings plugin's) fails here until it is given its
row. A command of another installed plugin (an outside package: the test plugins streaks and
headtohead) gets a row made from its declaration: tried in a live match, its arguments made
from their kinds, and refused or answered as its declared role says. Each case runs on a real
server in a fresh situation (new players), and a refused command must leave the database
exactly as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from testkit.constants import ADMIN, ADMIN_PASSWORD, FAST_HASHING, PASSWORD
from testkit.db import dump_db
from testkit.outside import outside_commands, well_formed
from testkit.server_thread import ServerThread
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from clients import LobbyClient
from server.commands import ADMIN as ADMIN_ROLE
from server.commands import ANYONE, PLAYER, CommandSpec
from server.config import Config, Limits
from server.plugins import command_table
from server.users import add_user

COMMANDS = command_table()  # the lobby's own commands and its plugins'

ROLES = ("guest", "player", "other", "admin")
OK = "ok"
NLI = "not_logged_in"
FORBIDDEN = "forbidden"
CONFLICT = "conflict"
NOT_FOUND = "not_found"


class Row(NamedTuple):
    scene: str
    args: Callable[[Scene], dict[str, Any]]
    guest: str
    player: str
    other: str
    admin: str


def csv_for(s: Scene) -> str:
    return ("event,date,side_a,side_b,score_a,score_b,length,rated\n"
            f"Open,2026-03-14,{s.player},{s.opponent},5,3,,\n")


# The scene of each command, its arguments, and the outcome for guest, player, other, admin.
EXPECTED: dict[str, Row] = {
    "help": Row("live", lambda s: {"command": "resign"}, OK, OK, OK, OK),
    "register": Row("live", lambda s: {"name": fresh("n"), "password": PASSWORD},
                    OK, CONFLICT, CONFLICT, CONFLICT),
    "login": Row("live", lambda s: {"name": s.spare, "password": PASSWORD}, OK, OK, OK, OK),
    "logout": Row("live", lambda s: {}, NLI, OK, OK, OK),
    # the spare account's session token (it logged out, which ends only that login's session)
    "resume": Row("live", lambda s: {"token": s.token}, OK, OK, OK, OK),
    "who": Row("live", lambda s: {}, OK, OK, OK, OK),
    "whois": Row("live", lambda s: {"name": s.player}, OK, OK, OK, OK),
    "rating": Row("live", lambda s: {"name": s.player, "ladder": "backgammon"}, OK, OK, OK, OK),
    "ladder": Row("live", lambda s: {"ladder": "backgammon", "all": True}, OK, OK, OK, OK),
    "history": Row("live", lambda s: {"name": s.player}, OK, OK, OK, OK),
    "ladders": Row("live", lambda s: {}, OK, OK, OK, OK),
    "evaluate": Row("live", lambda s: {"ladder": "backgammon"}, OK, OK, OK, OK),
    "watch": Row("live", lambda s: {"ladder": "backgammon"}, OK, OK, OK, OK),
    "unwatch": Row("live", lambda s: {"ladder": "backgammon"}, OK, OK, OK, OK),
    "ready off": Row("live", lambda s: {}, NLI, OK, OK, OK),
    "ready on": Row("live", lambda s: {}, NLI, OK, OK, OK),
    # talk: only the player has an opponent to say to; nobody blocks or is muted yet
    "tell": Row("live", lambda s: {"name": s.target, "text": "hi"}, NLI, OK, OK, OK),
    "say": Row("live", lambda s: {"text": "gl"}, NLI, OK, CONFLICT, CONFLICT),
    "shout": Row("live", lambda s: {"text": "hello all"}, NLI, OK, OK, OK),
    "shouts": Row("live", lambda s: {}, OK, OK, OK, OK),
    "block": Row("live", lambda s: {"name": s.target}, NLI, OK, OK, OK),
    "unblock": Row("live", lambda s: {"name": s.target}, NLI, OK, OK, OK),
    "mute": Row("live", lambda s: {"name": s.target, "minutes": 5}, NLI, FORBIDDEN, FORBIDDEN, OK),
    "unmute": Row("live", lambda s: {"name": s.target}, NLI, FORBIDDEN, FORBIDDEN, OK),
    # the player seeks a match of a length nobody else seeks; a seek of another length nobody
    # seeks (the admins play in every scene) replaces theirs
    "seek": Row("seeking", lambda s: {"ladder": "backgammon", "length": s.length + 500},
                NLI, OK, OK, OK),
    "unseek": Row("seeking", lambda s: {}, NLI, OK, NOT_FOUND, NOT_FOUND),
    "seeks": Row("seeking", lambda s: {"ladder": "backgammon"}, OK, OK, OK, OK),
    # the player is in a live match already; the target is free
    "invite": Row("live", lambda s: {"name": s.target, "ladder": "backgammon", "length": 3},
                  NLI, CONFLICT, OK, OK),
    "stake": Row("live", lambda s: {"name": s.target, "ladder": "backgammon", "length": 3},
                 NLI, OK, OK, OK),
    "invitations": Row("invited", lambda s: {}, NLI, OK, OK, OK),
    # the player invited the target, nobody else did
    "uninvite": Row("inviting", lambda s: {"name": s.target}, NLI, OK, NOT_FOUND, NOT_FOUND),
    # the inviter invited the player, nobody else
    "join": Row("invited", lambda s: {"name": s.inviter}, NLI, OK, NOT_FOUND, NOT_FOUND),
    "decline": Row("invited", lambda s: {"name": s.inviter}, NLI, OK, NOT_FOUND, NOT_FOUND),
    "resign": Row("live", lambda s: {}, NLI, OK, CONFLICT, CONFLICT),
    "report win": Row("live", lambda s: {"score_a": 3, "score_b": 1}, NLI, OK, CONFLICT, CONFLICT),
    # the opponent claimed a win; the player answers it
    "confirm": Row("claimed", lambda s: {"match": s.match}, NLI, OK, FORBIDDEN, FORBIDDEN),
    "dispute": Row("claimed", lambda s: {"match": s.match}, NLI, OK, FORBIDDEN, FORBIDDEN),
    # the opponent dropped (the drop timeout is 0 here)
    "claim": Row("dropped", lambda s: {"match": s.match}, NLI, OK, FORBIDDEN, FORBIDDEN),
    "abort": Row("live", lambda s: {}, NLI, OK, CONFLICT, CONFLICT),
    "event create": Row("live", lambda s: {"name": "Spring Open", "ladder": "scrabble"},
                        NLI, FORBIDDEN, FORBIDDEN, OK),
    "event result": Row("event", lambda s: {"event": s.event, "side_a": s.player, "side_b": s.opponent,
                                            "score_a": 5, "score_b": 3, "new": True},
                        NLI, FORBIDDEN, FORBIDDEN, OK),
    "event import": Row("event", lambda s: {"event": s.event, "csv": csv_for(s), "new": True},
                        NLI, FORBIDDEN, FORBIDDEN, OK),
    "event close": Row("event", lambda s: {"event": s.event}, NLI, FORBIDDEN, FORBIDDEN, OK),
    "events": Row("event", lambda s: {"status": "open"}, OK, OK, OK, OK),
    "event show": Row("event", lambda s: {"event": s.event}, OK, OK, OK, OK),
    # the player's match is disputed: only an admin lists the disputes
    "disputes": Row("disputed", lambda s: {}, NLI, FORBIDDEN, FORBIDDEN, OK),
    # the player won the finished match: playing in it gives no right to correct it
    "void": Row("finished", lambda s: {"match": s.match, "reason": "wrong players"},
                NLI, FORBIDDEN, FORBIDDEN, OK),
    "adjudicate": Row("disputed", lambda s: {"match": s.match, "winner": s.player},
                      NLI, FORBIDDEN, FORBIDDEN, OK),
    # a name entered by mistake, its result voided
    "player remove": Row("entry", lambda s: {"name": s.target}, NLI, FORBIDDEN, FORBIDDEN, OK),
    # an account of its own (the target), so a ban made here keeps no other case's player out
    "ban": Row("live", lambda s: {"name": s.target, "reason": "spam"},
               NLI, FORBIDDEN, FORBIDDEN, OK),
    "unban": Row("live", lambda s: {"name": s.target}, NLI, FORBIDDEN, FORBIDDEN, OK),
}



def derived(spec: CommandSpec) -> Row:
    """An outside plugin's command: its required arguments from their kinds (names: the player,
    then their opponent), and the outcome its role gives each caller."""
    def args(s: Scene) -> dict[str, Any]:
        return well_formed(spec, (s.player, s.opponent, s.other, s.target), s.match, csv_for(s))

    if spec.role == ANYONE:
        return Row("live", args, OK, OK, OK, OK)
    if spec.role == PLAYER:
        return Row("live", args, NLI, OK, OK, OK)
    return Row("live", args, NLI, FORBIDDEN, FORBIDDEN, OK)


OUTSIDE = outside_commands()
EXPECTED.update({name: derived(spec) for name, spec in OUTSIDE.items() if name not in EXPECTED})

CASES = [(name, role) for name in COMMANDS for role in ROLES]
CHECKED: list[tuple[str, str]] = []
DIRECTORS = (ADMIN, "director2", "director3", "director4")
_names = itertools.count(1)


def fresh(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


# ---- the situations -----------------------------------------------------------------------


@dataclass
class Scene:
    url: str
    player: str = ""
    opponent: str = ""
    other: str = ""
    target: str = ""
    inviter: str = ""
    spare: str = ""
    token: str = ""
    match: int | None = None
    event: int | None = None
    length: int = 1
    clients: dict[str, LobbyClient] = field(default_factory=dict)
    extra: list[LobbyClient] = field(default_factory=list)

    async def client(self) -> LobbyClient:
        c = LobbyClient(self.url, reconnect=False)
        await c.connect()
        self.extra.append(c)
        return c

    async def account(self, prefix: str, stay: bool = True) -> tuple[str, LobbyClient]:
        name = fresh(prefix)
        c = await self.client()
        await c.register(name, PASSWORD)
        if not stay:
            await c.logout()
            again = await self.client()  # a login whose session outlives its connection
            self.token = (await again.login(name, PASSWORD))["session"]["token"]
            await again.close()
        return name, c

    async def close(self) -> None:
        for c in self.extra:
            await c.close()


async def start_match(a: LobbyClient, a_name: str, b: LobbyClient, b_name: str) -> int:
    await a.call("invite", name=b_name, ladder="backgammon", length=3)
    await b.next_push("invited")
    return int((await b.call("join", name=a_name))["match"])


async def build(kind: str, url: str, director: str = ADMIN) -> Scene:
    s = Scene(url)
    s.player, player = await s.account("p")
    s.opponent, opponent = await s.account("q")
    s.other, other = await s.account("o")
    s.target, _ = await s.account("t")
    s.spare, guest = await s.account("s", stay=False)  # an account, and a guest once logged out
    admin = await s.client()
    await admin.login(director, ADMIN_PASSWORD)
    s.clients = {"guest": guest, "player": player, "other": other, "admin": admin}
    if kind == "invited":
        s.inviter, inviter = await s.account("d")
        await inviter.call("invite", name=s.player, ladder="backgammon")
        await player.next_push("invited")
        return s
    if kind == "inviting":
        await player.call("invite", name=s.target, ladder="backgammon")
        return s
    if kind == "seeking":
        s.length = 2 + next(_names) % 400  # its own: no other scene's seeker is paired with it
        await player.call("seek", ladder="backgammon", length=s.length)
        return s
    if kind == "event":
        s.event = (await admin.call("event create", name="Open", ladder="foosball-singles"))["id"]
        return s
    if kind == "entry":
        s.event = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
        s.target = fresh("typo")
        typo = await admin.call("event result", event=s.event, side_a=s.target,
                                side_b=s.opponent, score_a=400, score_b=300, new=True)
        await admin.call("void", match=typo["match"], reason="misspelt")
        return s
    s.match = await start_match(player, s.player, opponent, s.opponent)
    if kind in ("claimed", "disputed"):
        await opponent.call("report win", score_a=3, score_b=0)
        await player.next_push("result_claimed")
    if kind == "disputed":
        await player.call("dispute", match=s.match)
    elif kind == "finished":
        await opponent.call("resign")
    elif kind == "dropped":
        await opponent.close()
        for _ in range(200):  # until the server has seen the connection go
            if not (await guest.call("whois", name=s.opponent))["online"]:
                break
            await asyncio.sleep(0.01)
    return s


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, template_db: Path) -> Iterator[ServerThread]:
    db = tmp_path_factory.mktemp("authorization") / "lobby.db"
    db.write_bytes(template_db.read_bytes())
    config = Config(database=str(db), password=FAST_HASHING)
    for name in DIRECTORS[1:]:  # one admin account per situation set up at once
        assert asyncio.run(add_user(config, name, ADMIN_PASSWORD, admin=True)) == 0
    # every scene registers and logs in its players from 127.0.0.1, the admins again and again
    running = ServerThread(db, Limits(registrations_per_hour=0, account_logins_per_minute=0,
                                      address_logins_per_minute=0), drop_timeout=0.0).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
async def scenes(server: ServerThread) -> AsyncIterator[list[Scene]]:
    made: list[Scene] = []
    try:
        yield made
    finally:
        for s in made:
            await s.close()


async def scene(server: ServerThread, made: list[Scene], kind: str) -> Scene:
    s = await build(kind, server.url)
    made.append(s)
    return s


# ---- the table ----------------------------------------------------------------------------


def test_every_command_has_its_row() -> None:
    assert {"streak", "h2h"} <= set(OUTSIDE), "the test plugins' commands are tried here too"
    assert set(EXPECTED) == set(COMMANDS), (
        f"commands without a row: {sorted(set(COMMANDS) - set(EXPECTED))}; "
        f"rows without a command: {sorted(set(EXPECTED) - set(COMMANDS))}")


def test_the_rows_agree_with_the_declared_roles() -> None:
    """The table is written out by hand; it must not contradict the command table's roles."""
    for name, row in EXPECTED.items():
        role = COMMANDS[name].role
        if role == ANYONE:
            assert row.guest != NLI, name
        else:
            assert row.guest == NLI, name
        if role == ADMIN_ROLE:
            assert (row.player, row.other, row.admin) == (FORBIDDEN, FORBIDDEN, OK), name
        if role == PLAYER:
            assert OK in (row.player, row.other, row.admin), name


@pytest.mark.parametrize("name", list(COMMANDS))
async def test_command_by_role(server: ServerThread, scenes: list[Scene], name: str) -> None:
    """The command from each of the four roles, each in a fresh copy of its situation."""
    row = EXPECTED.get(name)
    assert row is not None, f"{name!r} has no row in EXPECTED: add one"
    # the four situations are set up at once (their writes share commits), then used in turn
    built = await asyncio.gather(*(build(row.scene, server.url, d) for d in DIRECTORS))
    scenes.extend(built)
    for role, s in zip(ROLES, built, strict=True):
        expected = getattr(row, role)
        before = dump_db(server.db)
        reply = await s.clients[role].request(name, row.args(s))
        got = OK if reply["ok"] else reply["error"]["code"]
        assert got == expected, (name, role, reply)
        assert reply["cmd"] == name
        if not reply["ok"]:
            assert dump_db(server.db) == before, f"a refused {name!r} from {role} changed the database"
            # the refused session is still usable
            assert (await s.clients[role].request("ladders"))["ok"] is True
        CHECKED.append((name, role))


def test_every_command_was_tried_by_every_role() -> None:
    """Runs after the cases above (when they ran in this session)."""
    if not CHECKED:
        pytest.skip("the table cases did not run in this session")
    assert sorted(CHECKED) == sorted(CASES)
    print(f"\nauthorization: {len(CHECKED)} command × role cases checked "
          f"({len(COMMANDS)} commands × {len(ROLES)} roles)")


# ---- the checks every message gets ---------------------------------------------------------


async def test_a_claim_is_answered_by_the_opponent_only(server: ServerThread,
                                                        scenes: list[Scene]) -> None:
    s = await scene(server, scenes, "claimed")
    claimant = await s.client()
    await claimant.login(s.opponent, PASSWORD)  # the opponent's session, replaced: same player
    before = dump_db(server.db)
    for cmd in ("confirm", "dispute"):
        reply = await claimant.request(cmd, {"match": s.match})
        assert reply["error"]["code"] == FORBIDDEN, reply
        assert "own reported win" in reply["error"]["message"]
    assert (await claimant.request("report win"))["error"]["code"] == CONFLICT  # only once
    assert dump_db(server.db) == before
    finished = await s.clients["player"].call("confirm", match=s.match)
    assert finished["winner"] == s.opponent and finished["how"] == "confirm"


async def test_nobody_plays_themselves(server: ServerThread, scenes: list[Scene]) -> None:
    s = await scene(server, scenes, "live")
    other = s.clients["other"]
    for name in (s.other, s.other.upper()):
        reply = await other.request("invite", {"name": name, "ladder": "backgammon"})
        assert reply["error"]["code"] == "bad_request", reply
    reply = await s.clients["admin"].request("invite", {"name": ADMIN, "ladder": "backgammon"})
    assert reply["error"]["code"] == "bad_request", reply


async def test_nobody_holds_two_live_matches(server: ServerThread, scenes: list[Scene]) -> None:
    s = await scene(server, scenes, "event")  # everyone free
    player, other = s.clients["player"], s.clients["other"]
    opponent = await s.client()
    await opponent.login(s.opponent, PASSWORD)
    s.inviter, inviter = await s.account("d")
    await inviter.call("invite", name=s.opponent, ladder="backgammon")
    await player.call("invite", name=s.other, ladder="backgammon")
    first = await start_match(player, s.player, opponent, s.opponent)
    before = dump_db(server.db)
    # invitations made before the match cannot start a second one, from either side
    assert (await opponent.request("join", {"name": s.inviter}))["error"]["code"] == CONFLICT
    assert (await other.request("join", {"name": s.player}))["error"]["code"] == CONFLICT
    # nobody invites a player who is playing, and a player who is playing invites nobody
    reply = await other.request("invite", {"name": s.player, "ladder": "backgammon"})
    assert reply["error"]["code"] == CONFLICT, reply
    reply = await player.request("invite", {"name": s.other, "ladder": "backgammon"})
    assert reply["error"]["code"] == CONFLICT, reply
    assert dump_db(server.db) == before
    assert (await other.call("whois", name=s.player))["match"]["match"] == first


async def test_a_player_acts_only_on_their_own_match(server: ServerThread,
                                                     scenes: list[Scene]) -> None:
    """Two live matches: each player's resign, report and abort reach their own only."""
    s = await scene(server, scenes, "claimed")
    other = s.clients["other"]
    partner = await s.client()
    await partner.login(s.target, PASSWORD)
    theirs = await start_match(other, s.other, partner, s.target)
    before = dump_db(server.db)
    for cmd in ("confirm", "dispute", "claim"):
        assert (await other.request(cmd, {"match": s.match}))["error"]["code"] == FORBIDDEN
        assert (await s.clients["player"].request(cmd, {"match": theirs}))["error"]["code"] == FORBIDDEN
    assert dump_db(server.db) == before
    done = await other.call("resign")
    assert done["match"] == theirs and done["winner"] == s.target
    status = await other.call("whois", name=s.player)
    assert status["match"]["match"] == s.match and status["match"]["status"] == "claimed"


async def test_a_logged_out_session_can_do_nothing_more(server: ServerThread,
                                                        scenes: list[Scene]) -> None:
    s = await scene(server, scenes, "claimed")
    player = s.clients["player"]
    assert (await player.call("logout"))["logged_in"] is False
    before = dump_db(server.db)
    for cmd, args in (("resign", {}), ("report win", {}), ("confirm", {"match": s.match}),
                      ("dispute", {"match": s.match}), ("abort", {}), ("logout", {}),
                      ("invite", {"name": s.other, "ladder": "backgammon"}),
                      ("event create", {"name": "X", "ladder": "scrabble"})):
        reply = await player.request(cmd, args)
        assert reply["error"]["code"] == NLI, (cmd, reply)
    assert dump_db(server.db) == before
    # the match waits for its player, untouched
    whois = await s.clients["other"].call("whois", name=s.player)
    assert whois["online"] is False and whois["match"]["status"] == "claimed"


async def test_a_replaced_session_is_closed_and_can_send_nothing_more(server: ServerThread,
                                                                      scenes: list[Scene]) -> None:
    s = await scene(server, scenes, "live")
    async with connect(server.url) as old:
        await old.recv()  # hello
        await old.send(json.dumps({"id": 1, "cmd": "login",
                                   "args": {"name": s.opponent, "password": PASSWORD}}))
        while "event" in (reply := json.loads(await old.recv())):
            pass
        assert reply["ok"] is True and reply["id"] == 1, reply
        newer = await s.client()
        await newer.login(s.opponent, PASSWORD)
        # the old connection is told, then closed with 4000; what it sends is not acted on
        replies: list[str] = []
        with contextlib.suppress(ConnectionClosed):  # it may be closed already
            await old.send('{"id": 2, "cmd": "resign"}')
        with contextlib.suppress(ConnectionClosed):
            async with asyncio.timeout(5):
                async for frame in old:
                    replies.append(str(frame))
        assert old.close_code == 4000, (old.close_code, replies)
        assert any('"event":"logged_out"' in r for r in replies), replies
        assert not any('"id":2' in r for r in replies), replies
        with pytest.raises(ConnectionClosed):
            await old.send('{"id": 3, "cmd": "resign"}')
    whois = await s.clients["other"].call("whois", name=s.opponent)
    assert whois["match"]["status"] == "playing"
    # the same for the client library: it is told, closed, and does not come back by itself
    lib = await s.client()
    await lib.login(s.opponent, PASSWORD)
    again = await s.client()
    await again.login(s.opponent, PASSWORD)
    assert (await lib.next_push("logged_out"))["data"]["reason"]
    assert (await lib.next_push("disconnected"))["data"]["code"] == 4000
    assert not lib.connected and lib.reconnects == 0
    finished = await again.call("resign")  # the newest session is the one that plays
    assert finished["winner"] == s.player
