"""Crash safety: the server is killed with SIGKILL at random moments while clients stream
finished matches and event results at it; after every restart they carry on.

``matchlobby serve`` runs as a separate process on a free port and a temporary
database. Pairs of players play invite/join/resign and report/confirm
matches on the backgammon ladder; two directors create events on the ČAS,
P4P (singles and doubles) and FIBS ladders, record results and close them.
Every mutating request has a unique id; a request whose connection dropped is
sent again with the same id once the server is back, until it is answered.
Every acknowledged reply is kept. A killer sends SIGKILL at seeded random
moments and restarts the server on the same file.

At the end: every acknowledged result is in the database exactly as it was
acknowledged (winner, rating changes, event games, closes), nothing exists that
was not acknowledged (no match, game or event twice), every acknowledged
request sent once more is answered from the stored reply and changes nothing,
``PRAGMA integrity_check`` is ``ok``, ``matchlobby replay --check`` passes and
the restarted server's ladders equal ``matchlobby rate`` on the log.

``MATCHLOBBY_CRASH_SEED`` picks another seed; the seed is in every failure message.
``MATCHLOBBY_CRASH_KILLS`` sets how many kills (4 unless set; CI: 12).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.cli import replay_check
from testkit.constants import ADMIN_PASSWORD, ADMINS, PASSWORD, open_config
from testkit.db import integrity, seq_drawn, seq_gaps, sql
from testkit.recompute import ladders_against_recomputation
from testkit.server_process import ServerProcess
from testkit.sizes import count
from websockets.exceptions import WebSocketException

from clients import LobbyClient

SEED = int(os.environ.get("MATCHLOBBY_CRASH_SEED", "20261130"))
KILLS = count("MATCHLOBBY_CRASH_KILLS", 4)
PAIRS = 4
DIRECTORS = ADMINS[:2]
TIME_LIMIT = 60.0 + 15.0 * KILLS  # a hang guard on the whole test, whatever the machine's load
SCRABBLE = [f"sc{i}" for i in range(10)]
FOOSBALL = [f"fs{i}" for i in range(8)]
DOUBLES = [f"fd{i}" for i in range(10)]
BACKGAMMON = [f"bg{i}" for i in range(4)]
LADDERS = ("scrabble", "foosball-singles", "foosball-doubles", "backgammon")


@dataclass
class Stats:
    requests: int = 0
    retried: int = 0        # requests that lost their connection at least once
    retries: int = 0        # sends after the first
    replayed: int = 0       # answers from a stored reply (the original had committed)
    retried_fresh: int = 0  # retried requests whose original had not committed
    logins: int = 0
    inflight: int = 0
    lost_invitations: int = 0


@dataclass
class Acked:
    actor: str
    cmd: str
    args: dict[str, Any]
    rid: str
    data: Any


@dataclass
class Ledger:
    acked: list[Acked] = field(default_factory=list)
    joins: dict[int, tuple[str, str, Any]] = field(default_factory=dict)
    finishes: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: dict[int, dict[str, Any]] = field(default_factory=dict)
    results: dict[int, tuple[int, dict[str, Any], dict[str, Any]]] = field(default_factory=dict)


class Actor:
    """One account's connection that outlives the server: reconnects, logs in, retries.

    A request is sent again with the *same* id after every lost connection,
    until an answer arrives: the server must apply it at most once.
    """

    def __init__(self, url: str, name: str, password: str, stats: Stats, ledger: Ledger) -> None:
        self.url, self.name, self.password = url, name, password
        self.stats, self.ledger = stats, ledger
        self.client: LobbyClient | None = None
        self._ids = itertools.count(1)

    async def drop(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()
        await asyncio.sleep(0.01)

    async def online(self) -> LobbyClient:
        while self.client is None or not self.client.connected:
            if self.client is not None:
                await self.drop()
            client = LobbyClient(self.url, reconnect=False)
            try:
                await client.connect()
                reply = await client.request("login", {"name": self.name,
                                                       "password": self.password}, timeout=20)
            except (OSError, WebSocketException):
                with contextlib.suppress(Exception):
                    await client.close()
                await asyncio.sleep(0.03)
                continue
            assert reply["ok"], f"{self.name}: login refused: {reply}"
            self.stats.logins += 1
            self.client = client
        return self.client

    async def send(self, cmd: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """The answer to one request, however many restarts it takes; ``ok`` ones are kept."""
        rid = f"{self.name}-{next(self._ids)}"
        args = args or {}
        self.stats.requests += 1
        sends = 0
        while True:
            client = await self.online()
            sends += 1
            self.stats.inflight += 1
            try:
                reply = await client.request(cmd, args, timeout=20, request_id=rid)
            except (OSError, WebSocketException):  # Disconnected, a timeout
                await self.drop()  # connect afresh (and yield: the old socket may not know yet)
                continue
            finally:
                self.stats.inflight -= 1
            break
        if sends > 1:
            self.stats.retried += 1
            self.stats.retries += sends - 1
            if not reply.get("replayed"):
                self.stats.retried_fresh += 1
        if reply.get("replayed"):
            self.stats.replayed += 1
        assert reply.get("id") == rid, reply
        if reply["ok"] and cmd != "invite":
            self.ledger.acked.append(Acked(self.name, cmd, args, rid, reply["data"]))
        return reply

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def must(reply: dict[str, Any], what: str) -> Any:
    assert reply["ok"], f"{what} refused: {reply} (seed {SEED})"
    return reply["data"]


async def start_match(a: Actor, b: Actor, length: int | str, ledger: Ledger) -> int:
    """``a`` invites, ``b`` joins; an invitation lost with a restart is simply made again."""
    last: dict[str, Any] = {}
    for _ in range(300):
        invite = await a.send("invite", {"name": b.name, "ladder": "backgammon", "length": length})
        if not invite["ok"]:
            # b is not logged in again yet after a restart
            assert invite["error"]["code"] == "not_found", invite
            last = invite
            await b.online()
            await asyncio.sleep(0.02)
            continue
        join = await b.send("join", {"name": a.name})
        if join["ok"]:
            mid = int(join["data"]["match"])
            assert mid not in ledger.joins, (mid, join)
            ledger.joins[mid] = (a.name, b.name, length)
            return mid
        # the invitation was lost with a restart (or a is not back yet): invite again
        assert join["error"]["code"] in ("not_found", "conflict"), join
        a.stats.lost_invitations += 1
        last = join
    raise AssertionError(f"{a.name} and {b.name} could not start a match: {last} (seed {SEED})")


async def play(a: Actor, b: Actor, rng: random.Random, stop: asyncio.Event, ledger: Ledger
               ) -> None:
    while not stop.is_set():
        length: int | str = rng.choice([1, 1, 3, 5, 7, "unlimited"])
        mid = await start_match(a, b, length, ledger)
        winner, loser = (a, b) if rng.random() < 0.5 else (b, a)
        if rng.random() < 0.5:
            data = must(await loser.send("resign"), f"{loser.name} resign in {mid}")
            how = "resign"
        else:
            args: dict[str, Any] = {}
            if isinstance(length, int) and rng.random() < 0.5:
                args = {"score_a": length, "score_b": rng.randrange(length)}
            claimed = must(await winner.send("report win", args), f"report win in {mid}")
            assert claimed["match"] == mid and claimed["status"] == "claimed", claimed
            data = must(await loser.send("confirm", {"match": mid}), f"confirm {mid}")
            how = "confirm"
        assert (data["match"], data["winner"], data["loser"], data["how"]) == \
            (mid, winner.name, loser.name, how), data
        assert data["rated"] is (length != "unlimited"), data
        ledger.finishes[mid] = data


def result_args(rng: random.Random, ladder: str, event: int, players: list[str]) -> dict[str, Any]:
    def ordered(win: int, lose: int) -> tuple[int, int]:
        return (win, lose) if rng.random() < 0.5 else (lose, win)

    args: dict[str, Any] = {"event": event, "new": True}
    if ladder == "scrabble":
        a, b = rng.sample(SCRABBLE, 2)
        sa = rng.randint(250, 550)
        sb = sa if rng.random() < 0.1 else rng.randint(250, 550)
    elif ladder == "foosball-singles":
        a, b = rng.sample(FOOSBALL, 2)
        sa, sb = ordered(10, rng.randint(0, 9))
    elif ladder == "foosball-doubles":
        w, x, y, z = rng.sample(DOUBLES, 4)
        a, b = f"{w}+{x}", f"{y}+{z}"
        sa, sb = ordered(10, rng.randint(0, 9))
    else:
        a, b = rng.sample(BACKGAMMON + players, 2)
        length = rng.choice([1, 3, 5])
        sa, sb = ordered(length, rng.randrange(length))
        args["length"] = length
        if rng.random() < 0.15:
            args["unrated"] = "forfeit"
    return {**args, "side_a": a, "side_b": b, "score_a": sa, "score_b": sb}


async def direct(admin: Actor, rng: random.Random, stop: asyncio.Event, ledger: Ledger,
                 players: list[str]) -> None:
    n = 0
    while not stop.is_set():
        n += 1
        ladder = rng.choice(LADDERS)
        name = f"{admin.name} cup {n}"
        created = must(await admin.send("event create", {"name": name, "ladder": ladder}),
                       f"event create {name}")
        eid = int(created["id"])
        assert eid not in ledger.events and created["status"] == "open", created
        ledger.events[eid] = {"name": name, "ladder": ladder, "close": None}
        for _ in range(rng.randint(2, 6)):
            args = result_args(rng, ladder, eid, players)
            data = must(await admin.send("event result", args), f"event result {args}")
            assert data["event"] == eid and data["match"] not in ledger.results, data
            ledger.results[data["match"]] = (eid, args, data)
        closed = must(await admin.send("event close", {"event": eid}), f"event close {eid}")
        assert closed["status"] == "closed" and closed["id"] == eid, closed
        ledger.events[eid]["close"] = closed


async def kill_at_random(server: ServerProcess, rng: random.Random, ledger: Ledger, stats: Stats,
                         figures: dict[str, Any]) -> None:
    kills: list[dict[str, Any]] = []
    figures["kills"] = kills
    restarts: list[float] = []
    for _ in range(KILLS):
        # let the clients get going on the new server, then strike at a random moment
        seen = len(ledger.acked)
        began = time.monotonic()
        while len(ledger.acked) == seen and time.monotonic() - began < 20:
            await asyncio.sleep(0.01)
        assert len(ledger.acked) > seen, f"no progress after a restart (seed {SEED})"
        await asyncio.sleep(rng.uniform(0.05, 0.9))
        kills.append({"after_s": round(time.monotonic() - began, 3),
                      "in_flight": stats.inflight, "acked_so_far": len(ledger.acked)})
        server.kill()
        server.start()
        restarts.append(await server.ready())
    figures["restart_s_max"] = round(max(restarts), 2)


def result_row(db: Path, mid: int) -> dict[str, Any]:
    rows = sql(db, "SELECT id, event_id, side_a, side_b, status, winner, score_a, score_b, how, "
                   "length, unrated_reason, seq FROM matches WHERE id = ?", (mid,))
    assert len(rows) == 1, (mid, rows)
    keys = ("id", "event_id", "side_a", "side_b", "status", "winner", "score_a", "score_b", "how",
            "length", "unrated_reason", "seq")
    return dict(zip(keys, rows[0], strict=True))


def history_of(db: Path, column: str, value: int) -> list[tuple[str, float | None, float]]:
    return sorted(sql(db, f"SELECT p.name, h.before, h.after FROM history h JOIN players p "
                          f"ON p.id = h.player_id WHERE h.{column} = ?", (value,)),
                  key=lambda r: r[0])


def acked_changes(changes: list[dict[str, Any]]) -> list[tuple[str, float | None, float]]:
    return sorted(((c["player"], c["before"], c["after"]) for c in changes), key=lambda r: r[0])


def check_database(db: Path, ledger: Ledger) -> dict[str, int]:
    """Every acknowledged result is stored as acknowledged, and nothing else exists."""
    problems: list[str] = []
    # live matches: exactly the acknowledged joins, each finished as acknowledged
    live = {r[0] for r in sql(db, "SELECT id FROM matches WHERE event_id IS NULL")}
    if live != set(ledger.joins):
        problems.append(f"live matches in the database {sorted(live ^ set(ledger.joins))} "
                        "differ from the acknowledged joins")
    for mid, (a, b, length) in ledger.joins.items():
        row = result_row(db, mid)
        data = ledger.finishes.get(mid)
        expected_length = None if length == "unlimited" else length
        if (row["side_a"], row["side_b"], row["length"]) != (a, b, expected_length):
            problems.append(f"match {mid}: stored {row}, joined as {a} v {b} ({length})")
        if data is None:
            problems.append(f"match {mid} was joined but never finished by the driver")
            continue
        winner = row[f"side_{row['winner']}"] if row["winner"] in ("a", "b") else None
        if (row["status"], winner, row["how"]) != ("finished", data["winner"], data["how"]):
            problems.append(f"match {mid}: stored {row}, acknowledged {data}")
        stored = history_of(db, "match_id", mid)
        if stored != acked_changes(data["changes"]):
            problems.append(f"match {mid}: history {stored}, acknowledged {data['changes']}")
    # events: exactly the acknowledged ones, closed, holding exactly the acknowledged games
    events = {r[0]: r for r in sql(db, "SELECT id, name, ladder, status, seq FROM events")}
    if set(events) != set(ledger.events):
        problems.append(f"events {sorted(set(events) ^ set(ledger.events))} differ from the "
                        "acknowledged ones")
    for eid, info in ledger.events.items():
        row = events.get(eid)
        if row is None:
            continue
        rated_on_close = info["ladder"] != "backgammon"
        if (row[1], row[2], row[3], row[4] is not None) != (info["name"], info["ladder"], "closed",
                                                             rated_on_close):
            problems.append(f"event {eid}: stored {row}, acknowledged {info}")
        games = {r[0] for r in sql(db, "SELECT id FROM matches WHERE event_id = ?", (eid,))}
        acked = {mid for mid, (e, _, _) in ledger.results.items() if e == eid}
        if games != acked:
            problems.append(f"event {eid}: games {sorted(games)}, acknowledged {sorted(acked)}")
        close = info["close"]
        if close is not None and rated_on_close:
            stored = set(history_of(db, "event_id", eid))
            missing = set(acked_changes(close["changes"])) - stored
            if missing:
                problems.append(f"event {eid}: acknowledged rating changes missing: {missing}")
    for mid, (eid, args, data) in ledger.results.items():
        row = result_row(db, mid)
        want = (eid, args["side_a"], args["side_b"], args["score_a"], args["score_b"],
                args.get("unrated"), "finished")
        got = (row["event_id"], row["side_a"], row["side_b"], row["score_a"], row["score_b"],
               row["unrated_reason"], row["status"])
        if got != want:
            problems.append(f"result {mid}: stored {got}, acknowledged {want}")
        if "changes" in data and history_of(db, "match_id", mid) != acked_changes(data["changes"]):
            problems.append(f"result {mid}: history differs from the acknowledged changes")
    # every acknowledged request's reply is stored with it
    ids = {name: pid for pid, name in sql(db, "SELECT id, name FROM players")}
    stored_requests = set(sql(db, "SELECT player_id, request_id FROM requests"))
    missing_replies = [a.rid for a in ledger.acked if (ids[a.actor], a.rid) not in stored_requests]
    if missing_replies:
        problems.append(f"no stored reply for acknowledged requests {missing_replies[:10]}")
    counter, units, distinct = seq_gaps(db)
    if not (units == distinct and seq_drawn(db, counter, units)):
        problems.append(f"seq counter {counter}, units {units}, distinct {distinct}")
    assert not problems, f"seed {SEED}: " + "\n".join(problems[:30])
    return {"live_matches": len(live), "events": len(events),
            "event_games": len(ledger.results)}


def table_counts(db: Path) -> dict[str, int]:
    return {t: sql(db, f"SELECT count(*) FROM {t}")[0][0]
            for t in ("matches", "events", "history", "ratings", "players", "corrections")}


async def test_sigkill_at_random_moments_loses_and_duplicates_nothing(
        db_path: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    async with asyncio.timeout(TIME_LIMIT):
        await _crash_run(db_path, tmp_path, figures)


async def _crash_run(db: Path, tmp_path: Path, figures: dict[str, Any]) -> None:
    began = time.monotonic()
    rng = random.Random(SEED)
    figures["seed"] = SEED
    config = tmp_path / "crash.toml"
    config.write_text(open_config(), encoding="utf-8")
    server = ServerProcess(db, config, log=tmp_path / "server.log")
    stats, ledger = Stats(), Ledger()
    actors: list[Actor] = []
    tasks: list[asyncio.Task[None]] = []
    try:
        server.start()
        await server.ready()
        url = f"ws://127.0.0.1:{server.port}/ws"
        # register the players (before any kill), then let everyone log in through Actor
        pairs: list[tuple[Actor, Actor]] = []
        for i in range(PAIRS):
            pair = []
            for side in "ab":
                name = f"p{i}{side}"
                c = LobbyClient(url, reconnect=False)
                await c.connect()
                await c.register(name, PASSWORD)
                await c.close()
                pair.append(Actor(url, name, PASSWORD, stats, ledger))
            pairs.append((pair[0], pair[1]))
        directors = [Actor(url, n, ADMIN_PASSWORD, stats, ledger) for n in DIRECTORS]
        actors = [x for p in pairs for x in p] + directors
        players = [x.name for x in actors[: 2 * PAIRS]]
        stop = asyncio.Event()
        drivers = [asyncio.create_task(play(a, b, random.Random(rng.random()), stop, ledger))
                   for a, b in pairs]
        drivers += [asyncio.create_task(direct(d, random.Random(rng.random()), stop, ledger,
                                               players)) for d in directors]
        run_began = time.monotonic()
        killer = asyncio.create_task(kill_at_random(server, rng, ledger, stats, figures))
        tasks = [killer, *drivers]
        done, _ = await asyncio.wait([killer, *drivers], return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # a driver failing early ends the test with its assertion
        assert killer in done, "a driver ended on its own"
        stop.set()  # drivers finish the match or event in hand; no more kills
        await asyncio.gather(*drivers)
        figures["run_s"] = round(time.monotonic() - run_began, 1)

        # every acknowledged request, sent once more with its id: the stored reply, no change
        before = table_counts(db)
        by_name = {a.name: a for a in actors}
        mismatched = []
        for acked in list(ledger.acked):
            actor = by_name[acked.actor]
            client = await actor.online()
            again = await client.request(acked.cmd, acked.args, request_id=acked.rid)
            if not (again["ok"] and again.get("replayed") is True and again["data"] == acked.data):
                mismatched.append((acked.cmd, acked.rid, again))
        assert not mismatched, f"seed {SEED}: retries not answered from the stored reply: " \
                               f"{mismatched[:5]}"
        assert table_counts(db) == before, (before, table_counts(db))

        admin = await directors[0].online()
        figures["ladder_rows_compared"] = await ladders_against_recomputation(admin, db, tmp_path)
        for actor in actors:
            await actor.close()
        assert server.terminate() == 0, server.tail()
        assert "matchlobby stopped; everything is saved." in server.tail()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for actor in actors:
            with contextlib.suppress(Exception):
                await actor.close()
        server.stop()

    assert integrity(db) == "ok", f"seed {SEED}: integrity_check: {integrity(db)}"
    checked = check_database(db, ledger)
    code, said = await replay_check(db, config)
    assert code == 0, f"seed {SEED}: {said}"
    assert "Traceback" not in server.output(), server.tail(80)

    kills = figures["kills"]
    cmds = Counter(a.cmd for a in ledger.acked)
    figures.update({
        "kills_survived": len(kills),
        "kills_with_requests_in_flight": sum(1 for k in kills if k["in_flight"] > 0),
        "server_starts": server.starts,
        "acknowledged_requests": len(ledger.acked),
        "acknowledged_by_command": dict(sorted(cmds.items())),
        "matches_finished": len(ledger.finishes),
        "event_results": len(ledger.results),
        "events_closed": sum(1 for e in ledger.events.values() if e["close"] is not None),
        "checked_in_database": checked,
        "requests": stats.requests,
        "requests_retried_after_a_kill": stats.retried,
        "retries_sent": stats.retries,
        "answered_from_stored_reply_during_run": stats.replayed,
        "retried_and_applied_fresh": stats.retried_fresh,
        "invitations_lost_with_a_kill": stats.lost_invitations,
        "logins": stats.logins,
        "resent_at_end_all_replayed": len(ledger.acked),
        "losses": 0,
        "duplicates": 0,
        "integrity_check": "ok",
        "replay_check": said.strip(),
        "duration_s": round(time.monotonic() - began, 1),
    })
    # the kills must have hit a working server, not an idle one
    assert figures["kills_with_requests_in_flight"] >= KILLS // 2, figures
    assert stats.retried > 0, figures
    # every command the clients send was acknowledged across the kills
    assert set(cmds) == {"join", "resign", "report win", "confirm", "event create",
                         "event result", "event close"}, figures
