"""Concurrency: many clients racing on the same matches and events, checked for
exactly-once outcomes and consistent ratings.

One in-process server (``start_server`` on a free port, a real SQLite file).
In each round every pair of players runs one race on its own match and the
directors run several races on events, all at once. A race is a handful of
conflicting commands sent at the same moment from different connections (each
with a small random delay, so that the interleavings vary):

- answer: after ``report win``, the claimant ``resign``s while the opponent
  ``confirm``s or ``dispute``s: exactly one succeeds;
- decide: on a disputed match two admins ``adjudicate`` (the same winner) or
  two admins ``void`` while the players ``resign`` and ``confirm``: exactly one;
- claim: the opponent dropped longer than the drop timeout; the player
  ``claim``s while the opponent comes back and ``resign``s (or ``claim``s
  too) and an admin ``adjudicate``s: exactly one;
- join: both invited each other and both ``join``: exactly one match;
- first move: ``join`` against the inviter's ``resign`` or ``report win``
  (which must wait for the match or be refused cleanly);
- mixed: after ``report win``, ``resign``, ``confirm``/``dispute``,
  ``adjudicate`` and ``void`` all at once: corrections may legitimately
  follow an ending, so the successes must be explained by *some* order of them;
- close: two admins ``event close`` the same event while a third records an
  ``event result`` into it: exactly one close; the result is in the rated
  event if and only if it was acknowledged.

Every acknowledged racing command is sent once more with its id right away
(a client whose reply was lost): the stored reply must come back and nothing
runs twice. Spectators keep reading (``whois``, ``history``, ``event show``)
meanwhile, so the server's reads overlap its writes and each other.

Every refusal must be a clean ``conflict`` or ``not_found``, never ``internal``.
Each match's final row (status, winner, how, corrections, history rows) must be
what a serial order of the acknowledged commands gives; every event holds
exactly its acknowledged games; no match exists that no acknowledged ``join``
created; ``matchlobby replay --check`` passes and every ladder the server
shows equals ``matchlobby rate`` run on the log.

``MATCHLOBBY_RACE_SEED`` picks another seed; the seed is in every failure message.
``MATCHLOBBY_RACE_ROUNDS`` sets the rounds (4 unless set, every family raced; CI runs 20).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import os
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.cli import replay_check
from testkit.constants import ADMIN_PASSWORD, ADMINS, PASSWORD, open_config
from testkit.db import integrity, seq_drawn, seq_gaps, sql
from testkit.recompute import ladders_against_recomputation
from testkit.sizes import count

from clients import LobbyClient
from server.app import RunningServer, start_server
from server.config import load_config
from server.store import Database

SEED = int(os.environ.get("MATCHLOBBY_RACE_SEED", "7031"))
PAIRS = 40
EVENT_RACES_PER_ROUND = 12
ROUNDS = count("MATCHLOBBY_RACE_ROUNDS", 4)
MIN_RACES = 50 * ROUNDS
SPECTATORS = 8
SPECTATOR_PAUSE = 0.05  # between a spectator's reads, as a page reads, not flat out
CLEAN_REFUSALS = frozenset({"conflict", "not_found"})  # what a lost race may be told
DROP_TIMEOUT = 0.25
TIME_LIMIT = 120.0 + 10.0 * ROUNDS  # a hang guard on the whole test, whatever the machine's load
LIVE = ("playing", "claimed", "disputed")
POOLS = {
    "scrabble": [f"sc{i}" for i in range(8)],
    "foosball-singles": [f"fs{i}" for i in range(8)],
    "foosball-doubles": [f"fd{i}" for i in range(8)],
    "backgammon": [f"bg{i}" for i in range(8)],
}


@dataclass
class Step:
    who: str
    cmd: str
    args: dict[str, Any]
    reply: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.reply.get("ok"))

    @property
    def code(self) -> str | None:
        return None if self.ok else self.reply.get("error", {}).get("code")


@dataclass
class MatchRace:
    family: str
    a: str
    b: str
    before: list[Step]       # sequential, all acknowledged
    racers: list[Step]       # sent at once
    after: list[Step] = field(default_factory=list)  # sequential clean-up, all acknowledged
    observed: dict[str, Any] | None = None  # a's live match just after the race (whois)
    exclusive: bool = True

    @property
    def match(self) -> int:
        for s in [*self.before, *self.racers]:
            if s.cmd == "join" and s.ok:
                return int(s.reply["data"]["match"])
        raise AssertionError(f"no match was started: {self}")


@dataclass
class EventRace:
    event: int
    ladder: str
    setup_games: list[int]
    closes: list[Step]
    result: Step
    fresh: list[str]


@dataclass
class Ledger:
    match_races: list[MatchRace] = field(default_factory=list)
    event_races: list[EventRace] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    in_flight_conflicts: int = 0
    unclean: list[Step] = field(default_factory=list)
    retries: int = 0
    reads: int = 0
    bad_retries: list[tuple[Step, dict[str, Any]]] = field(default_factory=list)

    def note(self, step: Step) -> None:
        self.codes["ok" if step.ok else str(step.code)] += 1
        if not step.ok:
            if step.code not in CLEAN_REFUSALS:
                self.unclean.append(step)
            message = step.reply.get("error", {}).get("message", "")
            if "being" in message:  # "is already being decided", "is being decided right now"
                self.in_flight_conflicts += 1


class Players:
    """Connections by account name; a player who drops gets a new connection."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.clients: dict[str, LobbyClient] = {}

    async def connect(self, name: str, password: str, register: bool = False) -> LobbyClient:
        client = LobbyClient(self.url, reconnect=False)
        await client.connect()
        if register:
            await client.register(name, password)
        else:
            await client.login(name, password)
        self.clients[name] = client
        return client

    async def close(self) -> None:
        for client in self.clients.values():
            with contextlib.suppress(Exception):
                await client.close()


