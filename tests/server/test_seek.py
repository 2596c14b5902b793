"""Automatch over real connections: seek puts a player in the pool, unseek takes them out, and
the server pairs seekers of one ladder and length whose ratings are within each other's
range, the closest win chance first, and starts their match (match_started to both, with the
stake). Concurrent seeks pair nobody twice, on one server and on two servers sharing one
PostgreSQL database."""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit.clients import RecordingClient, settle, start_match
from testkit.probes import wait_until
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer, with_ladders

from clients import LobbyError
from server.lobby import Lobby
from server.store import seeks as seeks_store

NO_WIDENING = {"seek_widen_points": 0.0}


def configured(**changes: Any) -> Any:
    return lambda config: replace(config, **changes)


def lobby_of(h: LobbyServer) -> Lobby:
    assert h.server is not None
    return h.server.lobby


async def refused(c: RecordingClient, code: str, cmd: str, **args: Any) -> str:
    with pytest.raises(LobbyError) as e:
        await c.call(cmd, **args)
    assert e.value.code == code, e.value
    return str(e.value.message)


async def settled(*nodes: LobbyServer) -> None:
    """Each node has run a whole pass after everything committed so far (the pass under way
    may have read the pool before)."""
    marks = [lobby_of(n).seeking.passes for n in nodes]
    for more in (1, 2):
        for n in nodes:
            lobby_of(n).seeking._wake.set()
        await wait_until(lambda more=more: all(
            lobby_of(n).seeking.passes >= m + more for n, m in zip(nodes, marks, strict=True)),
            what="a whole pass on every node")


async def spread_ratings(h: LobbyServer, names: list[str]) -> dict[str, float]:
    """Ratings spread over a few hundred points: the i-th player beats a sparring partner i
    times in 25-point matches (entered by a director); each one's backgammon rating."""
    admin = await h.admin()
    eid = (await admin.call("event create", name="Seeding", ladder="backgammon"))["id"]
    rows = [f"Seeding,{today()},{name},spar{i},25,0,25,"
            for i, name in enumerate(names) for _ in range(i)]
    if rows:
        await admin.call("event import", new=True, event=eid, csv=results_text(rows))
    table = await admin.call("ladder", ladder="backgammon", count=1000, all=True)
    got = {r["player"]: float(r["rating"]) for r in table["players"]}
    return {n: got.get(n, 1500.0) for n in names}


def chance(a: float, b: float, length: int) -> float:
    """FIBS's expectation (RATINGS.md), as the stake shows it."""
    diff = abs(a - b)
    underdog = 1.0 / (10 ** (diff * length ** 0.5 / 2000.0) + 1.0)
    return 0.5 if a == b else (1 - underdog if a > b else underdog)


async def started(clients: list[RecordingClient]) -> dict[str, list[dict[str, Any]]]:
    """Every ``match_started`` each client has been pushed, by player (after a round trip:
    what was sent has arrived)."""
    return {c.name: [p["data"] for p in await settle(c) if p["event"] == "match_started"]
            for c in clients}


# ---- the pool, one server ---------------------------------------------------------------------


