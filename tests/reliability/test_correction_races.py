"""Corrections racing an event's close: whatever commits first, the ratings are the log's.

On ladders rated when an event closes (P4P, the ČAS ladder), a correction of one of the
event's results changes what the close rates, or, once the close has committed, makes the
ladder be recomputed from the log. Each race here sends, at the same moment from different
directors' connections, one ``event close`` and a correction of one of the event's results:

- void: ``void MATCH REASON`` (the director's desk's "Remove" sends the same);
- adjudicate: ``adjudicate MATCH WINNER``, the other side now the winner;
- correct: what the desk's "Correct" sends: ``void`` and then ``event result`` with the
  right scores (refused cleanly when the close got there first);
- both: a ``void`` of one result and an ``adjudicate`` of another.

On a FIBS ladder (rated as each result comes) the same races run too, as a control.

Every correction that is acknowledged must say truthfully whether it recomputed the ladder:
``recomputed`` is true exactly when the event had closed before it (the close's reply does not
list the correction's match as rated as it was before). In the end ``matchlobby replay
--check`` must agree with every stored rating, and every ladder the server shows must equal
``matchlobby rate`` on the log. Refusals are ``conflict`` or ``not_found``, never ``internal``.

``MATCHLOBBY_CORRECTION_RACES`` sets the number of races (default 96, two rounds of
:data:`AT_ONCE`: every family on every ladder six times; CI runs 240); the seed is in every failure message
(``MATCHLOBBY_RACE_SEED`` picks another).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.cli import replay_check
from testkit.constants import ADMIN_PASSWORD, ADMINS, open_config
from testkit.db import sql
from testkit.recompute import ladders_against_recomputation
from testkit.sizes import count

from clients import LobbyClient
from server.app import start_server
from server.config import load_config

SEED = int(os.environ.get("MATCHLOBBY_RACE_SEED", "5113"))
RACES = count("MATCHLOBBY_CORRECTION_RACES", 96)
AT_ONCE = 48  # races run side by side
LADDERS = ("scrabble", "foosball-singles", "foosball-doubles", "backgammon")
FAMILIES = ("void", "adjudicate", "correct", "both")
CLEAN_REFUSALS = frozenset({"conflict", "not_found"})
TIME_LIMIT = 240.0
PLAYERS = [f"c{i}" for i in range(10)]


@dataclass
class Sent:
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
class Race:
    ladder: str
    family: str
    event: int
    games: list[int]
    close: Sent
    corrections: list[Sent]


class Directors:
    """One connection per director; a director sends one command at a time."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.clients: dict[str, LobbyClient] = {}
        self.locks: dict[str, asyncio.Lock] = {}

    async def connect(self) -> None:
        for name in ADMINS:
            client = LobbyClient(self.url, reconnect=False)
            await client.connect()
            await client.login(name, ADMIN_PASSWORD)
            self.clients[name] = client
            self.locks[name] = asyncio.Lock()

    async def send(self, who: str, cmd: str, args: dict[str, Any]) -> Sent:
        sent = Sent(who, cmd, args)
        sent.reply = await self.clients[who].request(cmd, args, timeout=60)
        return sent

    async def must(self, who: str, cmd: str, args: dict[str, Any]) -> dict[str, Any]:
        sent = await self.send(who, cmd, args)
        assert sent.ok, f"seed {SEED}: {who} {cmd} {args} refused: {sent.reply}"
        data: dict[str, Any] = sent.reply["data"]
        return data

    async def close(self) -> None:
        for client in self.clients.values():
            with contextlib.suppress(Exception):
                await client.close()


def game(rng: random.Random, ladder: str, event: int) -> dict[str, Any]:
    """A decided result (no draw: an adjudication swaps its winner) between random players."""
    names = rng.sample(PLAYERS, 4)
    args: dict[str, Any] = {"event": event, "new": True}
    if ladder == "scrabble":
        win, lose = rng.randint(350, 500), rng.randint(200, 349)
    elif ladder == "backgammon":
        length = rng.choice([1, 3, 5])
        win, lose = length, rng.randrange(length)
        args["length"] = length
    else:
        win, lose = 10, rng.randint(0, 9)
    if ladder == "foosball-doubles":
        side_a, side_b = "+".join(names[:2]), "+".join(names[2:])
    else:
        side_a, side_b = names[0], names[1]
    sa, sb = (win, lose) if rng.random() < 0.5 else (lose, win)
    return {**args, "side_a": side_a, "side_b": side_b, "score_a": sa, "score_b": sb}


def loser_of(args: dict[str, Any]) -> str:
    side = args["side_b"] if args["score_a"] > args["score_b"] else args["side_a"]
    return str(side.split("+")[0])