async def send(clients: Players, who: str, cmd: str, args: dict[str, Any] | None = None,
               ledger: Ledger | None = None) -> Step:
    step = Step(who, cmd, args or {})
    step.reply = await clients.clients[who].request(cmd, step.args, timeout=60)
    if ledger is not None:
        ledger.note(step)
    return step


async def must(clients: Players, who: str, cmd: str, args: dict[str, Any] | None = None
               ) -> Step:
    step = await send(clients, who, cmd, args)
    assert step.ok, f"seed {SEED}: {who} {cmd} {args} refused: {step.reply}"
    return step


async def race(rng: random.Random, clients: Players, ledger: Ledger,
               entries: list[tuple[str, str, dict[str, Any]]],
               before: dict[str, Callable[[], Awaitable[None]]] | None = None) -> list[Step]:
    """Send every entry at once (after a random pause of 0–3 ms each); all replies."""
    async def one(who: str, cmd: str, args: dict[str, Any]) -> Step:
        pause = rng.choice([0.0, 0.0, 0.0005, 0.001, 0.003])
        if before and who in before:
            await before[who]()
        await asyncio.sleep(pause)
        return await send(clients, who, cmd, args, ledger)
    steps = list(await asyncio.gather(*(one(*e) for e in entries)))
    await asyncio.gather(*(retry(clients, ledger, s) for s in steps if s.ok))
    return steps


async def retry(clients: Players, ledger: Ledger, step: Step) -> None:
    """Send an acknowledged request again with its id, as a client whose reply was lost
    would: the stored reply must come back, and nothing may run a second time."""
    again = await clients.clients[step.who].request(step.cmd, step.args, timeout=60,
                                                     request_id=step.reply["id"])
    ledger.retries += 1
    if not (again["ok"] and again.get("replayed") is True and again["data"] == step.reply["data"]):
        ledger.bad_retries.append((step, again))