async def test_a_pool_of_spread_ratings_pairs_each_within_both_ranges(db_path: Path) -> None:
    """Twelve players of spread ratings seek at once, each with a range of their own: every
    pair formed is within both ranges, nobody is paired twice, both players of a match hear
    the same match_started with the stake, and of those left in the pool no two fit."""
    h = LobbyServer(db_path, configure=configured(**NO_WIDENING))
    try:
        await h.start()
        names = [f"sp{i:02d}" for i in range(12)]
        clients = await h.players(*names)
        ratings = await spread_ratings(h, names)
        assert max(ratings.values()) - min(ratings.values()) > 150
        rng = random.Random(14)
        ranges = {n: rng.choice([15, 30, 45, 70, 120]) for n in names}
        replies = await asyncio.gather(*(c.call("seek", ladder="backgammon", length=5,
                                                range=ranges[c.name]) for c in clients))
        assert [r["range"] for r in replies] == [ranges[n] for n in names]
        await settled(h)
        got = await started(clients)
        matches: dict[int, dict[str, Any]] = {}
        for name, pushes in got.items():
            assert len(pushes) <= 1, f"{name} was paired twice: {pushes}"
            for m in pushes:
                assert matches.setdefault(m["match"], m) == m  # both heard the same
        assert matches, "nobody was paired"
        paired: set[str] = set()
        for m in matches.values():
            a, b = m["a"], m["b"]
            assert {a, b} <= set(got) and got[a] == got[b] == [m]
            gap = abs(ratings[a] - ratings[b])
            assert gap <= ranges[a] and gap <= ranges[b], (a, b, gap)
            assert (m["ladder"], m["length"], m["status"]) == ("backgammon", 5, "playing")
            stake = {p["player"]: p for p in m["stake"]["players"]}
            assert stake[a]["chance"] == pytest.approx(chance(ratings[a], ratings[b], 5))
            paired |= {a, b}
        pool = (await clients[0].call("seeks"))["seeks"]
        left = {s["player"] for s in pool}
        assert left == set(names) - paired
        for x, y in itertools.combinations(sorted(left), 2):
            gap = abs(ratings[x] - ratings[y])
            assert gap > ranges[x] or gap > ranges[y], f"{x} and {y} fit but were not paired"
        for s in pool:
            assert s["rating"] == pytest.approx(ratings[s["player"]])
    finally:
        await h.aclose()


async def test_the_closest_win_chance_is_preferred(db_path: Path) -> None:
    """Two waiting players who do not fit each other both fit a third: the third is paired
    with the one whose win chance against them is closer to 50 %."""
    h = LobbyServer(db_path, configure=configured(**NO_WIDENING))
    try:
        await h.start()
        names = ["low", "mid", "high", "top"]
        low, mid, high, _ = await h.players(*names)
        r = await spread_ratings(h, names)
        assert r["low"] < r["mid"] < r["high"]
        near = "low" if r["mid"] - r["low"] < r["high"] - r["mid"] else "high"
        gap = r["high"] - r["low"]
        reach = int(max(r["mid"] - r["low"], r["high"] - r["mid"])) + 1
        assert reach < gap
        await low.call("seek", ladder="backgammon", range=reach)
        await high.call("seek", ladder="backgammon", range=reach)
        await settled(h)
        assert len((await mid.call("seeks", ladder="backgammon"))["seeks"]) == 2
        await mid.call("seek", ladder="backgammon", range=int(gap) + 1)
        m = (await mid.next_push("match_started"))["data"]
        assert {m["a"], m["b"]} == {"mid", near}
        left = (await mid.call("seeks"))["seeks"]
        assert [s["player"] for s in left] == ["high" if near == "low" else "low"]
    finally:
        await h.aclose()


async def test_waiting_widens_the_range(db_path: Path) -> None:
    """Two players far apart with no range at all are paired once the pool has widened
    their ranges enough (here 100 points every 0.2 s)."""
    h = LobbyServer(db_path, configure=configured(seek_widen_points=100.0,
                                                  seek_widen_seconds=0.2))
    try:
        await h.start()
        names = ["slow", "x1", "x2", "x3", "fast"]
        clients = await h.players(*names)
        r = await spread_ratings(h, names)
        assert r["fast"] - r["slow"] > 100
        slow, fast = clients[0], clients[-1]
        await slow.call("seek", ladder="backgammon", range=0)
        await fast.call("seek", ladder="backgammon", range=0)
        m = (await slow.next_push("match_started"))["data"]
        assert {m["a"], m["b"]} == {"slow", "fast"}
        assert (await fast.next_push("match_started"))["data"] == m
    finally:
        await h.aclose()


GLICKO = """
[[ladders]]
name = "backgammon"
system = "fibs"

[[ladders]]
name = "chess"
system = "glicko2"
"""


