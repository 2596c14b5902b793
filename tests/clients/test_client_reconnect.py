"""The server restarts (same port, same database file): the client comes back by itself.

It reconnects with exponential back-off, logs in again and watches its ladders
again, so the pushes for them keep coming; a request that was in flight when
the connection dropped fails with :class:`Disconnected` instead of hanging.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import pytest
from testkit.clients import Gate, expect_error, given_up, presence_entries, settle, start_match, told_presence
from testkit.constants import PASSWORD
from testkit.fibs import FibsModel, check_changes
from testkit.probes import wait_until
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient
from clients.lobby_client import Disconnected
from server.app import start_server

BACKOFF = (0.02, 0.1)
FAILURES = 6


def retry_delays(caplog: pytest.LogCaptureFixture) -> list[float]:
    """The delays the library's "reconnect failed ...; retrying in %.2f s" lines name."""
    delays = []
    for r in caplog.records:
        if r.name == "clients.lobby_client" and str(r.msg).startswith("reconnect failed"):
            assert isinstance(r.args, tuple) and isinstance(r.args[1], float)
            delays.append(r.args[1])
    return delays


async def test_the_client_reconnects_logs_in_and_watches_again(
        lobby: LobbyServer, gate: Gate, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="clients.lobby_client")
    alice = await lobby.client(reconnect=True, backoff=BACKOFF)
    await alice.register("alice", PASSWORD)
    await alice.watch("backgammon")
    await alice.watch("scrabble")
    await alice.call("who")  # presence pushes, which must survive the reconnect too
    old_port = lobby.port
    events: list[str] = []
    alice.on("*", lambda p: events.append(p["event"]))

    # a request the server is still working on when it goes away
    pending = asyncio.create_task(alice.call("events"))
    await asyncio.wait_for(gate.entered.wait(), 5)
    stopping = asyncio.create_task(lobby.stop())
    with pytest.raises(Disconnected):
        await asyncio.wait_for(pending, 5)
    dropped = time.monotonic()
    gate.release.set()
    await asyncio.wait_for(stopping, 10)
    assert not alice.connected

    # while the server is down the client keeps trying, waiting longer each time
    async def failed_enough() -> bool:
        return len(retry_delays(caplog)) >= FAILURES

    await wait_until(failed_enough, what="failed reconnection attempts")
    delays = retry_delays(caplog)[:FAILURES]
    assert delays == [0.02, 0.04, 0.08, 0.1, 0.1, 0.1]
    assert time.monotonic() - dropped >= 0.9 * sum(delays)  # it really waited
    assert alice.reconnects == 0

    gate.release.clear()
    await lobby.start()  # the same port, the same file
    assert lobby.port == old_port
    assert (await alice.next_push("reconnected", timeout=5))["data"] == {"attempts": 1}
    observer = await lobby.client()

    async def alice_online() -> bool:
        return (await observer.whois("alice")).online

    await wait_until(alice_online, what="alice logged in again")
    assert events[:2] == ["disconnected", "reconnected"]
    assert alice.credentials == ("alice", PASSWORD)
    assert alice.watching == {"backgammon", "scrabble"}
    assert (await alice.rating()).player == "alice"  # logged in: no NAME needed
    await settle(alice)

    # ladder pushes for the watched ladders still arrive: a live match ...
    bob, carol = await lobby.players("bob", "carol")
    mid = await start_match(bob, carol, length=3)
    finished = await carol.resign()
    check_changes(finished.changes, FibsModel().play("bob", "carol", 3))
    pushes = await settle(alice)
    assert [p["event"] for p in pushes if p["event"] != "presence"] == [
        "match_finished", "rating_changed", "rating_changed"]
    # `who` listed again: told who came and played (the changes of a second come together)
    told = presence_entries(pushes)
    await told_presence(alice, {n: "ready" for n in ("bob", "carol") if (n, "ready") not in told})
    assert [p["data"]["match"] for p in pushes if p["event"] == "match_finished"] == [mid]
    # ... and an event closed by the director
    admin = await lobby.admin()
    event = await admin.call("event create", name="Cup", ladder="scrabble")
    await admin.call("event import", new=True, event=event["id"], csv=results_text(
        [f"Cup,{today()},bob,carol,400,380,,"]))
    await admin.call("event close", event=event["id"])
    updated = await alice.next_push("ladder_updated")
    assert (updated["data"]["ladder"], updated["data"]["event"]) == ("scrabble", event["id"])
    assert [r["player"] for r in updated["data"]["changed"]] == ["bob", "carol"]
    assert (updated["data"]["total"], updated["data"]["more"]) == (2, 0)
    # and alice can play: she is a player again, not a spectator
    await alice.call("invite", name="bob", ladder="backgammon")
    assert (await bob.next_push("invited"))["data"]["from"] == "alice"


