"""A seeded random walk through whole sessions, checked against a restart and a replay.

The fuzz tests (tests/hardening) send every shape of frame; this walk sends
plausible sequences instead, so that the deep states are reached: live matches
ended by every route (resign, claimed win confirmed or disputed, abort,
decline, a drop and the opponent's claim), admin corrections of live and event
games, and events on every ladder with a few games (recorded one by one or
imported), none, or only unrated ones.
Every reply must be ``ok`` or a documented refusal.
Every few dozen steps the server is stopped, ``matchlobby replay --check``
must agree with the stored ratings, and after a restart the ladders,
histories and profiles shown must be the ones shown before (what the server
held in memory is what it stored). A walk of this kind found a ČAS close with
no rated game emptying the stored Peklo values, seen only after a restart and
only until the next close with games: hence the checks along the way.

``MATCHLOBBY_WALK_SEEDS`` walks are taken alone, seeded 1, 2, ... (1 unless set: one walk
reaches every state the walk is for, :data:`REACHED`; CI takes 3); the three walks at once
run whatever it is. A walk alone has :data:`CHECKPOINTS` stops; each of the three at once
``MATCHLOBBY_WALK_CHECKPOINTS`` (3 unless set, CI 5); :data:`SCENARIOS` matches or events
come before each stop.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import add_user, run_cli_async
from testkit.constants import PASSWORD, PLAY_FREELY
from testkit.server_loop import LobbyServer
from testkit.sizes import count

from clients import LobbyClient
from server.config import Limits, default_ladders

PLAYERS = ("alice", "bob", "carol", "dave")
ERROR_CODES = {"bad_request", "not_logged_in", "forbidden", "not_found", "conflict"}
EVENT_LADDERS = ("scrabble", "foosball-singles", "foosball-doubles", "backgammon")
CHECKPOINTS = 5  # restarts and replays in one walk taken alone
CHECKPOINTS_AT_ONCE = count("MATCHLOBBY_WALK_CHECKPOINTS", 3)  # in each of the three at once
SCENARIOS = 30  # matches or events between two checkpoints
# What every walk must have reached (a command and its outcome), or it tested too little.
REACHED = (("resign", "ok"), ("confirm", "ok"), ("dispute", "ok"), ("abort", "ok"),
           ("claim", "ok"), ("claim", "conflict"), ("void", "ok"), ("adjudicate", "ok"),
           ("event close", "ok"), ("event result", "ok"), ("event import", "ok"))
CROWDS = (PLAYERS, ("erin", "fred", "gina", "hugo"), ("ivan", "jane", "kurt", "lara"))
DROP_TIMEOUT = 0.2  # seconds a dropped player's opponent waits before a claim
# The walk sends as fast as replies come back, which the per-connection rate limit (and every
# player's reads from one address, the read budget) refuses.
WALK_LIMITS = Limits(messages_per_second=1e6, burst=1_000_000, read_units_per_second=0,
                     **PLAY_FREELY)
SEEDS = range(1, count("MATCHLOBBY_WALK_SEEDS", 1) + 1)


class Walk:
    """One walk: its clients, the disputed matches the admin has yet to decide, and what
    the replies were."""

    def __init__(self, harness: LobbyServer, rng: random.Random, names: tuple[str, ...] = PLAYERS,
                 admin: tuple[str, str] | None = None,
                 servers: tuple[LobbyServer, ...] = ()) -> None:
        self.harness = harness
        self.servers = servers  # several servers of one database: each login picks one
        self.rng = rng
        self.names = names
        self.admin_login = admin  # the harness's admin when None
        self.admin: LobbyClient
        self.players: list[LobbyClient] = []
        self.outcomes: Counter[tuple[str, str]] = Counter()
        self.disputed: list[tuple[int, str, str]] = []  # match, its two players
        self.event_games: list[int] = []

    async def send(self, client: LobbyClient, cmd: str, **args: Any) -> dict[str, Any]:
        reply = await client.request(cmd, args)
        if reply["ok"]:
            self.outcomes[cmd, "ok"] += 1
        else:
            code = reply["error"]["code"]
            assert code in ERROR_CODES, (cmd, args, reply)
            self.outcomes[cmd, code] += 1
        client.drain_pushes()
        return reply

    def server(self) -> LobbyServer:
        return self.rng.choice(self.servers) if self.servers else self.harness

    async def log_in(self) -> None:
        """Everyone on new connections: after a start or a restart (live matches are kept)."""
        self.players = []
        for name in self.names:
            client = await self.server().client()
            await client.request("register", {"name": name, "password": PASSWORD})
            assert (await client.login(name, PASSWORD))["player"] == name
            self.players.append(client)
        if self.admin_login is None:
            self.admin = await self.server().admin()
        else:
            self.admin = await self.server().client()
            assert (await self.admin.login(*self.admin_login))["role"] == "admin"

    async def match(self) -> None:
        rng = self.rng
        i, j = rng.sample(range(len(self.names)), 2)
        a, b = self.players[i], self.players[j]
        length = rng.choice([1, 3, 5, 7, "unlimited"])
        invite = {"name": self.names[j], "ladder": "backgammon", "length": length}
        if not (await self.send(a, "invite", **invite))["ok"]:
            await self.settle(a, b)  # one of them is still in a match
            if not (await self.send(a, "invite", **invite))["ok"]:
                return
        if rng.random() < 0.1:
            await self.send(b, "decline", name=self.names[i])
            return
        joined = await self.send(b, "join", name=self.names[i])
        if not joined["ok"]:
            return
        match = joined["data"]["match"]
        end = rng.random()
        if end < 0.45:
            await self.send(rng.choice([a, b]), "resign")
        elif end < 0.8:
            winner, loser = rng.sample([a, b], 2)
            top = length if isinstance(length, int) else 9
            scores = rng.choice([{}, {"score_a": top, "score_b": rng.randrange(top)},
                                 {"score_a": rng.randrange(top), "score_b": top},
                                 {"score_a": 3, "score_b": 3}])
            await self.send(winner, "report win", **scores)
            answer = rng.choice(["confirm", "dispute"])
            if (await self.send(loser, answer, match=match))["ok"] and answer == "dispute":
                self.disputed.append((match, self.names[i], self.names[j]))
        elif end < 0.92:
            await self.send(a, "abort")
            await self.send(b, "abort")
        else:
            await self.drop(i, b, match)
        if rng.random() < 0.2:
            if rng.random() < 0.5:
                await self.send(self.admin, "void", match=match, reason="walk")
            else:
                await self.send(self.admin, "adjudicate", match=match,
                                winner=rng.choice([self.names[i], self.names[j]]))

    async def drop(self, i: int, opponent: LobbyClient, match: int) -> None:
        """Player ``i`` drops; the opponent claims the match, too early or in time, and player
        ``i`` comes back (to resign the match if it was not claimed)."""
        await self.players[i].close()
        if self.rng.random() < 0.5:
            await asyncio.sleep(DROP_TIMEOUT * 1.5)
        await self.send(opponent, "claim", match=match)
        back = await self.server().client()
        assert (await back.login(self.names[i], PASSWORD))["player"] == self.names[i]
        self.players[i] = back
        await self.send(back, "resign")

    async def settle(self, *players: LobbyClient) -> None:
        """The admin decides the disputed matches; ``players`` resign any they still play."""
        for match, a, b in self.disputed:
            if self.rng.random() < 0.3:
                await self.send(self.admin, "void", match=match, reason="walk")
            else:
                await self.send(self.admin, "adjudicate", match=match, winner=self.rng.choice([a, b]))
        self.disputed.clear()
        for p in players:
            await self.send(p, "resign")

    async def event(self) -> None:
        rng = self.rng
        ladder = rng.choice(EVENT_LADDERS)
        name, day = f"Day {rng.randrange(1000)}", f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}"
        created = await self.send(self.admin, "event create", name=name, ladder=ladder, date=day)
        eid = created["data"]["id"]
        unrated_only = rng.random() < 0.25
        games = [self.game(ladder, unrated_only) for _ in range(rng.choice([0, 0, 1, 2, 3, 5]))]
        if games and rng.random() < 0.3:
            header = "event,date,side_a,side_b,score_a,score_b,length,rated\n"
            rows = "".join(f"{name},{day},{g['side_a']},{g['side_b']},{g['score_a']},{g['score_b']},"
                           f"{g.get('length', '')},{'no:forfeit' if 'unrated' in g else ''}\n"
                           for g in games)
            imported = await self.send(self.admin, "event import", event=eid, new=True,
                                       csv=header + rows)
            if imported["ok"]:
                self.event_games += [g["match"] for g in imported["data"]["games"]]
        else:
            for g in games:
                recorded = await self.send(self.admin, "event result", event=eid, new=True, **g)
                if recorded["ok"]:
                    self.event_games.append(recorded["data"]["match"])
        if self.event_games and rng.random() < 0.2:
            await self.correct(rng.choice(self.event_games))
        if rng.random() < 0.85:
            await self.send(self.admin, "event close", event=eid)
        if self.event_games and rng.random() < 0.2:
            await self.correct(rng.choice(self.event_games))

    def game(self, ladder: str, unrated: bool) -> dict[str, Any]:
        """One game's ``event result`` arguments (an FIBS event's games are rated at once)."""
        rng = self.rng
        if ladder == "foosball-doubles":
            p = rng.sample(self.names, 4)
            game: dict[str, Any] = {"side_a": f"{p[0]}+{p[1]}", "side_b": f"{p[2]}+{p[3]}"}
        else:
            game = dict(zip(("side_a", "side_b"), rng.sample(self.names, 2), strict=True))
        if ladder == "backgammon":
            length = game["length"] = rng.choice([1, 3, 7])
            scores = [length, rng.randrange(length)]
            rng.shuffle(scores)
            game.update(score_a=scores[0], score_b=scores[1])
        else:
            top = 500 if ladder == "scrabble" else 10
            game.update(score_a=rng.randint(0, top), score_b=rng.randint(0, top))
        if unrated or rng.random() < 0.1:
            game["unrated"] = "forfeit"
        return game

    async def correct(self, match: int) -> None:
        """Void an event's game, or hand it to a player (of either side, or neither)."""
        if self.rng.random() < 0.5:
            await self.send(self.admin, "void", match=match, reason="walk")
        else:
            await self.send(self.admin, "adjudicate", match=match, winner=self.rng.choice(self.names))