async def test_a_glicko2_ladder_widens_by_the_deviation(db_path: Path) -> None:
    """On a Glicko-2 ladder a range of 0 still reaches twice the players' RD: a winner and a
    newcomer, a hundred and more points apart, are paired at once."""
    config = db_path.with_name("ladders.toml")
    config.write_text(GLICKO, encoding="utf-8")
    h = LobbyServer(db_path, configure=lambda c: replace(
        with_ladders(config)(c), seek_widen_points=0.0))
    try:
        await h.start()
        winner, loser, newcomer = await h.players("winner", "loser", "newcomer")
        await start_match(winner, loser, ladder="chess")
        await loser.call("resign")
        pool_view = (await winner.call("rating", name="winner", ladder="chess"))["ratings"][0]
        assert pool_view["rating"] - 1500 > 100 and pool_view["rd"] > 60
        # what the pool pairs by is the plugin's: the published rating and RD, and the stake's
        # chance (Glicko-2's expectation)
        seeking = lobby_of(h).seeking
        assert seeking.standing("chess", "winner") == (pool_view["rating"], pool_view["rd"])
        assert seeking.standing("backgammon", "winner") == (1500.0, 0.0)
        stake = await winner.call("stake", name="newcomer", ladder="chess")
        ours = seeking.chance(seeking._seeker({"player_id": 1, "name": "winner", "ladder": "chess",
                                               "length": 1, "points": 0}, 0.0),
                              seeking._seeker({"player_id": 2, "name": "newcomer",
                                               "ladder": "chess", "length": 1, "points": 0}, 0.0))
        assert ours == pytest.approx(stake["players"][0]["chance"])
        await winner.call("seek", ladder="chess", range=0)
        await newcomer.call("seek", ladder="chess", range=0)
        m = (await newcomer.next_push("match_started"))["data"]
        assert {m["a"], m["b"]} == {"winner", "newcomer"} and m["ladder"] == "chess"
    finally:
        await h.aclose()


# ---- the rules around a seek -----------------------------------------------------------------


