"""Sessions that end when their account changes: a new password, a new role, a logout everywhere.

The change comes from another process (``matchlobby user add``; an operator's tool changing a
role the same way: the new value and its ``account_changes`` row in one transaction) or from
another server on the same database. The open connection of the account is logged out (the
push ``logged_out`` with its cause; it stays open as a spectator's), its tokens end, and a
login made after the change with the new password stays. ``logout --all`` and ``--others`` end
the account's sessions on every server; the login reply counts the others, and an account
keeps at most ``sessions_per_account`` tokens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import run_cli_async
from testkit.clients import RecordingClient, expect_error, start_match
from testkit.constants import ADMIN, ADMIN_PASSWORD, HELLO, PASSWORD
from testkit.db import execute, sql
from testkit.server_loop import LobbyServer

from server.app import RunningServer, start_server
from server.config import Limits
from server.session_tokens import token_hash
from server.store import now
from server.store.backends import open_store

NEW_PASSWORD = "a-new-secret"
POLL = 0.01


async def user_add(harness: LobbyServer, config: Path, name: str, password: str,
                   admin: bool = False) -> str:
    """``matchlobby user add`` in a process of its own, as an operator runs it; its output."""
    done = await run_cli_async(["user", "add", name, *(["--admin"] if admin else []),
                                "--db", str(harness.db), "--config", str(config)],
                               harness.db.parent, password + "\n")
    assert done.returncode == 0, done.stderr
    return done.stdout


async def set_role(db: Path, name: str, role: str) -> None:
    """What an operator's tool does to change a role alone: the new role and its
    ``account_changes`` row, in one transaction of its own process's connection."""
    from server.store.account_changes import ROLE, changed

    store = await open_store(str(db), [])

    async def job(tx: Any) -> None:
        row = await tx.fetchone("SELECT id FROM players WHERE name_key = ?", (name.casefold(),))
        await tx.execute("UPDATE players SET role = ? WHERE id = ?", (role, row[0]))
        await changed(tx, row[0], [ROLE], None, now())

    try:
        await store.transaction(job)
    finally:
        await store.close()


async def committed(db: Path) -> float:
    """When the first ``account_changes`` row is seen committed, as a reader polling every
    :data:`POLL` seconds sees it."""
    while not (await asyncio.to_thread(sql, db, "SELECT count(*) FROM account_changes"))[0][0]:
        await asyncio.sleep(POLL)
    return time.monotonic()


async def told_out(c: RecordingClient, cause: str) -> dict[str, Any]:
    """The ``logged_out`` push ``c`` gets (within a liveness bound), with ``cause``."""
    data: dict[str, Any] = (await c.next_push("logged_out", timeout=10))["data"]
    assert data["cause"] == cause and data["reason"], data
    return data


@pytest.fixture
async def second_node(harness: LobbyServer) -> AsyncIterator[list[RunningServer]]:
    """Room for another server on the harness's database (several ``serve`` on one database),
    stopped after the test."""
    nodes: list[RunningServer] = []
    yield nodes
    for node in nodes:
        await node.stop()


async def node_client(node: RunningServer, harness: LobbyServer) -> RecordingClient:
    c = RecordingClient(f"ws://127.0.0.1:{node.port}/ws", reconnect=False)
    harness.clients.append(c)
    assert await c.connect() == HELLO
    return c


async def test_a_new_password_logs_the_open_connection_out(harness: LobbyServer, fast_config: Path,
                                                           figures: dict[str, Any]) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    mid = await start_match(alice, bob, length=3)
    assert alice.session is not None
    old_token = alice.session.token
    seen = asyncio.create_task(committed(harness.db))
    arrived: list[float] = []
    waiting = asyncio.create_task(told_out(alice, "password"))
    waiting.add_done_callback(lambda _: arrived.append(time.monotonic()))
    said = await user_add(harness, fast_config, "alice", NEW_PASSWORD)
    assert "1 of its sessions ended" in said
    told = await waiting
    figures["logged out after the change was committed"] = (
        f"{(arrived[0] - await seen) * 1000:.0f} ms (its row seen by a reader polling every "
        f"{POLL * 1000:.0f} ms)")
    assert "password" in told["reason"]
    # the connection stays, logged out: the rated match cannot be played on it
    await expect_error(alice.call("resign"), "not_logged_in")
    await expect_error(alice.call("report win"), "not_logged_in")
    assert (await alice.call("whois", name="alice"))["online"] is False
    assert (await bob.call("whois", name="bob"))["match"]["match"] == mid  # the match stands
    c = await harness.client()
    await expect_error(c.call("resume", token=old_token), "forbidden")
    await expect_error(c.call("login", name="alice", password=PASSWORD), "forbidden")
    back = await alice.call("login", name="alice", password=NEW_PASSWORD)
    assert back["match"]["match"] == mid
    assert (await alice.call("resign"))["winner"] == "bob"