async def views(client: LobbyClient, names: tuple[str, ...] = PLAYERS) -> dict[str, Any]:
    """What anyone can see of the ladders and the players (not who is online)."""
    seen: dict[str, Any] = {}
    for ladder in default_ladders():
        seen[ladder.name] = await client.call("ladder", ladder=ladder.name, all=True, count=1000)
    for name in names:
        seen[f"history {name}"] = await client.call("history", name=name)
        profile = await client.call("whois", name=name)
        seen[f"whois {name}"] = {k: v for k, v in profile.items()
                                 if k not in ("online", "status", "last_login")}
    return seen


async def restart_and_replay(harness: LobbyServer, watcher: LobbyClient,
                             names: tuple[str, ...] = PLAYERS) -> LobbyClient:
    """Restart the server: everyone sees what they saw before, and a replay agrees."""
    before = await views(watcher, names)
    await harness.stop()
    done = await run_cli_async(["replay", "--check", "--db", str(harness.db)], harness.db.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    await harness.start(DROP_TIMEOUT)
    watcher = await harness.client()
    assert await views(watcher, names) == before
    return watcher


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_random_walk_survives_restarts_and_replays(harness: LobbyServer, seed: int) -> None:
    harness.limits = WALK_LIMITS
    await harness.start(DROP_TIMEOUT)
    walk = Walk(harness, random.Random(seed))
    watcher = await harness.client()
    for _ in range(CHECKPOINTS):
        await walk.log_in()
        for _ in range(SCENARIOS):
            await (walk.match() if walk.rng.random() < 0.55 else walk.event())
        watcher = await restart_and_replay(harness, watcher)
    outcomes = walk.outcomes
    # the walk reached the states it is for
    for reached in REACHED:
        assert outcomes[reached] > 0, (reached, outcomes)


async def test_three_walks_at_once(harness: LobbyServer, fast_config: Path) -> None:
    """Three walks of their own players and admins interleave on the same ladders: matches
    finishing while events close and games are corrected, grouped into shared commits."""
    harness.limits = WALK_LIMITS
    admins = [("walker2", "walker2-password"), ("walker3", "walker3-password")]
    for name, password in admins:
        add_user(harness.db, fast_config, name, password, admin=True)
    await harness.start(DROP_TIMEOUT)
    walks = [Walk(harness, random.Random(10 + k), names, admin)
             for k, (names, admin) in enumerate(zip(CROWDS, [None, *admins], strict=True))]
    everyone = tuple(n for names in CROWDS for n in names)
    watcher = await harness.client()

    async def leg(walk: Walk) -> None:
        for _ in range(SCENARIOS):
            await (walk.match() if walk.rng.random() < 0.55 else walk.event())

    for _ in range(CHECKPOINTS_AT_ONCE):
        for walk in walks:
            await walk.log_in()
        await asyncio.gather(*(leg(walk) for walk in walks))
        watcher = await restart_and_replay(harness, watcher, everyone)
    outcomes = sum((walk.outcomes for walk in walks), Counter())
    for reached in REACHED:
        assert outcomes[reached] > 0, (reached, outcomes)


async def test_a_walk_over_three_servers(db_path: Path, backend: str) -> None:
    """The walk's players and admin spread over three servers of one PostgreSQL database
    (each login on any of them): every reply is ``ok`` or a documented refusal; at each stop
    every server shows the same ladders, histories and profiles, ``replay --check`` agrees
    with the stored ratings, and after the three restart they show what they showed."""
    if backend != "postgresql":
        pytest.skip("several servers share a PostgreSQL database; SQLite has one process")
    servers = tuple(LobbyServer(db_path, configure=lambda c, k=k: replace(c, node=f"node-{k}"))
                    for k in range(3))
    try:
        for server in servers:
            server.limits = WALK_LIMITS
            await server.start(DROP_TIMEOUT)
        walk = Walk(servers[0], random.Random(7), servers=servers)
        for _ in range(CHECKPOINTS_AT_ONCE):
            await walk.log_in()
            for _ in range(SCENARIOS):
                await (walk.match() if walk.rng.random() < 0.55 else walk.event())
            before = await same_everywhere(servers)
            for server in servers:
                await server.stop()
            done = await run_cli_async(["replay", "--check", "--db", str(db_path)],
                                       db_path.parent)
            assert done.returncode == 0, done.stdout + done.stderr
            for server in servers:
                await server.start(DROP_TIMEOUT)
            assert await same_everywhere(servers) == before
        for reached in (("resign", "ok"), ("confirm", "ok"), ("dispute", "ok"),
                        ("event close", "ok"), ("event result", "ok")):
            assert walk.outcomes[reached] > 0, (reached, walk.outcomes)
    finally:
        for server in servers:
            await server.aclose()


async def same_everywhere(servers: tuple[LobbyServer, ...]) -> dict[str, Any]:
    """What every server shows (:func:`views`), once they all show the same (the last
    pushes between them may be on their way): that view."""
    watchers = [await server.client() for server in servers]
    for _ in range(100):
        seen = [await views(w) for w in watchers]
        if all(v == seen[0] for v in seen):
            for w in watchers:
                await w.close()
            return seen[0]
        await asyncio.sleep(0.1)
    differ = sorted(k for k in seen[0] if any(v.get(k) != seen[0][k] for v in seen))
    raise AssertionError(f"the servers show different {differ}: "
                         + "; ".join(repr([v.get(differ[0]) for v in seen]) for _ in "x"))