async def test_seek_replies_replaces_and_refuses_what_cannot_be(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    first = await alice.call("seek", ladder="backgammon", length=7)
    assert (first["ladder"], first["length"], first["range"], first["replaced"]) == (
        "backgammon", 7, 100, None)
    second = await alice.call("seek", ladder="BACKGAMMON", range=30)
    assert second["replaced"] == {"ladder": "backgammon", "length": 7}
    assert (second["ladder"], second["length"], second["range"]) == ("backgammon", 1, 30)
    pool = (await bob.call("seeks"))["seeks"]
    assert [(s["player"], s["length"], s["range"]) for s in pool] == [("alice", 1, 30)]

    assert "rated when its events close" in await refused(bob, "bad_request", "seek",
                                                          ladder="scrabble")
    await refused(bob, "not_found", "seek", ladder="nosuch")
    await refused(bob, "bad_request", "seek", ladder="backgammon", range=-5)
    await refused(bob, "bad_request", "seek", ladder="backgammon", length=0)
    reply = await bob.send_line("seek backgammon 1 --range lots")
    assert reply["ok"] is False and reply["error"]["code"] == "bad_request"
    await refused(bob, "not_found", "unseek")
    guest = await lobby.client()
    await refused(guest, "not_logged_in", "seek", ladder="backgammon")
    assert (await guest.call("seeks", ladder="backgammon"))["seeks"][0]["player"] == "alice"

    await bob.call("ready off")
    assert "ready on" in await refused(bob, "conflict", "seek", ladder="backgammon")
    await bob.call("ready on")
    await start_match(bob, carol)
    assert "already playing" in await refused(bob, "conflict", "seek", ladder="backgammon")
    gone = await alice.call("unseek")
    assert gone == {"ladder": "backgammon", "length": 1}
    assert (await bob.call("seeks"))["seeks"] == []


async def test_a_seek_goes_on_disconnect_logout_and_a_join(lobby: LobbyServer) -> None:
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    watcher = await lobby.client()

    async def pool() -> list[str]:
        return [s["player"] for s in (await watcher.call("seeks"))["seeks"]]

    await alice.call("seek", ladder="backgammon", length=3)
    await bob.call("seek", ladder="backgammon", length=5)
    await carol.call("seek", ladder="backgammon", length=9)
    assert await pool() == ["alice", "bob", "carol"]
    await alice.close()
    await wait_until(lambda: pool_without("alice", pool), what="alice's seek gone")
    await bob.call("logout")
    await wait_until(lambda: pool_without("bob", pool), what="bob's seek gone")
    await start_match(dave, carol)
    assert await pool() == []
    await settled(lobby)
    assert lobby_of(lobby).match_of.get("carol") is not None


async def pool_without(name: str, pool: Any) -> bool:
    return name not in await pool()


async def test_a_block_keeps_two_seekers_apart(lobby: LobbyServer) -> None:
    """A player who blocks another (the blocks table) is never paired with them."""
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    ids = {n: lobby_of(lobby).players[n].id for n in ("alice", "bob")}
    await lobby_of(lobby).db.write(lambda tx: tx.execute(
        "INSERT INTO blocks (blocker_id, blocked_id) VALUES (?, ?)", (ids["bob"], ids["alice"])))
    await alice.call("seek", ladder="backgammon")
    await bob.call("seek", ladder="backgammon")
    await settled(lobby)
    assert len((await carol.call("seeks"))["seeks"]) == 2
    await carol.call("seek", ladder="backgammon")
    m = (await carol.next_push("match_started"))["data"]
    assert {m["a"], m["b"]} == {"carol", "alice"}  # alice waited longest
    assert [s["player"] for s in (await carol.call("seeks"))["seeks"]] == ["bob"]


# ---- races -----------------------------------------------------------------------------------


def check_no_double(got: dict[str, list[dict[str, Any]]]) -> dict[int, dict[str, Any]]:
    matches: dict[int, dict[str, Any]] = {}
    for name, pushes in got.items():
        assert len(pushes) <= 1, f"{name} was paired twice: {pushes}"
        for m in pushes:
            assert matches.setdefault(m["match"], m) == m
            assert name in (m["a"], m["b"])
    for m in matches.values():
        assert got[m["a"]] == got[m["b"]] == [m]
    return matches


async def resign_all(clients: list[RecordingClient], matches: dict[int, dict[str, Any]]) -> None:
    """Each match ends (its first player resigns), before the next round seeks."""
    by_name = {c.name: c for c in clients}
    for m in matches.values():
        await by_name[m["a"]].call("resign")
        await by_name[m["b"]].next_push("match_finished")


async def test_concurrent_seeks_pair_nobody_twice(lobby: LobbyServer) -> None:
    """Rounds of twenty players seeking at once (some seeking twice, replacing their seek):
    everybody fits everybody, so all but at most one are paired, each exactly once."""
    for round_ in range(3):
        names = [f"r{round_}p{i:02d}" for i in range(20)]
        clients = await lobby.players(*names)
        again = clients[::4]
        await asyncio.gather(*(c.call("seek", ladder="backgammon", range=500)
                               for c in [*clients, *again]))
        await settled(lobby)
        got = await started(clients)
        matches = check_no_double(got)
        assert len(matches) == 10
        await resign_all(clients, matches)


async def test_two_nodes_never_pair_one_player_twice(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """Players on two servers of one PostgreSQL database seek at once, each server pairing
    from the one pool: each player is paired once, both players of a match hear the same
    match_started wherever they are, and each node knows the matches the other started."""
    a, b = nodes
    await a.start()
    await b.start()
    for round_ in range(3):
        names = [f"n{round_}p{i:02d}" for i in range(16)]
        clients = [await (a if i % 2 else b).player(n) for i, n in enumerate(names)]
        await asyncio.gather(*(c.call("seek", ladder="backgammon", range=500)
                               for c in clients))
        first = {c.name: [(await c.next_push("match_started"))["data"]] for c in clients}
        await settled(a, b)
        later = await started(clients)
        matches = check_no_double({n: first[n] + later[n] for n in names})
        assert len(matches) == 8
        assert lobby_of(a).seeking.formed + lobby_of(b).seeking.formed == 8 * (round_ + 1)
        for m in matches.values():
            await wait_until(lambda m=m: all(lobby_of(n).match_of.get(m["a"]) == m["match"]
                                             for n in (a, b)), what="both nodes know it")
        await resign_all(clients, matches)


async def test_a_join_and_a_pairing_racing_start_one_match(lobby: LobbyServer) -> None:
    """alice has invited bob and is seeking; bob joins as carol seeks. Whichever commits first,
    alice plays one match: with bob (her seek is dropped) or with carol (the join is refused:
    alice is playing, or her invitation was withdrawn). Every other round bob joins once the
    pairing is done."""
    outcomes = set()
    for n in range(8):
        alice, bob, carol = await lobby.players(f"a{n}", f"b{n}", f"c{n}")
        await alice.call("invite", name=bob.name, ladder="backgammon")
        await bob.next_push("invited")
        await alice.call("seek", ladder="backgammon", range=500)
        if n % 2:  # the join sent as the seek is
            joined, _ = await asyncio.gather(bob.request("join", {"name": alice.name}),
                                             carol.call("seek", ladder="backgammon", range=500))
        else:  # the join once the pairing is done
            await carol.call("seek", ladder="backgammon", range=500)
            await settled(lobby)
            joined = await bob.request("join", {"name": alice.name})
        await settled(lobby)
        got = await started([alice, bob, carol])
        mine = got[alice.name]  # an invitation's inviter hears match_started too
        assert len(mine) == 1, (joined, got)
        assert not joined["ok"] or joined["data"] == mine[0]
        opponent = mine[0]["b"] if mine[0]["a"] == alice.name else mine[0]["a"]
        outcomes.add(opponent[0])
        if joined["ok"]:
            assert opponent == bob.name and got[carol.name] == []
        else:
            # refused as alice is playing, or as the pairing withdrew her invitation
            assert joined["error"]["code"] in ("conflict", "not_found")
            assert opponent == carol.name
        live = await lobby_of(lobby).db.fetchall(
            "SELECT m.id FROM matches m JOIN match_players mp ON mp.match_id = m.id "
            "WHERE mp.player_id = ? AND m.status = 'playing'",
            (lobby_of(lobby).players[alice.name].id,))
        assert [r[0] for r in live] == [mine[0]["match"]]
        await alice.call("resign")
        if opponent == bob.name:
            await carol.call("unseek")
    assert "c" in outcomes  # (the joins after the pairing were refused)


async def test_a_join_is_refused_while_a_pairing_of_its_inviter_begins(lobby: LobbyServer
                                                                       ) -> None:
    """A pass has paired alice and carol and committed their match, which has not begun here
    yet (held just after its commit), when bob joins alice's invitation: the join is refused,
    and alice plays one match, carol's."""
    server = lobby_of(lobby)
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.next_push("invited")
    write, committed, go_on = server.db.write, asyncio.Event(), asyncio.Event()

    async def held(job: Any, reserve: bool = False) -> Any:
        done = await write(job, reserve)
        task = asyncio.current_task()
        if task is not None and task.get_name() == "automatch":
            committed.set()
            await go_on.wait()
        return done

    server.db.write = held  # type: ignore[method-assign]
    try:
        await alice.call("seek", ladder="backgammon", range=500)
        await carol.call("seek", ladder="backgammon", range=500)
        await asyncio.wait_for(committed.wait(), 10)
        assert "a moment ago" in await refused(bob, "conflict", "join", name="alice")
    finally:
        go_on.set()
        server.db.write = write  # type: ignore[method-assign]
    started = (await alice.next_push("match_started"))["data"]
    assert {started["a"], started["b"]} == {"alice", "carol"}
    live = await server.db.fetchall(
        "SELECT m.id FROM matches m JOIN match_players mp ON mp.match_id = m.id "
        "WHERE mp.player_id = ? AND m.status = 'playing'", (server.players["alice"].id,))
    assert [r[0] for r in live] == [started["match"]]
    await bob.next_push("invitation_withdrawn")
    await alice.call("resign")
    await start_match(bob, alice)  # her match began: nothing holds her back any more


async def test_a_disputed_match_does_not_keep_its_players_out_of_the_pool(
        lobby: LobbyServer) -> None:
    """A disputed match waits for an admin and holds neither player: both may seek, and are
    paired."""
    alice, bob = await lobby.players("alice", "bob")
    disputed = await start_match(alice, bob)
    await alice.call("report win")
    await bob.next_push("result_claimed")
    await bob.call("dispute", match=disputed)
    await alice.call("seek", ladder="backgammon")
    await bob.call("seek", ladder="backgammon")
    started = (await alice.next_push("match_started"))["data"]
    assert started["match"] != disputed and {started["a"], started["b"]} == {"alice", "bob"}


async def test_a_paired_player_s_invitations_are_withdrawn(lobby: LobbyServer) -> None:
    """hal invited ivy; hal and jan are paired by their seeks: ivy is told the invitation is
    withdrawn, and it is no longer there to join."""
    hal, ivy, jan = await lobby.players("hal", "ivy", "jan")
    await hal.call("invite", name="ivy", ladder="backgammon")
    await ivy.next_push("invited")
    await hal.call("seek", ladder="backgammon", range=500)
    await jan.call("seek", ladder="backgammon", range=500)
    await hal.next_push("match_started")
    assert (await ivy.next_push("invitation_withdrawn"))["data"]["from"] == "hal"
    assert (await ivy.call("invitations"))["received"] == []


@pytest.mark.parametrize("change", ["unseek", "seek again"])
async def test_a_seek_changed_on_one_node_as_the_other_pairs_is_one_or_the_other(
        nodes: tuple[LobbyServer, LobbyServer], monkeypatch: pytest.MonkeyPatch,
        change: str) -> None:
    """Node a's pass has read the pool (both seekers in it) when bob, on node b, withdraws his
    seek or replaces it with another length. Whichever commits first decides: bob's change
    waits for the pass; he is paired and his change is refused, never both paired and told
    his change was made."""
    a, b = nodes
    await a.start()
    await b.start()
    entered, release = asyncio.Event(), asyncio.Event()
    original = seeks_store.hold_players

    async def paused(tx: Any, ids: Any) -> None:  # the pass, between the pool and the players
        if not entered.is_set():
            entered.set()
            await release.wait()
        await original(tx, ids)

    async def never() -> bool:
        return False

    monkeypatch.setattr(lobby_of(b).seeking, "_worth_a_pass", never)  # node a pairs
    monkeypatch.setattr(seeks_store, "hold_players", paused)
    alice, bob = await a.player("alice"), await b.player("bob")
    await alice.call("seek", ladder="backgammon", range=500)
    await bob.call("seek", ladder="backgammon", range=500)
    await asyncio.wait_for(entered.wait(), 10)
    args = {} if change == "unseek" else {"ladder": "backgammon", "length": 5, "range": 500}
    changed = asyncio.create_task(bob.request("unseek" if change == "unseek" else "seek", args))
    await asyncio.sleep(0.3)  # bob's change reaches the database while the pass holds the pool
    release.set()
    reply = await changed
    started = (await bob.next_push("match_started"))["data"]  # the pass went first
    assert started["length"] == 1
    assert not reply["ok"], reply
    assert reply["error"]["code"] == ("not_found" if change == "unseek" else "conflict")
    assert (await bob.call("seeks"))["seeks"] == []
