"""A live match whose players are on different nodes of one PostgreSQL database: a player
who moves to another node (the balancer sent the reconnection there) plays on, every node
follows the match (the nodes' notes), and the match's row decides every race between nodes:
exactly one outcome, whatever node each side is on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit import postgres
from testkit.cli import replay_check
from testkit.clients import heard, play, start_match
from testkit.constants import PLAY_FREELY
from testkit.server_loop import LobbyServer
from testkit.sizes import count

from clients import LobbyClient
from server.config import DEFAULT_LADDERS, Limits, ladder_config

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]

REPLAY_CLEAN = (0, "replay --check: every rating agrees with the match log\n")
RACES = count("MATCHLOBBY_NODE_RACES", 96)  # races between nodes, all families together
PAIRS = 8  # pairs of players racing at once
INVITATION_RACES = 8


async def playing_on(node: LobbyServer, name: str, match: int) -> None:
    """``node`` knows that ``name`` plays ``match`` (its copy follows the other node's)."""
    assert node.server is not None
    lobby = node.server.lobby
    while lobby.match_of.get(name) != match:
        await asyncio.sleep(0.02)


async def moved(node: LobbyServer, name: str, old: LobbyClient) -> LobbyClient:
    """``name`` logs in on ``node``; the login on the other node ends (``logged_out``)."""
    new = await node.login(name)
    await old.next_push("logged_out", timeout=10)
    return new


async def test_a_player_who_moves_to_another_node_plays_on_there(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """alice and bob start on node a; bob comes back through node b, where his match is
    his: he claims a win there, alice confirms it on node a (the claim reached her from
    node b), the match finishes once, rated once; then a second match is resigned on node b
    and its end reaches alice on node a."""
    a, b = nodes
    await a.start()
    await b.start()
    alice, bob = await a.players("alice", "bob")
    watcher = await b.client()
    await watcher.watch("backgammon")
    match = await start_match(alice, bob, length=3)
    await asyncio.wait_for(playing_on(b, "bob", match), 10)
    bob = await moved(b, "bob", bob)
    assert (await bob.call("whois", name="bob"))["status"] == "playing"

    claimed = await bob.call("report win", score_a=3, score_b=1)
    assert claimed["status"] == "claimed"
    told = await alice.next_push("result_claimed", timeout=10)
    assert told["data"] == claimed
    done = await alice.call("confirm", match=match)
    assert (done["winner"], done["how"], done["rated"]) == ("bob", "confirm", True)
    got = await heard(bob, match_finished=1)
    assert [m["match"] for m in got["match_finished"]] == [match]
    await heard(watcher, match_finished=1)

    await asyncio.wait_for(forgotten(a, b), 10)

    bob = await moved(a, "bob", bob)  # both on node a again; then alice goes to node b
    second = await start_match(alice, bob)
    await asyncio.wait_for(playing_on(b, "alice", second), 10)
    alice = await moved(b, "alice", alice)
    resigned = await alice.call("resign")
    assert (resigned["match"], resigned["winner"]) == (second, "bob")
    got = await heard(bob, match_finished=1)
    assert got["match_finished"] == [resigned]
    await asyncio.wait_for(forgotten(a, b), 10)
    assert await replay_check(a.db) == REPLAY_CLEAN


async def forgotten(*servers: LobbyServer) -> None:
    """No node holds a live match any more."""
    for node in servers:
        assert node.server is not None
        while node.server.lobby.matches or node.server.lobby.match_of:
            await asyncio.sleep(0.02)


async def test_a_player_who_leaves_another_node_can_be_claimed_against(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """bob moves to node b and leaves it: alice, on node a, is told (``presence``) and may
    claim once the drop timeout has passed, not before."""
    a, b = nodes
    await a.start(drop_timeout=0.5)
    await b.start(drop_timeout=0.5)
    alice, bob = await a.players("alice", "bob")
    match = await start_match(alice, bob)
    await asyncio.wait_for(playing_on(b, "bob", match), 10)
    bob = await moved(b, "bob", bob)
    refused = await alice.request("claim", {"match": match})
    assert refused["error"]["code"] == "conflict" and "connected" in refused["error"]["message"]
    await bob.close()
    left = await alice.next_push("presence", timeout=10, where=lambda p: any(
        (e["player"], e["status"]) == ("bob", "offline") for e in p["data"]["players"]))
    [entry] = [e for e in left["data"]["players"] if e["player"] == "bob"]
    assert entry["match"] == match and 0 <= entry["claim_in"] <= 1  # when she may claim
    await asyncio.sleep(0.6)
    done = await alice.call("claim", match=match)
    assert (done["winner"], done["how"]) == ("alice", "claim")
    await asyncio.wait_for(forgotten(a, b), 10)
    assert await replay_check(a.db) == REPLAY_CLEAN


async def _race(first: Any, second: Any) -> list[dict[str, Any]]:
    return list(await asyncio.gather(first, second))


async def later(delay: float, request: Any) -> Any:
    """``request`` sent ``delay`` seconds from now (the race's other side goes first)."""
    await asyncio.sleep(delay)
    return await request


async def test_races_between_nodes_have_exactly_one_outcome(
        nodes: tuple[LobbyServer, LobbyServer], figures: dict[str, Any]) -> None:
    """In each of :data:`PAIRS` pairs at once, one player on node a and the other on node b
    (invited across the nodes) send, at the same moment, two commands only one of which can
    be: both resign, both claim a win, or (the first having claimed) the first resigns as
    the second confirms. The match's row, read under the write lock, decides: one succeeds,
    the other is refused (``conflict``, or ``not_found`` once its node has heard the match
    ended, as on one node; never ``internal``), and the log's replay agrees.
    ``MATCHLOBBY_NODE_RACES`` races in all (at least one of each family for each pair)."""
    a, b = nodes
    for node in nodes:  # each client sends as fast as its replies come back
        node.limits = Limits(messages_per_second=1e6, burst=1_000_000, **PLAY_FREELY)
    await a.start()
    await b.start()
    families = ("resign/resign", "report/report", "resign/confirm")
    rounds = max(1, -(-RACES // (PAIRS * len(families))))
    outcomes: dict[str, dict[str, int]] = {f: {} for f in families}

    async def pair(k: int) -> int:
        first, second = f"x{k}", f"y{k}"
        one, other = await a.player(first), await b.player(second)
        await asyncio.wait_for(online_on(a, second), 10)
        races = 0
        for i in range(rounds * len(families)):
            family = families[i % len(families)]
            match = await start_match(one, other)
            await asyncio.wait_for(playing_on(b, first, match), 10)
            if family == "resign/resign":
                replies = await _race(one.request("resign"), other.request("resign"))
            elif family == "report/report":
                replies = await _race(one.request("report win"), other.request("report win"))
            else:
                await one.call("report win")
                await other.next_push("result_claimed", timeout=10)
                replies = await _race(one.request("resign"),
                                      other.request("confirm", {"match": match}))
            won = [r for r in replies if r["ok"]]
            lost = [r for r in replies if not r["ok"]]
            assert len(won) == 1 and len(lost) == 1, (family, replies)
            assert lost[0]["error"]["code"] in ("conflict", "not_found"), (family, replies)
            side = "first" if replies[0]["ok"] else "second"
            outcomes[family][side] = outcomes[family].get(side, 0) + 1
            if family == "report/report":  # the claim stands: its opponent answers it
                answering = other if side == "first" else one
                await answering.next_push("result_claimed", timeout=10)
                await answering.call("confirm", match=match)
            await asyncio.wait_for(free(first, second), 10)
            races += 1
        return races

    async def free(*names: str) -> None:
        for node in (a, b):
            assert node.server is not None
            while any(n in node.server.lobby.match_of for n in names):
                await asyncio.sleep(0.02)

    raced = sum(await asyncio.gather(*(pair(k) for k in range(PAIRS))))
    assert raced == PAIRS * rounds * len(families) >= RACES
    checked = await replay_check(a.db)
    assert checked == REPLAY_CLEAN, checked[1]
    assert postgres.query(str(a.db), "SELECT count(*) FROM matches WHERE status = 'finished'"
                          ) == [(raced,)]
    figures[f"races between two nodes ({raced}, {PAIRS} pairs at once), won by the side on "
            "node a / node b"] = "; ".join(
        f"{f}: {o.get('first', 0)}/{o.get('second', 0)}" for f, o in outcomes.items())


async def test_invitations_cross_nodes_and_their_row_decides_each_answer(
        nodes: tuple[LobbyServer, LobbyServer], figures: dict[str, Any]) -> None:
    """alice on node a invites bob on node b: he is told, lists it there, declines it
    (alice is told); invited again, he joins on node b a match alice plays on node a. An
    invitation withdrawn on one node as it is answered on the other: the row decides, once.
    Who signs out takes their invitations with them, on every node."""
    a, b = nodes
    await a.start()
    await b.start()
    alice = await a.player("alice")
    bob = await b.player("bob")
    await asyncio.wait_for(online_on(a, "bob"), 10)

    await alice.call("invite", name="bob", ladder="backgammon", length=3)
    invited = await bob.next_push("invited", timeout=10)
    assert (invited["data"]["from"], invited["data"]["length"]) == ("alice", 3)
    listed = await bob.call("invitations")
    assert [(i["from"], i["ladder"]) for i in listed["received"]] == [("alice", "backgammon")]
    await bob.call("decline", name="alice")
    assert (await alice.next_push("declined", timeout=10))["data"] == {"by": "bob"}
    await asyncio.wait_for(no_invitations(a, b), 10)

    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.next_push("invited", timeout=10)
    started = await bob.call("join", name="alice")
    assert (await alice.next_push("match_started", timeout=10))["data"] == started
    await asyncio.wait_for(playing_on(a, "alice", started["match"]), 10)
    await asyncio.wait_for(no_invitations(a, b), 10)
    done = await alice.call("resign")
    assert (await heard(bob, match_finished=1))["match_finished"] == [done]
    await asyncio.wait_for(forgotten(a, b), 10)
    # node b lists the stake from the ratings node a's match moved, not the one it showed
    again = await alice.call("invite", name="bob", ladder="backgammon", length=3)
    await bob.next_push("invited", timeout=10)
    assert again["stake"] != listed["received"][0]["stake"]
    assert [i["stake"] for i in (await bob.call("invitations"))["received"]] == [again["stake"]]
    await alice.call("uninvite", name="bob")
    await asyncio.wait_for(no_invitations(a, b), 10)

    joined = withdrawn = 0
    for i in range(INVITATION_RACES):
        await alice.call("invite", name="bob", ladder="backgammon")
        await bob.next_push("invited", timeout=10)
        replies = await _race(later(i % 4 * 0.004, alice.request("uninvite", {"name": "bob"})),
                              bob.request("join", {"name": "alice"}))
        assert [r["ok"] for r in replies].count(True) == 1, replies
        assert all(r["ok"] or r["error"]["code"] in ("not_found", "conflict") for r in replies)
        started = next((r for r in replies if r["ok"] and r["cmd"] == "join"), None)
        if started is not None:
            joined += 1
            await asyncio.wait_for(playing_on(a, "alice", started["data"]["match"]), 10)
            await alice.call("resign")
            await asyncio.wait_for(forgotten(a, b), 10)
        else:
            withdrawn += 1
        await asyncio.wait_for(no_invitations(a, b), 10)
    assert joined + withdrawn == INVITATION_RACES
    figures[f"uninvite on node a racing join on node b ({INVITATION_RACES} races)"] = (
        f"joined {joined}, withdrawn {withdrawn}")

    await alice.call("invite", name="bob", ladder="backgammon")
    await bob.next_push("invited", timeout=10)
    await alice.close()  # signs out: the invitation lapses everywhere
    await asyncio.wait_for(no_invitations(a, b), 10)
    assert postgres.query(str(a.db), "SELECT count(*) FROM invitations") == [(0,)]
    assert await replay_check(a.db) == REPLAY_CLEAN


async def online_on(node: LobbyServer, name: str) -> None:
    assert node.server is not None
    while name not in node.server.lobby.elsewhere and name not in node.server.lobby.online:
        await asyncio.sleep(0.02)


async def test_an_invitation_made_alone_gets_its_row_when_another_node_comes(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """Alone, a node keeps its invitations in memory only; when another node starts beating
    each standing one gets its row, and the newcomer knows it; the answer takes the row, and
    the newcomer's copy follows."""
    a, b = nodes
    await a.start()
    alice, bob = await a.player("alice"), await a.player("bob")
    await alice.call("invite", name="bob", ladder="backgammon", length=3)
    await bob.next_push("invited", timeout=10)
    assert postgres.query(a.db, "SELECT count(*) FROM invitations") == [(0,)]
    await b.start()
    assert b.server is not None
    newcomer = b.server.lobby

    async def stored_and_known() -> None:
        while postgres.query(a.db, "SELECT inviter_key, invitee_key, length FROM "
                                   "invitations") != [("alice", "bob", 3)] \
                or newcomer.invitations.get("bob", "alice") is None:
            await asyncio.sleep(0.05)

    await asyncio.wait_for(stored_and_known(), 15)
    started = await bob.call("join", name="alice")  # the row decides: taken
    assert (await alice.next_push("match_started", timeout=10))["data"] == started
    assert postgres.query(a.db, "SELECT count(*) FROM invitations") == [(0,)]
    await asyncio.wait_for(no_invitations(a, b), 10)
    await asyncio.wait_for(playing_on(b, "bob", started["match"]), 10)


async def no_invitations(*servers: LobbyServer) -> None:
    for node in servers:
        assert node.server is not None
        while node.server.lobby.invitations.received or node.server.lobby.invitations.sent:
            await asyncio.sleep(0.02)


class _CommitsAfterRatings:
    """A reader of what is committed that, once the ratings have been read, lets another
    node commit (``meanwhile``) before the read after them: the moment a whole reload of
    the plugins (at a batch's start, no ladder held) meets another node's rated result."""

    def __init__(self, reader: Any, meanwhile: Any) -> None:
        self.reader = reader
        self.meanwhile = meanwhile
        self.ratings_read = False

    @property
    def backend(self) -> str:
        return str(self.reader.backend)

    @property
    def log(self) -> Any:
        return self.reader.log

    async def _between(self) -> None:
        if self.ratings_read and self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            await meanwhile()

    async def fetchall(self, sql: str, params: Any = ()) -> Any:
        await self._between()
        return await self.reader.fetchall(sql, params)

    async def fetchone(self, sql: str, params: Any = ()) -> Any:
        await self._between()
        return await self.reader.fetchone(sql, params)

    async def stream(self, sql: str, params: Any = ()) -> Any:
        await self._between()
        async for row in self.reader.stream(sql, params):
            yield row
        self.ratings_read = self.ratings_read or "FROM ratings" in sql


async def test_a_result_another_node_commits_during_a_whole_reload_is_followed(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    """Node b reloads its ratings whole, as it does at a batch's start when a plugin cannot
    follow another node's change, and node a commits a rated result after b has read the
    ratings but before b's next read. b's copy must not count that result as seen: the next
    match b rates for the same players starts from their ratings after it, so the stored
    ratings are the log's (a reload that took its mark of what it had followed after the
    ratings missed the result for good)."""
    a, b = nodes
    await a.start()
    await b.start()
    alice, bob = await a.player("alice"), await b.player("bob")
    await asyncio.wait_for(online_on(a, "bob"), 10)
    first = await start_match(alice, bob)
    await asyncio.wait_for(playing_on(b, "alice", first), 10)
    assert (await bob.call("resign"))["rated"]  # rated on node b
    await asyncio.wait_for(forgotten(a, b), 10)
    second = await start_match(alice, bob)
    await asyncio.wait_for(playing_on(b, "alice", second), 10)

    async def resign_on_a() -> None:
        assert (await alice.call("resign"))["rated"]  # rated and committed by node a

    assert b.server is not None
    lobby = b.server.lobby
    ratings = next(p for p in lobby.plugins if p.name == "ratings")
    reader = _CommitsAfterRatings(lobby.db.committed, resign_on_a)

    async def reload(tx: Any) -> None:  # as b's writer does it: no batch of b's meanwhile
        await ratings.load(reader, committed=True)

    await lobby.db.write(reload)
    assert reader.meanwhile is None, "node a's result was not committed during the reload"
    await asyncio.wait_for(forgotten(a, b), 10)

    third = await start_match(alice, bob)
    await asyncio.wait_for(playing_on(b, "alice", third), 10)
    assert (await bob.call("resign"))["rated"]  # rated on node b, after the reload
    checked = await replay_check(a.db)
    assert checked == REPLAY_CLEAN, checked[1]


async def test_a_result_another_node_commits_while_a_node_starts_is_followed(
        nodes: tuple[LobbyServer, LobbyServer], monkeypatch: pytest.MonkeyPatch) -> None:
    """Node a rates a result just after node b, starting, has loaded its plugins and before
    b's first batch (start-up writes one): that batch must follow the result, not only take
    its ladder's version as seen, so the next match b rates for those players starts from
    their ratings after it and the stored ratings are the log's."""
    from server.lobby.lobby import Lobby

    a, b = nodes
    await a.start()
    alice, bob = await a.players("alice", "bob")
    assert (await play(alice, bob))["rated"]  # both have ratings before b starts
    await start_match(alice, bob)
    load = Lobby.reload_plugins
    meanwhile: list[Any] = [bob.call("resign")]  # rated and committed by node a

    async def then_a_result(lobby: Lobby, cause: str = "recovery") -> None:
        await load(lobby, cause)
        if cause == "start" and meanwhile:
            assert (await meanwhile.pop())["rated"]

    monkeypatch.setattr(Lobby, "reload_plugins", then_a_result)
    await b.start()
    monkeypatch.undo()
    assert not meanwhile, "node b started without loading its plugins"
    await asyncio.wait_for(forgotten(a, b), 10)
    bob = await moved(b, "bob", bob)
    third = await start_match(alice, bob)
    await asyncio.wait_for(playing_on(b, "alice", third), 10)
    assert (await bob.call("resign"))["rated"]  # rated on node b
    checked = await replay_check(a.db)
    assert checked == REPLAY_CLEAN, checked[1]


async def in_one_batch(node: LobbyServer, elsewhere: Awaitable[Any], here: Awaitable[Any]
                       ) -> tuple[Any, Any]:
    """``node``'s writer begins a batch and waits in it; ``elsewhere`` (a command on another
    node) commits meanwhile; ``here`` (a command on ``node``) is queued into the same batch,
    which then goes on: what each answered."""
    assert node.server is not None
    db = node.server.lobby.db
    began, gate = asyncio.Event(), asyncio.Event()

    async def held(tx: Any) -> None:
        began.set()
        await gate.wait()

    holding = asyncio.create_task(db.write(held))
    await asyncio.wait_for(began.wait(), 10)
    there = await elsewhere
    answering = asyncio.ensure_future(here)
    while not db.queue.qsize():  # its job waits to run in the batch held open
        await asyncio.sleep(0.01)
    gate.set()
    await holding
    return there, await answering


async def test_a_plugin_that_cannot_follow_does_not_make_the_ratings_reload_whole(
        nodes: tuple[LobbyServer, LobbyServer], monkeypatch: pytest.MonkeyPatch) -> None:
    """Node a rates a result while a batch of node b runs, before b's own result holds the
    ladder: inside that job the ratings follow a's result and a plugin without ``follow``
    (the test plugin streaks) reloads whole, following the transaction. At b's next batch
    that plugin alone reloads as committed: the ratings, which followed, are not read whole
    again (on a big ladder, a whole reload at every batch), and both stay the log's."""
    from ratings_plugin.plugin import RatingsPlugin

    a, b = nodes
    await a.start()
    await b.start()
    assert b.server is not None
    lobby = b.server.lobby
    assert any(getattr(p, "follow", None) is None for p in lobby.plugins), \
        "the test plugins (tests/plugins) are not installed"
    alice, carol = await a.players("alice", "carol")
    bob, dave = await b.players("bob", "dave")
    on_a, on_b = await start_match(alice, carol), await start_match(bob, dave)
    await asyncio.wait_for(playing_on(a, "bob", on_b), 10)
    await asyncio.wait_for(playing_on(b, "alice", on_a), 10)
    load = RatingsPlugin.load
    loads: list[bool] = []

    async def counted(self: RatingsPlugin, reader: Any, committed: bool) -> None:
        loads.append(committed)
        await load(self, reader, committed)

    monkeypatch.setattr(RatingsPlugin, "load", counted)
    reloads = lobby.db.reloads
    on_a, on_b = await in_one_batch(b, alice.call("resign"), bob.call("resign"))
    assert on_a["rated"] and on_b["rated"]
    assert lobby.db.reloads == reloads + 1, "no plugin reloaded inside b's batch"
    await start_match(bob, dave)  # b's next batch: streaks reloads as committed
    assert (await dave.call("resign"))["rated"]
    assert loads == [], f"the ratings reloaded whole {len(loads)} times"
    assert (await bob.call("streak", name="carol"))["streaks"] == [
        {"ladder": "backgammon", "current": 1, "best": 1}]  # a's result, read on b
    checked = await replay_check(a.db)
    assert checked == REPLAY_CLEAN, checked[1]


SECOND = {"name": "backgammon2", "system": "fibs"}


@pytest.fixture
async def nodes_two_ladders(db_path: Path, backend: str
                            ) -> AsyncIterator[tuple[LobbyServer, LobbyServer]]:
    """Two servers on one database, each with a second FIBS ladder, ``backgammon2``."""
    if backend != "postgresql":
        pytest.skip("several nodes share a PostgreSQL database; SQLite has one process")
    second = ladder_config(SECOND, "test")
    a, b = (LobbyServer(db_path, configure=lambda c, node=node: replace(
        c, node=node, ladders=(*c.ladders, second))) for node in ("node-a", "node-b"))
    try:
        yield a, b
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_job_that_fails_after_following_another_node_still_shows_its_results(
        nodes_two_ladders: tuple[LobbyServer, LobbyServer], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """A job of node b follows node a's result on one ladder, node a then rates a result on
    another ladder, and b's job fails: b reloads its plugins following the open transaction,
    which holds a's second result. b must still show that result once its next batch begins
    (its plugins republish what they reloaded), not the ratings from before it."""
    from server.api import MatchFinished

    a, b = nodes_two_ladders
    await a.start()
    await b.start()
    assert b.server is not None
    lobby = b.server.lobby
    ratings = next(p for p in lobby.plugins if p.name == "ratings")
    alice, carol, erin, frank = await a.players("alice", "carol", "erin", "frank")
    bob, dave = await b.players("bob", "dave")
    await start_match(alice, carol)
    on_b = await start_match(bob, dave)
    await start_match(erin, frank, ladder="backgammon2")
    await asyncio.wait_for(playing_on(a, "bob", on_b), 10)
    rate = ratings.on_event
    failed: list[bool] = []

    async def fails_once(tx: Any, event: Any) -> Any:
        if not failed and isinstance(event, MatchFinished) and event.unit.ladder == "backgammon":
            failed.append(True)  # its ladder followed alice's result; now frank's on a
            assert (await frank.call("resign"))["rated"]
            raise RuntimeError("a job that fails after following another node")
        return await rate(tx, event)

    monkeypatch.setattr(ratings, "on_event", fails_once)
    on_a, on_b = await in_one_batch(b, alice.call("resign"), bob.request("resign", {}))
    assert on_a["rated"] and not on_b["ok"] and failed
    assert (await bob.call("resign"))["rated"]  # b's next batch
    shown_on_a = await alice.call("rating", name="erin", ladder="backgammon2")
    assert await bob.call("rating", name="erin", ladder="backgammon2") == shown_on_a
    ladders = tmp_path / "ladders.toml"  # the servers' ladders, for the command line
    ladders.write_text("".join("[[ladders]]\n" + "".join(f"{k} = {v!r}\n" for k, v in e.items())
                               for e in (*DEFAULT_LADDERS, SECOND)), encoding="utf-8")
    checked = await replay_check(a.db, ladders)
    assert checked == REPLAY_CLEAN, checked[1]