async def start(clients: Players, a: str, b: str, length: int) -> list[Step]:
    invite = await must(clients, a, "invite", {"name": b, "ladder": "backgammon", "length": length})
    join = await must(clients, b, "join", {"name": a})
    return [invite, join]


async def whois_match(clients: Players, asker: str, name: str) -> dict[str, Any] | None:
    step = await must(clients, asker, "whois", {"name": name})
    data = step.reply["data"]
    # the match being played, or one that waits for an admin (it holds nobody)
    match: dict[str, Any] | None = data["match"] or (data["disputes"] or [None])[-1]
    return match


async def clean_up(clients: Players, rng: random.Random, admins: list[str], r: MatchRace) -> None:
    """End a match the race left live (so the pair can play on); recorded as steps."""
    r.observed = await whois_match(clients, r.a, r.a)
    if r.observed is None:
        return
    if r.observed["status"] == "claimed":
        # the claim is answered by whoever did not make it
        claim = next(s for s in [*r.before, *r.racers] if s.cmd == "report win" and s.ok)
        other = r.b if claim.who == r.a else r.a
        r.after.append(await must(clients, other, "confirm", {"match": r.observed["match"]}))
    elif r.observed["status"] == "playing":
        r.after.append(await must(clients, rng.choice([r.a, r.b]), "resign"))
    else:
        winner = rng.choice([r.observed["a"], r.observed["b"]])
        r.after.append(await must(clients, rng.choice(admins), "adjudicate",
                                  {"match": r.observed["match"], "winner": winner}))
    assert await whois_match(clients, r.a, r.a) is None


# ---- the match races -------------------------------------------------------------------


async def answer_race(rng: random.Random, clients: Players, ledger: Ledger, a: str, b: str,
                      admins: list[str]) -> MatchRace:
    length = rng.choice([1, 3, 5])
    before = await start(clients, a, b, length)
    mid = int(before[1].reply["data"]["match"])
    scores = {"score_a": length, "score_b": rng.randrange(length)} if rng.random() < 0.5 else {}
    before.append(await must(clients, a, "report win", scores))
    answer = rng.choice(["confirm", "dispute"])
    racers = await race(rng, clients, ledger, [(a, "resign", {}), (b, answer, {"match": mid})])
    return MatchRace("answer", a, b, before, racers)


async def decide_race(rng: random.Random, clients: Players, ledger: Ledger, a: str, b: str,
                      admins: list[str]) -> MatchRace:
    before = await start(clients, a, b, rng.choice([1, 3]))
    mid = int(before[1].reply["data"]["match"])
    before.append(await must(clients, a, "report win"))
    before.append(await must(clients, b, "dispute", {"match": mid}))
    first, second = rng.sample(admins, 2)
    if rng.random() < 0.5:
        winner = rng.choice([a, b])
        decisions = [(x, "adjudicate", {"match": mid, "winner": winner}) for x in (first, second)]
        family = "decide: adjudicate"
    else:
        decisions = [(x, "void", {"match": mid, "reason": "race"}) for x in (first, second)]
        family = "decide: void"
    entries = [*decisions, (a, "resign", {}), (b, "confirm", {"match": mid})]
    rng.shuffle(entries)
    return MatchRace(family, a, b, before, await race(rng, clients, ledger, entries))


async def claim_race(rng: random.Random, clients: Players, ledger: Ledger, a: str, b: str,
                     admins: list[str]) -> MatchRace:
    before = await start(clients, a, b, rng.choice([1, 5]))
    mid = int(before[1].reply["data"]["match"])
    await clients.clients[b].close()
    began = time.monotonic()
    while (await must(clients, a, "whois", {"name": b})).reply["data"]["online"]:
        assert time.monotonic() - began < 10, f"{b} still online after closing"
        await asyncio.sleep(0.01)
    await asyncio.sleep(DROP_TIMEOUT + 0.05)
    back = LobbyClient(clients.url, reconnect=False)
    await back.connect()
    clients.clients[b] = back

    async def come_back() -> None:
        await back.login(b, PASSWORD)

    entries = [(a, "claim", {"match": mid}),
               (b, "resign", {}) if rng.random() < 0.6 else (b, "claim", {"match": mid}),
               (rng.choice(admins), "adjudicate", {"match": mid, "winner": a})]
    return MatchRace("claim", a, b, before,
                     await race(rng, clients, ledger, entries, before={b: come_back}))


