"""Session tokens through a real lobby: a login resumed on a new connection without the password,
until it expires, the login logs out or the account's password changes; and the token is never
stored as it was given."""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from testkit.cli import run_cli_async
from testkit.clients import expect_error, start_match, told_presence
from testkit.constants import PASSWORD
from testkit.db import execute, sql
from testkit.server_loop import LobbyServer

ENDED = "This session has ended; log in again."
TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # 32 bytes, URL-safe base64 without padding


def moment(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def test_a_login_is_resumed_with_its_token(harness: LobbyServer) -> None:
    await harness.start()
    first = await harness.client()
    before = datetime.now(UTC).replace(microsecond=0)
    registered = await first.register("alice", PASSWORD)
    session = registered["session"]
    assert set(session) == {"token", "expires_at"} and TOKEN.fullmatch(session["token"])
    # 30 days by default, from the login on
    assert before + timedelta(days=30) <= moment(session["expires_at"]) <= (
        datetime.now(UTC) + timedelta(days=30, seconds=1))
    watcher = await harness.client()
    await watcher.call("who")
    second = await harness.client()
    resumed = await second.call("resume", token=session["token"])
    assert resumed == {"player": "alice", "role": "player", "match": None,  # login's reply
                       "disputes": [], "while_away": None}
    assert (await first.next_push("logged_out"))["data"]["reason"]  # one connection an account
    await told_presence(watcher, {"alice": "ready"})
    assert (await second.call("whois", name="alice"))["online"] is True
    assert (await second.call("invitations")) == {"sent": [], "received": []}  # logged in
    # a login made the same way gives a new token; both resume
    third = await harness.client()
    logged_in = await third.login("alice", PASSWORD)
    assert logged_in["session"]["token"] != session["token"]
    for token in (session["token"], logged_in["session"]["token"]):
        c = await harness.client()
        assert (await c.call("resume", token=token))["player"] == "alice"


async def test_a_resumed_login_finds_its_live_match(harness: LobbyServer) -> None:
    await harness.start()
    alice, bob = await harness.player("alice"), await harness.client()
    token = (await bob.register("bob", PASSWORD))["session"]["token"]
    mid = await start_match(alice, bob, length=3)
    await bob.close()
    again = await harness.client()
    match = (await again.call("resume", token=token))["match"]
    assert (match["match"], match["a"], match["b"], match["status"]) == (
        mid, "alice", "bob", "playing")
    # whois's summary, and when bob may claim it were alice away (she is here: never)
    assert match == {**(await alice.call("whois", name="bob"))["match"], "claim_in": None}
    assert (await again.call("resign"))["winner"] == "alice"


async def test_unknown_expired_and_malformed_tokens_are_refused(harness: LobbyServer) -> None:
    await harness.start()
    token = (await (await harness.client()).register("alice", PASSWORD))["session"]["token"]
    c = await harness.client()
    for wrong in ("x" * 43, token[:-1], token + "A", token.lower(), "not a token", "é"):
        e = await expect_error(c.call("resume", token=wrong), "forbidden")
        assert e.message == ENDED
    await expect_error(c.call("resume", token="x" * 201), "bad_request")
    await expect_error(c.call("resume", token="a\tb"), "bad_request")
    await expect_error(c.call("resume"), "bad_request")
    # expired: the stored expiry has passed
    execute(harness.db, "UPDATE sessions SET expires_at = '2020-01-01T00:00:00Z'")
    e = await expect_error(c.call("resume", token=token), "forbidden")
    assert e.message == ENDED
    await expect_error(c.call("invitations"), "not_logged_in")  # none of it logged c in
    assert (await c.call("ladders"))["ladders"]  # and the connection carries on


async def test_the_expiry_follows_session_days_and_ended_sessions_are_forgotten(
        harness: LobbyServer) -> None:
    harness.configure = lambda config: replace(config, session_days=0.5)
    await harness.start()
    before = datetime.now(UTC).replace(microsecond=0)
    alice = await harness.player("alice")
    session = (await alice.login("alice", PASSWORD))["session"]
    assert before + timedelta(hours=12) <= moment(session["expires_at"]) <= (
        datetime.now(UTC) + timedelta(hours=12, seconds=1))
    await harness.stop()
    # one of the two ended while the lobby was stopped: it is gone after the next start
    execute(harness.db, "UPDATE sessions SET expires_at = '2020-01-01T00:00:00Z' "
                       "WHERE token_hash = ?", (digest(session["token"]),))
    assert sql(harness.db, "SELECT count(*) FROM sessions") == [(2,)]
    await harness.start()
    assert sql(harness.db, "SELECT count(*) FROM sessions") == [(1,)]
    c = await harness.client()
    await expect_error(c.call("resume", token=session["token"]), "forbidden")


async def test_logout_ends_its_own_session_only(harness: LobbyServer) -> None:
    await harness.start()
    first = await harness.client()
    one = (await first.register("alice", PASSWORD))["session"]["token"]
    two = (await (await harness.client()).login("alice", PASSWORD))["session"]["token"]
    c = await harness.client()
    await c.call("resume", token=one)
    assert await c.call("logout") == {"player": "alice", "logged_in": False, "revoked": True}
    assert sql(harness.db, "SELECT token_hash FROM sessions") == [(digest(two),)]
    e = await expect_error(c.call("resume", token=one), "forbidden")
    assert e.message == ENDED
    assert (await c.call("resume", token=two))["player"] == "alice"  # the other login's
    # a token survives a restart of the lobby
    await harness.stop()
    await harness.start()
    c = await harness.client()
    assert (await c.call("resume", token=two))["player"] == "alice"
    await expect_error((await harness.client()).call("resume", token=one), "forbidden")


async def test_a_new_password_ends_every_session_of_the_account(harness: LobbyServer,
                                                                 fast_config: Path) -> None:
    await harness.start()
    tokens = [(await (await harness.client()).register("alice", PASSWORD))["session"]["token"]]
    for _ in range(2):
        tokens.append((await (await harness.client()).login("alice", PASSWORD))["session"]["token"])
    bob = (await (await harness.client()).register("bob", PASSWORD))["session"]["token"]
    done = await run_cli_async(["user", "add", "alice", "--db", str(harness.db), "--config",
                                str(fast_config)], harness.db.parent, "a-new-secret\n")
    assert done.returncode == 0, done.stderr
    assert "3 of its sessions ended" in done.stdout
    c = await harness.client()
    for token in tokens:
        e = await expect_error(c.call("resume", token=token), "forbidden")
        assert e.message == ENDED
    assert (await c.call("resume", token=bob))["player"] == "bob"  # another account's stand
    fresh = await harness.client()
    assert (await fresh.login("alice", "a-new-secret"))["session"]["token"] not in tokens


@pytest.mark.sqlite_only("reads the bytes of the database's files")
async def test_the_token_is_stored_only_as_its_hash(harness: LobbyServer) -> None:
    await harness.start()
    given = [(await (await harness.client()).register("alice", PASSWORD))["session"]["token"]]
    c = await harness.client()
    given.append((await c.login("alice", PASSWORD))["session"]["token"])
    again = await harness.client()
    # a resume with an id: not a request whose reply (or arguments) the lobby keeps
    reply = await again.request("resume", {"token": given[0]}, request_id="r-1")
    assert reply["ok"] is True
    await again.call("logout")
    rows = sql(harness.db, "SELECT token_hash, player_id FROM sessions")
    assert sorted(h for h, _ in rows) == [digest(given[1])]
    await harness.stop()  # everything on disk: the database, its WAL, its journal if any
    files = [p for p in harness.db.parent.iterdir() if p.name.startswith(harness.db.name)]
    assert harness.db in files
    stored = b"".join(p.read_bytes() for p in files)
    for token in given:
        assert token.encode() not in stored
        assert token[:16].encode() not in stored
    assert digest(given[1]).encode() in stored


async def test_passwords_have_at_least_8_characters(harness: LobbyServer, fast_config: Path) -> None:
    await harness.start()
    c = await harness.client()
    for short in ("", "a", "seven77", "ñ" * 7):
        await expect_error(c.call("register", name="alice", password=short), "bad_request")
    e = await expect_error(c.call("register", name="alice", password="1234567"), "bad_request")
    assert "at least 8 characters" in e.message
    assert (await c.call("register", name="alice", password="12345678"))["player"] == "alice"
    done = await run_cli_async(["user", "add", "bob", "--db", str(harness.db), "--config",
                                str(fast_config)], harness.db.parent, "1234567\n")
    assert done.returncode == 2 and "at least 8 characters" in done.stderr
    assert sql(harness.db, "SELECT count(*) FROM players WHERE name = 'bob'") == [(0,)]
    done = await run_cli_async(["user", "add", "bob", "--db", str(harness.db), "--config",
                                str(fast_config)], harness.db.parent, "12345678\n")
    assert done.returncode == 0, done.stderr
    assert (await (await harness.client()).login("bob", "12345678"))["player"] == "bob"