async def test_a_logged_out_client_comes_back_as_a_spectator(lobby: LobbyServer) -> None:
    alice = await lobby.client(reconnect=True, backoff=BACKOFF)
    await alice.register("alice", PASSWORD)
    await alice.logout()
    await lobby.stop()
    await alice.next_push("disconnected")
    await lobby.start()
    await alice.next_push("reconnected", timeout=5)
    observer = await lobby.client()
    assert (await alice.call("who")) == {"players": [], "spectators": 2}
    assert not (await observer.whois("alice")).online


async def test_without_reconnect_the_client_stays_down(lobby: LobbyServer) -> None:
    c = await lobby.client(reconnect=False)
    await c.register("alice", PASSWORD)
    await lobby.stop()
    gone = await c.next_push("disconnected")
    assert gone["data"]["code"] == 1001  # going away
    await lobby.start()
    await given_up(c)
    assert (c.connected, c.reconnects) == (False, 0)


async def test_the_client_resumes_with_its_session_token_not_its_password(
        lobby: LobbyServer) -> None:
    alice = await lobby.client(reconnect=True, backoff=BACKOFF)
    await alice.register("alice", PASSWORD)
    assert alice.session is not None and len(alice.session.token) == 43
    token = alice.session.token
    alice.credentials = None  # only the token is kept
    reconnected = asyncio.Event()
    alice.on("reconnected", lambda p: reconnected.set())
    await lobby.restart()
    await asyncio.wait_for(reconnected.wait(), 10)
    watcher = await lobby.client()

    async def back() -> bool:
        return (await watcher.whois("alice")).online

    await wait_until(back, what="alice to be logged in again by her token")
    assert alice.session is not None and alice.session.token == token

    await alice.logout()  # ends the token
    assert alice.session is None
    await expect_error((await lobby.client()).resume(token), "forbidden")


async def test_a_client_logged_out_everywhere_does_not_log_itself_back_in(
        lobby: LobbyServer) -> None:
    """``logout --all`` on another server of the same database: the client is told
    (``logged_out``), forgets its token and its password, and after a reconnect stays a
    spectator (with the password it kept it would have logged back in)."""
    alice = await lobby.client(reconnect=True, backoff=BACKOFF)
    await alice.register("alice", PASSWORD)
    other = await start_server(lobby.config(), host="127.0.0.1", port=0)
    try:
        elsewhere = LobbyClient(f"ws://127.0.0.1:{other.port}/ws", reconnect=False)
        await elsewhere.connect()
        await elsewhere.login("alice", PASSWORD)
        assert (await elsewhere.call("logout", all=True))["ended"] == 2
        await elsewhere.close()
    finally:
        await other.stop()
    told = await alice.next_push("logged_out")
    assert told["data"]["cause"] == "logout_all"
    assert (alice.credentials, alice.session, alice.player) == (None, None, None)
    reconnected = asyncio.Event()
    alice.on("reconnected", lambda p: reconnected.set())
    await lobby.restart()
    await asyncio.wait_for(reconnected.wait(), 10)
    assert alice._restoring is not None
    await asyncio.wait_for(alice._restoring, 10)  # what the client does by itself, done
    await expect_error(alice.call("invitations"), "not_logged_in")
    assert not (await alice.whois("alice")).online


async def _restoring(log_in_again: Callable[[], Awaitable[None]]) -> LobbyClient:
    """A client just connected again, its login again being ``log_in_again``."""
    c = LobbyClient(reconnect=False)
    c._connected.set()
    c._log_in_again = log_in_again  # type: ignore[method-assign]
    c._restoring = asyncio.create_task(c._restore())
    await asyncio.sleep(0)
    return c


async def test_a_login_again_that_times_out_is_not_another_requests_error() -> None:
    """The server did not answer the login again in time: the restore logs it, and a request
    waiting for it goes ahead instead of failing with the restore's error."""
    async def times_out() -> None:
        await asyncio.sleep(0.05)
        raise TimeoutError

    c = await _restoring(times_out)
    await c._ready(1.0)


async def test_a_request_waits_for_the_login_again_no_longer_than_its_timeout() -> None:
    """A login again held up (refused for too many logins, it waits up to a minute a try):
    a request waiting for it fails when its own timeout ends."""
    held = asyncio.Event()

    async def held_up() -> None:
        await held.wait()

    c = await _restoring(held_up)
    try:
        with pytest.raises(TimeoutError):
            await c._ready(0.2)
        assert c._restoring is not None and not c._restoring.done()
    finally:
        held.set()
        assert c._restoring is not None
        await c._restoring