async def test_a_login_after_the_change_is_not_ended_by_it(harness: LobbyServer,
                                                           fast_config: Path) -> None:
    """The watch is held while the change is made and the new password used, then runs: a
    login made after the change (it knows the new password) keeps its session."""
    server = await harness.start()
    watch = server.lobby.account_watch
    alice = await harness.player("alice")
    await watch.stop()
    await user_add(harness, fast_config, "alice", NEW_PASSWORD)
    again = await harness.client()
    await again.login("alice", NEW_PASSWORD)  # replaces the old connection
    assert await watch.poll() == 1  # the change, read now
    assert (await again.call("invitations")) == {"sent": [], "received": []}  # still logged in
    assert [p["data"]["cause"] for p in alice.drain_pushes() if p["event"] == "logged_out"] == [
        "replaced"]


async def test_a_demoted_admin_keeps_nothing_of_the_role(harness: LobbyServer,
                                                         fast_config: Path) -> None:
    await harness.start()
    await user_add(harness, fast_config, "dora", "dora-secret", admin=True)
    dora = await harness.client()
    assert (await dora.login("dora", "dora-secret"))["role"] == "admin"
    await dora.call("event create", name="Before", ladder="scrabble")
    await user_add(harness, fast_config, "dora", "dora-secret")  # the same password, no --admin
    await told_out(dora, "password")
    await expect_error(dora.call("event create", name="After", ladder="scrabble"),
                       "not_logged_in")
    await expect_error(dora.call("adjudicate", match=1, winner="dora"), "not_logged_in")
    assert (await dora.call("login", name="dora", password="dora-secret"))["role"] == "player"
    await expect_error(dora.call("event create", name="After", ladder="scrabble"), "forbidden")
    assert [e["name"] for e in (await dora.call("events"))["events"]] == ["Before"]


async def test_a_role_changed_alone_ends_the_login_and_its_tokens(harness: LobbyServer) -> None:
    await harness.start()
    admin = await harness.admin()
    assert admin.session is not None
    token = admin.session.token
    await set_role(harness.db, ADMIN, "player")
    told = await told_out(admin, "role")
    assert "role" in told["reason"]
    await expect_error(admin.call("disputes"), "not_logged_in")
    await expect_error(admin.call("resume", token=token), "forbidden")  # its role went with it
    again = await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD)
    assert again["role"] == "player"
    await expect_error(admin.call("disputes"), "forbidden")
    await set_role(harness.db, ADMIN, "admin")  # promoted: logged out too, and admin again
    await told_out(admin, "role")
    assert (await admin.call("login", name=ADMIN, password=ADMIN_PASSWORD))["role"] == "admin"
    assert (await admin.call("disputes")) == {"disputes": []}


async def test_logout_all_ends_every_session_on_every_server(
        harness: LobbyServer, second_node: list[RunningServer]) -> None:
    """Two servers on one database: a connection on each, and a token kept aside."""
    await harness.start()
    second_node.append(await start_server(harness.config(), host="127.0.0.1", port=0))
    first = await harness.player("alice")
    assert first.session is not None
    tokens = [first.session.token]
    here = await harness.client()
    tokens.append((await here.login("alice", PASSWORD))["session"]["token"])
    await told_out(first, "replaced")  # one connection an account on a server
    there = await node_client(second_node[0], harness)
    tokens.append((await there.login("alice", PASSWORD))["session"]["token"])  # both stay

    reply = await here.call("logout", all=True)
    assert reply == {"player": "alice", "logged_in": False, "revoked": True, "ended": 3}
    await told_out(there, "logout_all")  # the other server follows the database
    await expect_error(there.call("invitations"), "not_logged_in")
    await expect_error(here.call("invitations"), "not_logged_in")
    for c in (here, there):
        for token in tokens:
            await expect_error(c.call("resume", token=token), "forbidden")
    assert sql(harness.db, "SELECT count(*) FROM sessions s JOIN players p ON p.id = s.player_id "
                           "WHERE p.name = 'alice'") == [(0,)]
    assert "logged_out" not in [p["event"] for p in here.drain_pushes()]  # it has the reply


async def test_logout_others_keeps_this_login(harness: LobbyServer,
                                              second_node: list[RunningServer]) -> None:
    server = await harness.start()
    second_node.append(await start_server(harness.config(), host="127.0.0.1", port=0))
    here = await harness.player("alice")
    assert here.session is not None
    mine = here.session.token
    there = await node_client(second_node[0], harness)
    other = (await there.login("alice", PASSWORD))["session"]["token"]
    reply = await here.call("logout", others=True)
    assert reply == {"player": "alice", "logged_in": True, "revoked": False, "ended": 1}
    await told_out(there, "logout_others")
    await expect_error(there.call("resume", token=other), "forbidden")
    await server.lobby.account_watch.poll()  # this server has read its own change: it stays
    assert (await here.call("invitations")) == {"sent": [], "received": []}
    assert "logged_out" not in [p["event"] for p in here.drain_pushes()]
    fresh = await harness.client()
    assert (await fresh.call("resume", token=mine))["player"] == "alice"
    await expect_error(fresh.call("logout", all=True, others=True), "bad_request")