async def one_race(rng: random.Random, directors: Directors, number: int) -> Race:
    ladder = LADDERS[number % len(LADDERS)]
    family = FAMILIES[(number // len(LADDERS)) % len(FAMILIES)]
    opener, closer, fixer, other = rng.sample(list(ADMINS), 4)
    event = (await directors.must(opener, "event create",
                                  {"name": f"correction race {number}", "ladder": ladder}))["id"]
    results = [game(rng, ladder, event) for _ in range(rng.randint(2, 4))]
    games = [(await directors.must(opener, "event result", r))["match"] for r in results]
    target = rng.randrange(len(games))
    corrections: list[Sent] = []

    async def void(who: str, index: int) -> None:
        corrections.append(await directors.send(who, "void", {"match": games[index],
                                                             "reason": "race"}))

    async def adjudicate(who: str, index: int) -> None:
        corrections.append(await directors.send(
            who, "adjudicate", {"match": games[index], "winner": loser_of(results[index])}))

    async def correct(who: str, index: int) -> None:
        await void(who, index)
        if corrections[-1].ok:
            fixed = {**results[index], "score_a": results[index]["score_b"],
                     "score_b": results[index]["score_a"]}
            corrections.append(await directors.send(who, "event result", fixed))

    async def pause() -> None:
        await asyncio.sleep(rng.choice([0.0, 0.0, 0.0005, 0.001, 0.002, 0.004]))

    async def closing() -> Sent:
        await pause()
        return await directors.send(closer, "event close", {"event": event})

    async def correcting() -> None:
        await pause()
        if family == "void":
            await void(fixer, target)
        elif family == "adjudicate":
            await adjudicate(fixer, target)
        elif family == "correct":
            await correct(fixer, target)
        else:
            second = (target + 1) % len(games)
            await asyncio.gather(void(fixer, target), adjudicate(other, second))

    close, _ = await asyncio.gather(closing(), correcting())
    return Race(ladder, family, event, games, close, corrections)


def only_in(results: dict[int, tuple[int, str, str]], mid: int) -> set[str]:
    """The players of match ``mid`` who play in no other result of its event (one entered
    after a void included)."""
    def names(m: int) -> set[str]:
        return {n for side in results[m][1:] for n in side.split("+")}
    event = results[mid][0]
    others = set().union(*(names(m) for m, r in results.items() if r[0] == event and m != mid))
    return names(mid) - others


def check(races: list[Race], db: Path) -> dict[str, Any]:
    """Each acknowledged correction said truthfully whether the close had rated its match."""
    problems: list[str] = []
    codes: Counter[str] = Counter()
    recomputed: Counter[str] = Counter()
    corrected = dict(sql(db, "SELECT match_id, count(*) FROM corrections GROUP BY match_id"))
    results = {row[0]: (row[1], row[2], row[3]) for row in sql(
        db, "SELECT id, event_id, side_a, side_b FROM matches WHERE event_id IS NOT NULL")}
    for r in races:
        codes["ok" if r.close.ok else str(r.close.code)] += 1
        if not r.close.ok:
            problems.append(f"event {r.event}: the close was refused: {r.close.reply}")
            continue
        played = {c["player"] for c in r.close.reply["data"].get("changes", [])
                  if c.get("played", True)}
        for sent in r.corrections:
            codes["ok" if sent.ok else str(sent.code)] += 1
            if not sent.ok:
                if sent.code not in CLEAN_REFUSALS:
                    problems.append(f"event {r.event}: {sent.cmd} {sent.args}: {sent.reply}")
                continue
            if sent.cmd == "event result":
                continue
            mid = sent.args["match"]
            if corrected.get(mid) != 1:
                problems.append(f"match {mid}: {corrected.get(mid)} corrections stored")
            flag = sent.reply["data"]["recomputed"]
            recomputed[f"{r.ladder} {sent.cmd}: {'after' if flag else 'before'} the close"] += 1
            if r.ladder == "backgammon":
                if not flag:
                    problems.append(f"match {mid} was rated as it came, yet {sent.cmd} did not "
                                    "recompute the ladder")
                continue
            if sent.cmd != "void":
                continue
            # Players whose only game this was: the close rated them iff it came first.
            alone = only_in(results, mid)
            if alone and (alone <= played) != flag:
                problems.append(f"event {r.event} ({r.ladder}): void of match {mid} says "
                                f"recomputed={flag}, but the close rated {sorted(played)} "
                                f"(its only players: {sorted(alone)})")
    assert not problems, f"seed {SEED}: " + "\n".join(problems[:20])
    return {"replies": dict(sorted(codes.items())),
            "corrections": dict(sorted(recomputed.items()))}


async def test_corrections_racing_closes_leave_the_log_s_ratings(
        db_path: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    async with asyncio.timeout(TIME_LIMIT):
        await _run(db_path, tmp_path, figures)


async def _run(db: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    rng = random.Random(SEED)
    config_file = tmp_path / "corrections.toml"
    config_file.write_text(open_config(), encoding="utf-8")
    config = dataclasses.replace(load_config(config_file), database=str(db))
    server = await start_server(config, port=0)
    directors = Directors(f"ws://127.0.0.1:{server.port}/ws")
    races: list[Race] = []
    try:
        await directors.connect()
        for start in range(0, RACES, AT_ONCE):
            batch = range(start, min(RACES, start + AT_ONCE))
            races += await asyncio.gather(*(one_race(random.Random(rng.random()), directors, n)
                                            for n in batch))
        checked = check(races, db)
        compared = await ladders_against_recomputation(directors.clients[ADMINS[0]], db,
                                                       tmp_path)
    finally:
        await directors.close()
        await server.stop()
    code, said = await replay_check(db, config_file)
    assert code == 0, f"seed {SEED}: replay --check after {len(races)} races: {said}"
    families = Counter(f"{r.ladder} {r.family}" for r in races)
    assert len(families) == len(LADDERS) * len(FAMILIES) or RACES < 16, families
    figures.update({"seed": SEED, "races": len(races), **checked,
                    "ladder_rows_compared": compared, "replay_check": said.strip()})