async def join_race(rng: random.Random, clients: Players, ledger: Ledger, a: str, b: str,
                    admins: list[str]) -> MatchRace:
    length = rng.choice([1, 3])
    before = [await must(clients, a, "invite", {"name": b, "ladder": "backgammon",
                                                 "length": length}),
              await must(clients, b, "invite", {"name": a, "ladder": "backgammon",
                                                 "length": length})]
    racers = await race(rng, clients, ledger, [(a, "join", {"name": b}), (b, "join", {"name": a})])
    return MatchRace("join", a, b, before, racers)


async def first_move_race(rng: random.Random, clients: Players, ledger: Ledger, a: str, b: str,
                          admins: list[str]) -> MatchRace:
    before = [await must(clients, a, "invite", {"name": b, "ladder": "backgammon", "length": 1})]
    move = rng.choice(["resign", "report win"])
    racers = await race(rng, clients, ledger, [(b, "join", {"name": a}), (a, move, {})])
    assert racers[0].ok, f"seed {SEED}: join refused: {racers[0].reply}"
    return MatchRace("first move", a, b, before, racers, exclusive=False)


async def mixed_race(rng: random.Random, clients: Players, ledger: Ledger, a: str, b: str,
                     admins: list[str]) -> MatchRace:
    before = await start(clients, a, b, rng.choice([1, 3]))
    mid = int(before[1].reply["data"]["match"])
    before.append(await must(clients, a, "report win"))
    first, second = rng.sample(admins, 2)
    entries = [(a, "resign", {}), (b, rng.choice(["confirm", "dispute"]), {"match": mid}),
               (first, "adjudicate", {"match": mid, "winner": rng.choice([a, b])}),
               (second, "void", {"match": mid, "reason": "race"})]
    rng.shuffle(entries)
    return MatchRace("mixed", a, b, before, await race(rng, clients, ledger, entries),
                     exclusive=False)


FAMILIES = [answer_race, answer_race, decide_race, claim_race, join_race, first_move_race,
            mixed_race, mixed_race]


# ---- the event races -------------------------------------------------------------------


def game_args(rng: random.Random, ladder: str, event: int, names: list[str]) -> dict[str, Any]:
    win, lose = 10, rng.randint(0, 9)
    args: dict[str, Any] = {"event": event}
    if ladder == "scrabble":
        win, lose = rng.randint(300, 500), rng.randint(250, 500)
    elif ladder == "backgammon":
        length = rng.choice([1, 3])
        win, lose = length, rng.randrange(length)
        args["length"] = length
    if ladder == "foosball-doubles":
        side_a, side_b = "+".join(names[:2]), "+".join(names[2:4])
    else:
        side_a, side_b = names[0], names[1]
    sa, sb = (win, lose) if rng.random() < 0.5 else (lose, win)
    return {**args, "side_a": side_a, "side_b": side_b, "score_a": sa, "score_b": sb,
            "new": True}


async def close_race(rng: random.Random, clients: Players, ledger: Ledger, admins: list[str],
                     number: int) -> EventRace:
    ladder = rng.choice(list(POOLS))
    director = rng.choice(admins)
    event = (await must(clients, director, "event create",
                        {"name": f"race {number}", "ladder": ladder})).reply["data"]["id"]
    games = []
    for _ in range(rng.randint(1, 3)):
        args = game_args(rng, ladder, event, rng.sample(POOLS[ladder], 4))
        games.append((await must(clients, director, "event result", args)).reply["data"]["match"])
    fresh = [f"n{number}{x}" for x in "wxyz"]
    first, second, third = rng.sample(admins, 3)
    entries = [(first, "event close", {"event": event}), (second, "event close", {"event": event}),
               (third, "event result", game_args(rng, ladder, event, fresh))]
    rng.shuffle(entries)
    steps = await race(rng, clients, ledger, entries)
    closes = [s for s in steps if s.cmd == "event close"]
    (result,) = [s for s in steps if s.cmd == "event result"]
    used = fresh if ladder == "foosball-doubles" else fresh[:2]
    return EventRace(event, ladder, games, closes, result, used)


