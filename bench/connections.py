"""Benchmark: 10,000 idle connections in one server process, and a `ladder_updated` to all of them.

1. Memory. The lobby (``matchlobby serve``, a subprocess) holds ``--clients``
   (10,000) idle connections that all ``watch scrabble``; ``--logged-in``
   (all) of them are logged in, the others are spectators. Server memory per
   connection is (VmRSS with them − VmRSS before the first one) / connections,
   read from /proc/PID/status once the server is idle. The baseline, in the
   same run: a bare ``websockets`` server (``bench/_harness.py bare``: an echo
   handler, same ``websockets`` version, no compression, the lobby's ping
   settings) holding the same number of connections, each of which has sent
   and received one frame. Target: lobby bytes per connection ≤ 1.5 × the bare
   server's.

2. Fan-out. An admin closes a ČAS (scrabble) event with ``--games`` (6) games;
   the time runs from just before ``event close`` is sent to the moment the
   last of the watchers has the ``ladder_updated`` push (the one push a close
   sends watchers: the best-placed 20 rows of those it moved on the
   ``--ladder-players`` (200) player ladder). Done ``--closes`` (3) times, one
   event each.

All 10,000 log in. Logins push ``presence`` only to the sessions that
have listed ``who`` and to a live match's opponent (none here); when every
login went to every session, 10,000 logins meant 50 million pushes, about half
an hour of server CPU, and only 1,000 clients logged in. ``--logged-in N``
leaves the others as spectators.

The clients are light raw ``websockets`` clients (``bench/_harness.py``: one
connection and one reader task each, pushes counted but not parsed, no
client-side pings, as from a browser), spread over ``--workers`` (4) client
processes. They log in over the protocol (accounts created offline in the
database with the server's schema and hash format, cheap scrypt N=16). Times
across processes use CLOCK_MONOTONIC, which on Linux is one clock for the
whole machine. The open-file limit is raised to its hard limit in this
process and inherited by the servers and the client processes.

Run from the repository root:  .venv/bin/python bench/connections.py
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _harness as h

TARGET = 1.5
LADDER = "scrabble"


@dataclass
class Memory:
    server: str
    connections: int
    before: int
    after: int
    steps: list[tuple[str, int]]

    @property
    def per_connection(self) -> float:
        return (self.after - self.before) / self.connections


@dataclass
class Close:
    event: int
    games: int
    reply: float  # seconds from sending `event close` to its reply
    first: float
    median: float
    last: float
    received: int
    watchers: int
    server_cpu: float
    rows: int


def mib(n: float) -> str:
    return f"{n / 2**20:.1f}"


async def connect_all(workers: h.Workers, served: h.Served, group: str, names: list[str],
                      logins: int, hello: bool) -> tuple[list[tuple[str, float]], int, float]:
    """Connect ``len(names)`` clients (the first ``logins`` log in as they connect)."""
    steps = []
    failed = 0
    login_cpu = 0.0
    first, rest = names[:logins], names[logins:]
    for part, log_in, label in ((first, True, "logged in"), (rest, False, "connected")):
        if not part:
            continue
        cpu = served.cpu()
        start = time.perf_counter()
        answers = await workers.ask("connect", per_worker=[
            {"count": len(s), **({"logins": s} if log_in else {})}
            for s in h.split(part, len(workers))], group=group, url=served.url, concurrency=20,
            hello=hello)
        failed += sum(a["failed"] for a in answers)
        for a in answers:
            if a["errors"]:
                print(f"  {group}: {a['errors'][:2]}", file=sys.stderr)
        seconds = time.perf_counter() - start
        if log_in:
            login_cpu = served.cpu() - cpu
        steps.append((f"{len(part)} {label}", seconds))
    return steps, failed, login_cpu


async def lobby_phase(args: argparse.Namespace, tmp: Path, names: list[str],
                      workers: h.Workers) -> tuple[Memory, list[Close], list[str], list[str]]:
    from clients.lobby_client import LobbyClient

    db = tmp / "lobby.sqlite3"
    await h.seed_players(db, names)
    config = tmp / "cfg.toml"
    config.write_text(h.config_text(args.clients))
    notes: list[str] = []
    rng = random.Random(7)
    ladder_players = names[:args.ladder_players]
    day = datetime.now(UTC).date().isoformat()
    async with h.lobby_server(tmp, db, config) as lobby:
        seeded = await h.seed_results(lobby.url, [], ladder_players)
        admin = LobbyClient(lobby.url, reconnect=False)
        await admin.connect()
        await admin.login(h.ADMIN, h.PASSWORD)
        await admin.watch(LADDER)  # to keep the pushes of a close for the bare server's fan-out
        seen: list[dict[str, Any]] = []
        for event_name in ("rating_changed", "ladder_updated"):
            admin.on(event_name, seen.append)
        events = []
        for k in range(args.closes):  # the events to close, with their games, made beforehand
            event = await admin.call("event create", name=f"Bench close {k + 1}", ladder=LADDER)
            players = rng.sample(ladder_players, min(len(ladder_players), 2 * args.games))
            pairs = zip(players[0::2], players[1::2], strict=False)
            rows = "".join(f"Bench close {k + 1},{day},{a},{b},{rng.randint(250, 500)},"
                           f"{rng.randint(250, 500)},,\n" for a, b in pairs)
            await admin.call("event import", new=True, event=event["id"],
                             csv="event,date,side_a,side_b,score_a,score_b,length,rated\n" + rows)
            events.append(event["id"])
        await h.settle(lobby)
        before = lobby.rss()
        steps_rss: list[tuple[str, int]] = [("started", before)]
        steps, failed, login_cpu = await connect_all(workers, lobby, "lobby", names,
                                                     args.logged_in, hello=True)
        steps_rss.append(("connected", lobby.rss()))
        start = time.perf_counter()
        watched = await workers.ask("call", group="lobby", cmd="watch", args={"ladder": LADDER},
                                    concurrency=50)
        synced = await workers.ask("call", group="lobby", cmd="ladders", concurrency=50)
        steps.append((f"{args.clients} watch {LADDER}", time.perf_counter() - start))
        failed += sum(a["failed"] for a in watched + synced)
        if failed:
            raise RuntimeError(f"{failed} lobby clients failed; see the worker logs in {tmp}")
        await h.settle(lobby, 1.0)
        after = lobby.rss()
        steps_rss.append(("watching, idle", after))
        stats = await workers.ask("stats", group="lobby")
        pushes = sum(s["pushes"] for s in stats)
        notes.append(f"lobby set-up: {seeded.get('scrabble_games')} scrabble games rated for "
                     f"{len(ladder_players)} players; "
                     + "; ".join(f"{label} in {s:.1f} s" for label, s in steps)
                     + f"; the logins cost the server {login_cpu:.1f} s of CPU and made "
                     f"{pushes} pushes reach the clients (presence, hello)")

        closes = []
        frames: list[str] = []
        for event_id in events:
            seen.clear()
            await workers.ask("arm", group="lobby")
            cpu = lobby.cpu()
            sent = h.clock()
            reply = await admin.request("event close", {"event": event_id}, timeout=300)
            replied = h.clock()
            if not reply.get("ok"):
                raise RuntimeError(f"event close {event_id}: {reply}")
            answers = await workers.ask("wait_ladder", group="lobby", timeout=args.timeout)
            server_cpu = lobby.cpu() - cpu
            times = [t for a in answers for t in a["times"] if t is not None]
            watchers = sum(len(a["times"]) for a in answers)
            if not times:
                raise RuntimeError("no watcher had ladder_updated")
            ladder = await admin.call("ladder", ladder=LADDER, count=1, all=True)
            closes.append(Close(event_id, args.games, replied - sent, min(times) - sent,
                                statistics.median(times) - sent, max(times) - sent, len(times),
                                watchers, server_cpu, ladder["total"]))
            for _ in range(600):
                if any(p["event"] == "ladder_updated" for p in seen):
                    break
                await asyncio.sleep(0.05)
            frames = [json.dumps(p, ensure_ascii=False, separators=(",", ":")) for p in seen]
            await h.settle(lobby, 0.5)
        await admin.close()
        start = time.perf_counter()
        await workers.ask("close", group="lobby")
        notes.append(f"lobby: {args.clients} connections closed in {time.perf_counter() - start:.1f} s")
    notes.append(f"lobby: a close pushes {len(frames)} frames to each watcher "
                 f"({', '.join(sorted(set(json.loads(f)['event'] for f in frames)))}), "
                 f"{sum(map(len, frames)):,} bytes of JSON; the ladder_updated frame is "
                 f"{max(map(len, frames)):,} bytes")
    return Memory("lobby", args.clients, before, after, steps_rss), closes, frames, notes


async def bare_fanout(args: argparse.Namespace, bare: h.Served, workers: h.Workers,
                      frames: list[str]) -> list[Close]:
    """The same frames as a lobby close, from the bare server to all its connections."""
    from websockets.asyncio.client import connect

    out = []
    async with connect(bare.url, compression=None, ping_interval=None, max_size=2**24) as trigger:
        for k in range(args.closes):
            await workers.ask("arm", group="bare")
            cpu = bare.cpu()
            sent = h.clock()
            await trigger.send(json.dumps({"fanout": frames, "id": k}))
            await trigger.recv()
            replied = h.clock()
            answers = await workers.ask("wait_ladder", group="bare", timeout=args.timeout)
            times = [t for a in answers for t in a["times"] if t is not None]
            watchers = sum(len(a["times"]) for a in answers)
            if not times:
                raise RuntimeError("no bare connection had the ladder_updated frame")
            out.append(Close(k + 1, args.games, replied - sent, min(times) - sent,
                             statistics.median(times) - sent, max(times) - sent, len(times),
                             watchers, bare.cpu() - cpu, 0))
            await h.settle(bare, 0.5)
    return out


async def bare_phase(args: argparse.Namespace, tmp: Path, names: list[str], workers: h.Workers,
                     frames: list[str]) -> tuple[Memory, list[Close], list[str]]:
    async with h.bare_server(tmp) as bare:
        await h.settle(bare)
        before = bare.rss()
        steps, failed, _ = await connect_all(workers, bare, "bare", names, 0, hello=False)
        connected = bare.rss()
        start = time.perf_counter()
        synced = await workers.ask("call", group="bare", cmd="echo", args={"pad": "x" * 20},
                                   concurrency=50)
        steps.append((f"{args.clients} echo one frame", time.perf_counter() - start))
        failed += sum(a["failed"] for a in synced)
        if failed:
            raise RuntimeError(f"{failed} bare clients failed; see the worker logs in {tmp}")
        await h.settle(bare, 1.0)
        after = bare.rss()
        fanouts = await bare_fanout(args, bare, workers, frames)
        start = time.perf_counter()
        await workers.ask("close", group="bare")
        steps.append((f"{args.clients} closed", time.perf_counter() - start))
    note = "bare set-up: " + "; ".join(f"{label} in {s:.1f} s" for label, s in steps)
    return Memory("bare websockets", args.clients, before, after,
                  [("started", before), ("connected", connected), ("idle", after)]), fanouts, [note]


async def main_async(args: argparse.Namespace) -> int:
    nofile = h.announce()
    print(f"connections: {args.clients} ({args.logged_in} logged in), {args.workers} client "
          f"processes; open-file limit {nofile}; {args.closes} event close(s) of {args.games} "
          f"games on a {args.ladder_players}-player {LADDER} ladder")
    if args.clients + 100 > nofile:
        print(f"the open-file limit ({nofile}) is too low for {args.clients} connections",
              file=sys.stderr)
        return 2
    names = h.player_names(args.clients)
    memories: list[Memory] = []
    closes: list[Close] = []
    fanouts: list[Close] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="connections-", dir=args.tmp) as tmpname:
        tmp = Path(tmpname)
        async with h.client_workers(args.workers, tmp) as workers:
            for _ in range(args.repeat):
                memory, run_closes, frames, run_notes = await lobby_phase(args, tmp, names, workers)
                bare_memory, run_fanouts, bare_notes = await bare_phase(args, tmp, names, workers,
                                                                        frames)
                memories += [memory, bare_memory]
                closes += run_closes
                fanouts += run_fanouts
                notes += run_notes + bare_notes
                for suffix in ("", "-wal", "-shm"):
                    (tmp / f"lobby.sqlite3{suffix}").unlink(missing_ok=True)

    print()
    for note in notes:
        print(note)
    print()
    print("| run | server | connections | RSS before MiB | RSS with them MiB | bytes per connection "
          "| lobby / bare |")
    print("|---|---|---:|---:|---:|---:|---:|")
    ratios = []
    for i in range(0, len(memories), 2):
        lobby, bare = memories[i], memories[i + 1]
        ratio = lobby.per_connection / bare.per_connection
        ratios.append(ratio)
        for m in (lobby, bare):
            print(f"| {i // 2 + 1} | {m.server} | {m.connections} | {mib(m.before)} | {mib(m.after)} | "
                  f"{m.per_connection:,.0f} | {f'{ratio:.2f}' if m is lobby else ''} |")
    print()
    for i, m in enumerate(memories):
        print(f"  run {i // 2 + 1} {m.server} RSS MiB: "
              + ", ".join(f"{label} {mib(v)}" for label, v in m.steps))
    print()
    print("| run | server | event | watchers | received | reply ms | first ms | median ms | last ms "
          "| server CPU s | last / bare last |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    per_run = max(1, args.closes)
    fan_ratios = []
    for i, (c, b) in enumerate(zip(closes, fanouts, strict=True)):
        fan_ratios.append(c.last / b.last)
        for server, x in (("lobby: event close", c), ("bare: broadcast", b)):
            print(f"| {i // per_run + 1} | {server} | {x.event} | {x.watchers} | {x.received} | "
                  f"{x.reply * 1e3:.0f} | {x.first * 1e3:.0f} | {x.median * 1e3:.0f} | "
                  f"{x.last * 1e3:.0f} | {x.server_cpu:.2f} | "
                  f"{f'{c.last / b.last:.2f}' if x is c else ''} |")
    print()
    verdict = "met" if max(ratios) <= TARGET else (
        "not met" if min(ratios) > TARGET else "met in some runs only")
    print(f"memory per connection, lobby / bare websockets: {', '.join(f'{r:.2f}' for r in ratios)} "
          f"(target <= {TARGET:g}): {verdict}")
    lasts = [c.last for c in closes]
    bare_lasts = [b.last for b in fanouts]
    print(f"event close to the last watcher's ladder_updated: median {statistics.median(lasts):.2f} s "
          f"(min {min(lasts):.2f}, max {max(lasts):.2f}) for {closes[0].watchers} watchers; "
          f"the same frames broadcast by the bare server: median {statistics.median(bare_lasts):.2f} s; "
          f"ratio {', '.join(f'{r:.2f}' for r in fan_ratios)} (median "
          f"{statistics.median(fan_ratios):.2f})")
    missing = sum(c.watchers - c.received for c in closes)
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("Times from just before `event close` (lobby) or the fan-out order (bare) is sent, "
          "CLOCK_MONOTONIC (one clock for all the processes on Linux); 'reply': the admin had the "
          "reply (bare: the server had written every frame); 'first'/'median'/'last': the watchers "
          "had ladder_updated. The bare server sends the frames the admin received from the lobby's "
          "last close (rating_changed of each player, then ladder_updated) with websockets.broadcast.")
    if missing:
        print(f"{missing} watchers never had ladder_updated", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=10_000, help="connections (10000)")
    parser.add_argument("--logged-in", type=int, default=None,
                        help="how many of them log in (all)")
    parser.add_argument("--workers", type=int, default=4, help="client processes (4)")
    parser.add_argument("--ladder-players", type=int, default=200,
                        help="players on the scrabble ladder (200)")
    parser.add_argument("--games", type=int, default=6, help="games in each closed event (6)")
    parser.add_argument("--closes", type=int, default=3, help="events closed, timed (3)")
    parser.add_argument("--repeat", type=int, default=1, help="runs (1)")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds to wait for every watcher's ladder_updated (300)")
    parser.add_argument("--tmp", help="parent of the temporary directory (default: the system's)")
    args = parser.parse_args(argv)
    args.logged_in = args.clients if args.logged_in is None else min(args.logged_in, args.clients)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
