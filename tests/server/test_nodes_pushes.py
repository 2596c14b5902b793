"""Two lobby nodes on one PostgreSQL database: what a command on one node pushes reaches the
connections of the other (through the ``pushes`` table and ``NOTIFY``), once each, and the
node that caused it delivers it once, itself."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from testkit import postgres
from testkit.cli import replay_check, run_cli_async
from testkit.clients import heard, play
from testkit.constants import PASSWORD
from testkit.db import execute
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from server.store.pg import nodes as pg_nodes

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]

EVENT_RACES = 12  # events closed on one server as a game of theirs is voided on the other


async def test_a_push_caused_on_one_node_reaches_the_other_nodes_connections(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    alice, bob = await a.players("alice", "bob")
    await a.player("carol")
    await b.start()  # loads the players registered on a
    carol = await b.login("carol")
    watcher_b = await b.client()
    await watcher_b.watch("backgammon")
    watcher_a = await a.client()
    await watcher_a.watch("backgammon")

    # an event closed on node a: carol, on node b, hears her own rating move
    admin = await a.admin()
    eid = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
    await admin.call("event result", new=True, event=eid, side_a="carol", side_b="alice", score_a=420,
                     score_b=350)
    await admin.call("event close", event=eid)
    to_carol = await heard(carol, rating_changed=1)
    assert [(c["player"], c["ladder"]) for c in to_carol["rating_changed"]] == [
        ("carol", "scrabble")]

    finished = await play(alice, bob)  # on node a; watched on both nodes
    on_b = await heard(watcher_b, match_finished=1, rating_changed=2)
    on_a = await heard(watcher_a, match_finished=1, rating_changed=2)
    for seen in (on_a, on_b):  # each once, the same on both nodes
        assert sorted(seen) == ["match_finished", "rating_changed"]
        assert [m["match"] for m in seen["match_finished"]] == [finished["match"]]
        assert sorted(c["player"] for c in seen["rating_changed"]) == ["alice", "bob"]
    assert on_a == on_b
    assert b.server is not None and b.server.lobby.sharing is not None
    assert b.server.lobby.sharing.heard >= 4  # rating_changed, match_finished, ...


async def test_who_is_online_is_the_same_on_every_node(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """Presence lives in the database's ``online`` table and the nodes' notes: ``who`` and
    ``whois`` on one node show the players of the other, a login on another node replaces
    the first (``logged_out``, close 4000), and a player who leaves one node is offline on
    every node."""
    a, b = nodes
    await a.start()

    async def who(c: LobbyClient, expected: dict[str, str]) -> None:
        while {p["player"]: p["status"] for p in (await c.call("who"))["players"]} != expected:
            await asyncio.sleep(0.05)

    alice = await a.player("alice")
    await (await a.player("carol")).close()  # registered on a, then gone
    await asyncio.wait_for(who(alice, {"alice": "ready"}), 10)
    await b.start()  # alice is online on a already: b reads it from the table
    carol = await b.login("carol")
    watcher = await b.client()
    await asyncio.wait_for(who(watcher, {"alice": "ready", "carol": "ready"}), 10)
    await asyncio.wait_for(who(alice, {"alice": "ready", "carol": "ready"}), 10)
    seen = await watcher.call("whois", name="alice")
    assert (seen["online"], seen["status"]) == (True, "ready")

    again = await a.login("carol")  # a newer login on the other node ends the one on b
    told = await carol.next_push("logged_out", timeout=10)
    assert told["data"]["cause"] == "replaced"
    assert (await carol.next_push("disconnected", timeout=10))["data"]["code"] == 4000
    assert (await again.call("whois", name="carol"))["online"] is True
    await asyncio.wait_for(who(watcher, {"alice": "ready", "carol": "ready"}), 10)

    await alice.close()  # leaves node a: offline everywhere, told to who listens
    offline = await watcher.next_push(
        "presence", timeout=10,
        where=lambda p: {"player": "alice", "status": "offline"} in p["data"]["players"])
    assert offline["event"] == "presence"
    await asyncio.wait_for(who(watcher, {"carol": "ready"}), 10)
    assert (await watcher.call("whois", name="alice"))["online"] is False
    rows = postgres.query(str(a.db), "SELECT name, node, status FROM online")
    assert rows == [("carol", "node-a", "ready")]


async def test_a_node_that_stops_beating_is_found_dead_and_one_that_leaves_is_not(
        nodes: tuple[LobbyServer, LobbyServer], monkeypatch: pytest.MonkeyPatch,
        figures: dict[str, Any]) -> None:
    """Every node beats on its feed's connection; a node whose beat is older than
    ``DEAD_AFTER`` is dead, and the connections of the others hear ``refresh`` (what they
    show may have missed its last pushes). A node that stops cleanly leaves: no ``refresh``."""
    monkeypatch.setattr(pg_nodes, "HEARTBEAT", 0.1)
    monkeypatch.setattr(pg_nodes, "DEAD_AFTER", 0.8)
    a, b = nodes
    await a.start()
    await b.start()
    watcher = await a.client()
    assert a.server is not None and b.server is not None
    sharing = a.server.lobby.sharing
    assert sharing is not None

    async def beating(names: set[str]) -> None:
        while set(sharing.alive) != names:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(beating({"node-b"}), 10)
    rows = postgres.query(str(a.db), "SELECT name, pid FROM nodes ORDER BY name")
    assert rows == [("node-a", os.getpid()), ("node-b", os.getpid())]

    await b.stop()  # leaves cleanly
    await asyncio.wait_for(beating(set()), 10)
    assert sharing.deaths == 0
    assert postgres.query(str(a.db), "SELECT name FROM nodes") == [("node-a",)]

    await b.start()
    await asyncio.wait_for(beating({"node-b"}), 10)
    assert b.server is not None and b.server.lobby.sharing is not None
    b.server.lobby.sharing.feed._task.cancel()  # as SIGKILL: no more beats, no goodbye
    stopped = time.monotonic()
    told = await watcher.next_push("refresh", timeout=10)
    noticed = time.monotonic() - stopped
    assert "stopped" in told["data"]["reason"] and sharing.deaths == 1
    figures["a node's death noticed (beat 0.1 s, dead after 0.8 s)"] = f"{noticed:.2f} s"


async def test_a_retry_on_another_node_gets_the_stored_reply_and_runs_once(
        nodes: tuple[LobbyServer, LobbyServer], figures: dict[str, Any]) -> None:
    """A request retried on another node (the connection dropped, the balancer sent the
    client elsewhere) is answered with the stored reply; the same request sent to two nodes
    at once runs once: the second node's job finds the first's reply under the write lock.
    (The login on the second node ends the first node's, as a newer login does, so the
    first may also answer ``not_logged_in`` or lose its connection: either way, once.)"""
    a, b = nodes
    await a.start()
    await b.start()
    on_a = await a.admin()
    args = {"name": "Spring Open", "ladder": "scrabble"}
    first = await on_a.request("event create", args, request_id="create-1")
    await on_a.close()  # the connection drops; the client comes back through the other node
    on_b = await b.admin()
    again = await on_b.request("event create", args, request_id="create-1")
    assert first["ok"] and again["ok"] and again.get("replayed") is True
    assert again["data"] == first["data"]

    both = 0
    for i in range(10):
        racing = {"name": f"Race {i}", "ladder": "scrabble"}
        here, there = (a, b) if i % 2 else (b, a)
        one, other = await here.admin(), await there.admin()
        replies = await asyncio.gather(
            one.request("event create", racing, request_id=f"race-{i}"),
            other.request("event create", racing, request_id=f"race-{i}"),
            return_exceptions=True)
        done = [r for r in replies if isinstance(r, dict) and r["ok"]]
        assert done and all(r["data"] == done[0]["data"] for r in done), replies
        for r in replies:
            assert isinstance(r, Exception) or r["ok"] or \
                r["error"]["code"] == "not_logged_in", replies
        if len(done) == 2:
            both += 1
            assert sorted(bool(r.get("replayed")) for r in done) == [False, True]
    names = [r[0] for r in postgres.query(str(a.db), "SELECT name FROM events ORDER BY id")]
    assert names == ["Spring Open", *(f"Race {i}" for i in range(10))]
    figures["requests raced on two nodes, both answered (one replayed)"] = f"{both} of 10"


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
async def test_a_killed_server_started_again_on_its_host_does_not_wait_for_its_old_self(
        nodes: tuple[LobbyServer, LobbyServer], reaped: bool) -> None:
    """A server SIGKILLed and started again on the same host (a new pid, so a new default
    name) finds its old self's row still beating recently, but its process gone (or a zombie
    its parent has not reaped yet): it is dead at once, and the players it had are not shown
    as online elsewhere."""
    a, _ = nodes
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    gone.kill()
    if reaped:
        gone.wait()
    else:
        while Path(f"/proc/{gone.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            await asyncio.sleep(0.01)
    url = str(a.db)
    postgres.execute(url, "INSERT INTO nodes (name, host, pid, started_at, beat) VALUES "
                          "('old-self', ?, ?, 'then', extract(epoch from clock_timestamp()))",
                     (socket.gethostname(), gone.pid))
    postgres.execute(url, "INSERT INTO online (name_key, name, node, status) VALUES "
                          "('root', 'root', 'old-self', 'ready')")
    await a.start()
    watcher = await a.client()
    assert (await watcher.call("who"))["players"] == []
    assert (await watcher.call("whois", name="root"))["online"] is False
    assert postgres.query(url, "SELECT count(*) FROM online") == [(0,)]
    assert a.server is not None and a.server.lobby.sharing is not None
    assert a.server.lobby.sharing.alive == {}
    gone.wait()


async def test_each_node_rates_from_what_every_node_committed(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """The same players rated on one node, then on the other, then on the first again: each
    node's writer finds the ratings moved under the other's (the ``ratings`` counter) and
    reloads them before it rates, so the log's replay agrees with every stored rating; and a
    reader on either node, told of a result, finds the ladder as it now is."""
    a, b = nodes
    await a.start()
    await b.start()
    watchers = [await a.client(), await b.client()]
    for w in watchers:
        await w.watch("backgammon")

    async def ladders() -> list[Any]:
        return [(await w.call("ladder", ladder="backgammon", all=True))["players"]
                for w in watchers]

    for played, (node, (winner, loser)) in enumerate(
            ((a, ("alice", "bob")), (b, ("bob", "alice")), (a, ("bob", "alice")),
             (b, ("alice", "bob"))), start=1):
        if played == 1:
            first, second = await node.players(winner, loser)
        else:  # a login on this node ends the one on the other
            first, second = await node.login(winner), await node.login(loser)
        await play(first, second, length=3)
        for w in watchers:  # told of it on both nodes: the ladder read there is the new one
            await heard(w, match_finished=1)
        on_a, on_b = await ladders()
        assert on_a == on_b, (on_a, on_b)
        assert {p["player"]: p["games"] for p in on_a} == {"alice": played, "bob": played}
    assert await replay_check(a.db) == (0, "replay --check: every rating agrees with the "
                                           "match log\n")


async def test_a_feed_whose_connection_is_killed_reconnects_and_loses_no_push(
        nodes: tuple[LobbyServer, LobbyServer], figures: dict[str, Any]) -> None:
    """Node b's feed connection is killed by PostgreSQL (``pg_terminate_backend``) while
    players on node a finish match after match: b reconnects, reads what it missed by
    position, and its watcher hears every ``match_finished`` once, in order (or is told to
    ``refresh``); the ladder read on b is then a's."""
    a, b = nodes
    await a.start()
    await b.start()
    assert b.server is not None and b.server.lobby.sharing is not None
    feed = b.server.lobby.sharing.feed
    watcher = await b.client()
    await watcher.watch("backgammon")
    pairs = [await a.players(f"w{k}", f"l{k}") for k in range(3)]
    acked: list[int] = []
    stop = asyncio.Event()

    async def churn(winner: LobbyClient, loser: LobbyClient) -> None:
        while not stop.is_set():
            acked.append((await play(winner, loser))["match"])

    async def kill_feed() -> None:
        while len(acked) < 6:
            await asyncio.sleep(0.01)
        pid = feed._conn.get_server_pid()
        assert postgres.query(str(a.db), "SELECT pg_terminate_backend(?)", (pid,)) == [(True,)]
        while feed.reconnects == 0 or len(acked) < 18:
            await asyncio.sleep(0.01)
        stop.set()

    await asyncio.gather(kill_feed(), *(churn(w, lo) for w, lo in pairs))
    seen: list[int] = []
    refreshed = False

    async def hear_all() -> None:
        nonlocal refreshed
        while not refreshed and sorted(seen) != sorted(acked):
            push = await watcher.next_push(timeout=10)
            if push["event"] == "match_finished":
                seen.append(push["data"]["match"])
            refreshed = refreshed or push["event"] == "refresh"

    await asyncio.wait_for(hear_all(), 20)
    assert feed.reconnects >= 1
    if not refreshed:  # once each, in commit order (the rating order, ``seq``)
        committed = [r[0] for r in postgres.query(
            str(a.db), "SELECT id FROM matches WHERE status = 'finished' ORDER BY seq")]
        assert seen == committed and sorted(seen) == sorted(acked), (seen, committed)
    ladders = [(await c.call("ladder", ladder="backgammon", all=True))["players"]
               for c in (watcher, pairs[0][0])]
    assert ladders[0] == ladders[1]
    figures["node b's feed killed mid-load"] = (
        f"{len(acked)} matches finished on node a, {len(seen)} heard on b once each in order, "
        f"{feed.reconnects} reconnection(s), refresh: {refreshed}")