async def spectate(url: str, rng: random.Random, names: list[str], ledger: Ledger,
                   stop: asyncio.Event) -> None:
    """Read what the races change, all the time (as the web page does): the server's reads
    then overlap its writes and each other, and must still see every acknowledged commit."""
    async with LobbyClient(url, reconnect=False) as client:
        while not stop.is_set():
            name = rng.choice(names)
            query = rng.choice([("whois", {"name": name}), ("history", {"name": name}),
                                ("event show", {"event": rng.randint(1, 1 + len(ledger.event_races))}),
                                ("events", {"status": "open"})])
            reply = await client.request(*query, timeout=60)
            assert reply["ok"] or reply["error"]["code"] == "not_found", reply
            ledger.reads += 1
            await asyncio.sleep(SPECTATOR_PAUSE)


# ---- the model of one live match -------------------------------------------------------


@dataclass(frozen=True)
class Match:
    status: str = "none"
    a: str = ""
    b: str = ""
    winner: str | None = None
    how: str | None = None
    claimed_by: str | None = None
    corrections: int = 0
    drops: tuple[str, ...] = ()


def apply(s: Match, step: Step) -> Match | None:
    """The state after ``step`` succeeded in ``s``, or None when it could not have."""
    who, cmd, args, data = step.who, step.cmd, step.args, step.reply["data"]
    live, players = s.status in LIVE, (s.a, s.b)
    replace = dataclasses.replace

    def finished(winner: str, how: str) -> Match | None:
        if (data.get("winner"), data.get("how")) != (winner, how):
            return None
        return replace(s, status="finished", winner=winner, how=how)

    if cmd == "join":
        if s.status != "none" or (data.get("a"), data.get("b"), data.get("status")) != (
                args["name"], who, "playing"):
            return None
        return replace(s, status="playing", a=args["name"], b=who)
    if cmd == "report win":
        return replace(s, status="claimed", claimed_by=who) \
            if s.status == "playing" and who in players else None
    if cmd in ("confirm", "dispute"):
        if s.status != "claimed" or who not in players or who == s.claimed_by:
            return None
        assert s.claimed_by is not None
        return finished(s.claimed_by, "confirm") if cmd == "confirm" else \
            replace(s, status="disputed")
    if cmd == "resign":
        if not live or s.status == "disputed" or who not in players:
            return None
        return finished(s.b if who == s.a else s.a, "resign")
    if cmd == "claim":
        if not live or s.status == "disputed" or who not in players:
            return None
        other = s.b if who == s.a else s.a
        after = finished(who, "claim")
        return None if after is None else replace(after, drops=(*s.drops, other))
    if cmd == "adjudicate":
        winner = args["winner"]
        if live:
            return finished(winner, "adjudicate")
        if s.status == "finished" and s.winner != winner and data.get("winner") == winner \
                and data.get("status") == "finished":
            return replace(s, winner=winner, corrections=s.corrections + 1)
        return None
    if cmd == "void":
        if (live or s.status == "finished") and data.get("status") == "voided":
            return replace(s, status="voided", winner=None, corrections=s.corrections + 1)
        return None
    raise AssertionError(f"unexpected command {cmd}")


def stored_view(m: Match) -> tuple[Any, ...]:
    """What the database keeps of a match (not the claimant, not the drops)."""
    return (m.status, m.a, m.b, m.winner, m.how, m.corrections)