async def test_the_login_counts_the_other_sessions_and_the_oldest_end_beyond_the_cap(
        harness: LobbyServer) -> None:
    harness.configure = lambda config: replace(config, limits=replace(
        config.limits, sessions_per_account=3))
    await harness.start()
    first = await harness.player("alice")
    assert first.session is not None
    tokens = [first.session.token]
    for others in (1, 2):
        reply = await (await harness.client()).login("alice", PASSWORD)
        assert reply["other_sessions"] == others
        tokens.append(reply["session"]["token"])
    for i, token in enumerate(tokens):  # made a minute apart, the first first
        execute(harness.db, "UPDATE sessions SET created_at = ? WHERE token_hash = ?",
                (f"2026-01-01T00:0{i}:00Z", token_hash(token)))
    reply = await (await harness.client()).login("alice", PASSWORD)
    assert reply["other_sessions"] == 2  # three at most: the oldest ended
    tokens.append(reply["session"]["token"])
    assert sql(harness.db, "SELECT count(*) FROM sessions") == [(3,)]
    c = await harness.client()
    await expect_error(c.call("resume", token=tokens[0]), "forbidden")
    for token in tokens[1:]:
        assert (await c.call("resume", token=token))["player"] == "alice"


async def test_the_cap_holds_with_its_default(harness: LobbyServer) -> None:
    await harness.start()
    assert Limits().sessions_per_account == 20
    await harness.player("alice")
    for _ in range(20):  # as many as an account may log in at once
        await (await harness.client()).login("alice", PASSWORD)
    assert sql(harness.db, "SELECT count(*) FROM sessions") == [(20,)]


async def test_an_account_made_by_another_process_is_known_at_once(
        harness: LobbyServer, fast_config: Path) -> None:
    """``matchlobby user add`` while the server runs (or another node's ``register``): the
    new player is known to this server within a poll, before they ever log in here."""
    await harness.start()
    alice = await harness.player("alice")
    await expect_error(alice.call("whois", name="dave"), "not_found")
    await user_add(harness, fast_config, "dave", PASSWORD)

    async def known() -> dict[str, Any]:
        while True:
            reply = await alice.request("whois", {"name": "dave"})
            if reply["ok"]:
                return dict(reply["data"])
            assert reply["error"]["code"] == "not_found", reply
            await asyncio.sleep(0.1)

    dave = await asyncio.wait_for(known(), 10)
    assert (dave["player"], dave["role"], dave["online"]) == ("dave", "player", False)


async def test_on_postgresql_a_change_reaches_the_nodes_by_notification(
        harness: LobbyServer) -> None:
    """The change's commit notifies every node: the watch reads it then, not at its next poll
    (held off here for an hour, so only the notification can bring it)."""
    server = await harness.start()
    if server.lobby.sharing is None:
        pytest.skip("SQLite's watch notices another connection's commit by polling the file")
    watch = server.lobby.account_watch
    await watch.stop()
    watch.interval = 3600.0
    await watch.start()
    alice = await harness.player("alice")
    await set_role(harness.db, "alice", "admin")
    assert "role" in (await told_out(alice, "role"))["reason"]


async def test_the_watch_stops_when_a_nudge_meets_the_stop(harness: LobbyServer) -> None:
    """A nudge that arrives just as the watch is stopped: on Python 3.11 the wait it ends
    swallows the cancellation, and the stop must not wait for ever (it did)."""
    server = await harness.start()
    watch = server.lobby.account_watch
    await watch.stop()
    watch.interval = 3600.0  # the watch waits for nudges alone
    for _ in range(5):
        await watch.start()
        await asyncio.sleep(0.05)  # in its wait for a nudge
        watch.nudge()
        await asyncio.sleep(0)  # the nudged wait completes, the watch not yet resumed
        stopping = asyncio.ensure_future(watch.stop())
        done, _ = await asyncio.wait({stopping}, timeout=5)  # a bound on a hang, not a timing
        if not done:
            stopping.cancel()  # (its wait for the watch then ends it)
        assert stopping in done, "stop() waited for a watch that never ended"


async def test_a_change_committed_while_the_server_loads_its_players_is_applied(
        harness: LobbyServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process changes a role just after the starting server has read its players:
    the watch starts from the changes committed before that read, so it applies this one
    (started from the newest change at its own start, it would count it as applied and the
    server would keep the old role until the account's next change)."""
    await harness.start()
    await harness.stop()
    from server.lobby import lobby as lobby_module

    read = lobby_module.stored_players.all_players

    async def then_demoted(db: Any) -> Any:
        rows = await read(db)
        await set_role(harness.db, ADMIN, "player")
        return rows

    monkeypatch.setattr(lobby_module.stored_players, "all_players", then_demoted)
    server = await harness.start()
    monkeypatch.undo()
    await server.lobby.account_watch.poll()
    assert server.lobby.players[ADMIN.casefold()].role == "player"