async def test_a_replay_from_the_command_line_is_what_a_running_server_rates_from_next(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """A database rated before its ladders had version rows (or by the command line only):
    the server gives every ladder its row when it starts, so a ``matchlobby replay`` while
    it runs (here after the log was mended by hand: a match voided in the database) moves
    the ladder; the server hears of it and rates its next result from what the replay
    wrote, and the log's replay agrees with every stored rating afterwards."""
    a, _ = nodes
    await a.start()
    alice, bob = await a.players("alice", "bob")
    first = await play(alice, bob, length=3)
    await a.stop()
    execute(a.db, "DELETE FROM ladder_versions")  # as a database from before them
    await a.start()
    alice, bob = await a.login("alice"), await a.login("bob")
    execute(a.db, "UPDATE matches SET status = 'voided' WHERE id = ?", (first["match"],))
    done = await run_cli_async(["replay", "--db", str(a.db)], a.db.parent)
    assert done.returncode == 0, done.stdout + done.stderr

    async def replayed() -> None:  # the server shows what the replay wrote
        while (await alice.call("rating"))["ratings"]:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(replayed(), 10)
    await play(alice, bob, length=3)
    assert await replay_check(a.db) == (0, "replay --check: every rating agrees with the "
                                           "match log\n")


async def test_a_correction_racing_a_close_on_another_server_is_rated_with_it(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """An event closed on one server while a director voids one of its games on the other:
    the close and the correction take the event's row one after the other, so either the
    close rates without the game, or the void recomputes the closed event; the ratings stay
    the log's either way."""
    a, b = nodes
    await a.start()
    await b.start()
    made = await run_cli_async(["user", "add", "--admin", "--db", str(a.db), "director2"],
                               a.db.parent, stdin=f"{PASSWORD}\n")
    assert made.returncode == 0, made.stderr
    on_a, on_b = await a.admin(), await b.login("director2")
    outcomes = []
    for i in range(EVENT_RACES):
        event = (await on_a.call("event create", name=f"Night {i}", ladder="scrabble"))["id"]
        games = [await on_a.call("event result", new=True, event=event, side_a=x, side_b=y, score_a=400,
                                 score_b=300 + i)
                 for x, y in (("ann", "bob"), ("cid", "dan"), ("ann", "cid"))]
        closed, voided = await asyncio.gather(
            on_a.request("event close", {"event": event}),
            on_b.request("void", {"match": games[i % 3]["match"], "reason": "typo"}))
        assert closed["ok"], closed
        assert voided["ok"] or voided["error"]["code"] == "conflict", voided
        outcomes.append(voided["ok"] and voided["data"]["recomputed"])
    assert await replay_check(a.db) == (0, "replay --check: every rating agrees with the "
                                           "match log\n"), outcomes


async def test_ready_off_on_one_server_keeps_invitations_away_on_the_other(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    await b.start()
    alice, bob = await a.player("alice"), await b.player("bob")
    await bob.call("ready off")

    async def not_ready_on_a() -> None:
        while {p["player"]: p["status"] for p in (await alice.call("who"))["players"]
               }.get("bob") != "not_ready":
            await asyncio.sleep(0.05)

    await asyncio.wait_for(not_ready_on_a(), 10)
    refused = await alice.request("invite", {"name": "bob", "ladder": "backgammon"})
    assert refused["error"]["code"] == "conflict", refused
    await bob.call("ready on")

    async def invited() -> None:
        while not (await alice.request("invite", {"name": "bob", "ladder": "backgammon"}))["ok"]:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(invited(), 10)
    assert (await bob.next_push("invited", timeout=10))["data"]["from"] == "alice"