def explain(r: MatchRace, stored: Match) -> Match | None:
    """A serial order of the acknowledged commands that ends as ``stored``, if there is one."""
    state: Match | None = Match()
    for step in r.before:
        if step.cmd != "invite":
            assert state is not None
            state = apply(state, step)
    assert state is not None, f"the set-up of {r} does not fit the model"
    wins = [s for s in r.racers if s.ok]
    for order in itertools.permutations(wins):
        s: Match | None = state
        for step in order:
            s = apply(s, step) if s is not None else None
        if s is None:
            continue
        live_now = s.status in LIVE
        if (r.observed is None) == live_now or (r.observed is not None
                                                 and r.observed["status"] != s.status):
            continue
        for step in r.after:
            s = apply(s, step) if s is not None else None
        if s is not None and stored_view(s) == stored_view(stored):
            return s
    return None


def stored_matches(db: Path) -> dict[int, Match]:
    rows = sql(db, """SELECT m.id, m.status, m.side_a, m.side_b, m.winner, m.how,
                      (SELECT count(*) FROM corrections c WHERE c.match_id = m.id)
                      FROM matches m WHERE m.event_id IS NULL""")
    out = {}
    for mid, status, a, b, winner, how, corrections in rows:
        name = {"a": a, "b": b}.get(winner)
        out[mid] = Match(status, a, b, name, how, None, corrections)
    return out


def check_matches(db: Path, ledger: Ledger) -> dict[str, int]:
    stored = stored_matches(db)
    history = dict(sql(db, "SELECT match_id, count(*) FROM history WHERE match_id IS NOT NULL "
                           "GROUP BY match_id"))
    dropped = dict(sql(db, "SELECT name, dropped FROM players"))
    problems: list[str] = []
    joined: set[int] = set()
    drops: Counter[str] = Counter()
    for r in ledger.match_races:
        joins = [s for s in [*r.before, *r.racers] if s.cmd == "join" and s.ok]
        if len(joins) != 1:
            problems.append(f"{r.family}: {len(joins)} joins acknowledged for one invitation pair")
            continue
        mid = r.match
        joined.add(mid)
        wins = [s for s in r.racers if s.ok]
        if r.exclusive and len(wins) != 1:
            problems.append(f"{r.family} on match {mid}: {len(wins)} successes: "
                            f"{[(s.who, s.cmd, s.reply) for s in r.racers]}")
            continue
        row = stored.get(mid)
        if row is None:
            problems.append(f"match {mid} is not stored")
            continue
        found = explain(r, row)
        if found is None:
            problems.append(f"{r.family} on match {mid}: stored {row} fits no order of "
                            f"{[(s.who, s.cmd, s.args, s.reply.get('data')) for s in r.racers if s.ok]}"
                            f" (observed {r.observed}, then {[(s.who, s.cmd) for s in r.after]})")
            continue
        drops.update(found.drops)
        want_history = 2 if found.status == "finished" else 0
        if history.get(mid, 0) != want_history:
            problems.append(f"match {mid} ({found.status}): {history.get(mid, 0)} history rows")
    extra = set(stored) - joined
    if extra:
        problems.append(f"matches no acknowledged join created: {sorted(extra)[:20]}")
    for r in ledger.match_races:
        for name in (r.a, r.b):
            if dropped.get(name, 0) != drops[name]:
                problems.append(f"{name}: {dropped.get(name)} drops stored, {drops[name]} claims won")
    assert not problems, f"seed {SEED}: " + "\n".join(problems[:20])
    return {"matches": len(joined)}


def check_events(db: Path, ledger: Ledger) -> dict[str, int]:
    problems: list[str] = []
    included = refused = 0
    for e in ledger.event_races:
        wins = [s for s in e.closes if s.ok]
        if len(wins) != 1:
            problems.append(f"event {e.event}: {len(wins)} closes acknowledged: "
                            f"{[s.reply for s in e.closes]}")
            continue
        status, seq = sql(db, "SELECT status, seq FROM events WHERE id = ?", (e.event,))[0]
        if status != "closed" or (seq is None) != (e.ladder == "backgammon"):
            problems.append(f"event {e.event} ({e.ladder}): status {status}, seq {seq}")
        games = sorted(r[0] for r in sql(db, "SELECT id FROM matches WHERE event_id = ?",
                                         (e.event,)))
        want = sorted(e.setup_games + ([e.result.reply["data"]["match"]] if e.result.ok else []))
        if games != want:
            problems.append(f"event {e.event}: games {games}, acknowledged {want}")
        marks = ",".join("?" * len(e.fresh))
        known = {r[0] for r in sql(db, f"SELECT name FROM players WHERE name IN ({marks})",
                                   e.fresh)}
        if e.ladder == "backgammon":
            rated = {r[0] for r in sql(db, "SELECT p.name FROM history h JOIN players p ON "
                                           "p.id = h.player_id WHERE h.event_id = ?", (e.event,))}
        else:
            rated = {r[0] for r in sql(db, "SELECT p.name FROM history h JOIN players p ON "
                                           "p.id = h.player_id WHERE h.event_id = ? AND "
                                           "h.match_id IS NULL", (e.event,))}
            told = {c["player"] for c in wins[0].reply["data"]["changes"]}
            if (set(e.fresh) <= told) != e.result.ok:
                problems.append(f"event {e.event}: close told {sorted(told)}, result "
                                f"{e.result.reply}")
        fresh = set(e.fresh)
        if e.result.ok:
            included += 1
            if known != fresh or not fresh <= rated:
                problems.append(f"event {e.event}: acknowledged result {e.result.reply['data']} "
                                f"not rated with the event (players {known}, rated {rated})")
        else:
            refused += 1
            if known or fresh & rated:
                problems.append(f"event {e.event}: refused result left players {known}")
    assert not problems, f"seed {SEED}: " + "\n".join(problems[:20])
    return {"events": len(ledger.event_races), "late_results_included": included,
            "late_results_refused": refused}


async def test_racing_clients_get_exactly_once_outcomes(db_path: Path, tmp_path: Path,
                                                        figures: dict[str, Any]) -> None:
    async with asyncio.timeout(TIME_LIMIT):
        await _races(db_path, tmp_path, figures)


async def _races(db: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    began = time.monotonic()
    rng = random.Random(SEED)
    config_file = tmp_path / "races.toml"
    config_file.write_text(open_config(drop_timeout=DROP_TIMEOUT), encoding="utf-8")
    config = dataclasses.replace(load_config(config_file), database=str(db))
    server: RunningServer = await start_server(config, port=0)
    clients = Players(f"ws://127.0.0.1:{server.port}/ws")
    ledger = Ledger()
    try:
        admins = list(ADMINS)
        for name in admins:
            await clients.connect(name, ADMIN_PASSWORD)
        pairs = [(f"r{i}a", f"r{i}b") for i in range(PAIRS)]
        await asyncio.gather(*(clients.connect(n, PASSWORD, register=True)
                               for pair in pairs for n in pair))
        families: Counter[str] = Counter()
        race_began = time.monotonic()
        event_number = itertools.count(1)

        async def pair_round(a: str, b: str, prng: random.Random) -> None:
            family = prng.choice(FAMILIES)
            r = await family(prng, clients, ledger, a, b, admins)
            await clean_up(clients, prng, admins, r)
            ledger.match_races.append(r)
            families[r.family] += 1

        async def event_round(erng: random.Random) -> None:
            ledger.event_races.append(await close_race(erng, clients, ledger, admins,
                                                       next(event_number)))
            families["close"] += 1

        stop = asyncio.Event()
        names = [n for pair in pairs for n in pair]
        watchers = [asyncio.create_task(spectate(clients.url, random.Random(rng.random()), names,
                                                 ledger, stop)) for _ in range(SPECTATORS)]
        for _ in range(ROUNDS):
            await asyncio.gather(
                *(pair_round(a, b, random.Random(rng.random())) for a, b in pairs),
                *(event_round(random.Random(rng.random())) for _ in range(EVENT_RACES_PER_ROUND)))
        race_seconds = time.monotonic() - race_began
        stop.set()
        await asyncio.gather(*watchers)
        assert not ledger.unclean, f"seed {SEED}: unclean refusals: " \
            f"{[(s.who, s.cmd, s.args, s.reply) for s in ledger.unclean[:10]]}"
        assert not ledger.bad_retries, f"seed {SEED}: {len(ledger.bad_retries)} of " \
            f"{ledger.retries} retries not answered from the stored reply: " \
            f"{[(s.who, s.cmd, s.args, s.reply, again) for s, again in ledger.bad_retries[:5]]}"
        checked = {**check_matches(db, ledger), **check_events(db, ledger)}
        compared = await ladders_against_recomputation(clients.clients[admins[0]], db, tmp_path)
    finally:
        await clients.close()
        await server.stop()
    assert integrity(db) == "ok", f"seed {SEED}: {integrity(db)}"
    counter, units, distinct = seq_gaps(db)
    assert units == distinct and seq_drawn(db, counter, units), (SEED, counter, units, distinct)
    code, said = await replay_check(db, config_file)
    assert code == 0, f"seed {SEED}: {said}"

    races = len(ledger.match_races) + len(ledger.event_races)
    figures.update({
        "seed": SEED,
        "races": races,
        "races_by_family": dict(sorted(families.items())),
        "racing_commands": sum(len(r.racers) for r in ledger.match_races)
        + 3 * len(ledger.event_races),
        "replies_to_racing_commands": dict(sorted(ledger.codes.items())),
        "refused_while_the_winner_was_in_flight": ledger.in_flight_conflicts,
        "acknowledged_racers_retried_with_same_id_all_replayed": ledger.retries,
        "spectator_reads_meanwhile": ledger.reads,
        "checked": checked,
        "ladder_rows_compared": compared,
        "unclean_refusals": 0,
        "duplicates_or_losses": 0,
        "integrity_check": "ok",
        "replay_check": said.strip(),
        "races_per_second": round(races / race_seconds, 1),
        "race_phase_s": round(race_seconds, 1),
        "duration_s": round(time.monotonic() - began, 1),
    })
    assert races >= MIN_RACES, figures
    assert set(families) == {"answer", "decide: adjudicate", "decide: void", "claim", "join",
                             "first move", "mixed", "close"}, figures


async def test_a_read_sees_every_commit_acknowledged_before_it(tmp_path: Path) -> None:
    """The lobby reads (stored replies, events, matches) through one shared connection that
    many tasks use at once; each read must still see every commit acknowledged before it
    began, or a retry could miss its stored reply and be applied a second time."""
    db = Database(str(tmp_path / "reads.db"))
    await db.open()
    try:
        async def create(conn: Any) -> None:
            await conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
            await conn.execute("INSERT INTO t VALUES (1, 0)")

        await db.write(create)
        stop = asyncio.Event()

        async def keep_reading() -> None:
            while not stop.is_set():
                await db.fetchall("SELECT v FROM t")
                await db.fetchone("SELECT v FROM t WHERE id = 1")

        readers = [asyncio.create_task(keep_reading()) for _ in range(10)]
        stale = []
        for i in range(1, 201):
            async def update(conn: Any, i: int = i) -> None:
                await conn.execute("UPDATE t SET v = ? WHERE id = 1", (i,))

            await db.write(update)
            row = await db.fetchone("SELECT v FROM t WHERE id = 1")
            assert row is not None
            if row["v"] != i:
                stale.append((i, row["v"]))
        stop.set()
        await asyncio.gather(*readers)
        assert not stale, f"{len(stale)} of 200 reads missed a commit acknowledged before them: " \
                          f"{stale[:10]}"
    finally:
        await db.close()
