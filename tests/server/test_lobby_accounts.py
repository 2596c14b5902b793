"""Accounts: register, login, logout, and `matchlobby user add` while the server runs."""

from __future__ import annotations

from pathlib import Path

from testkit.cli import run_cli_async
from testkit.clients import expect_error, presence_entries, start_match, told_presence
from testkit.constants import PASSWORD
from testkit.db import sql
from testkit.server_loop import LobbyServer


async def test_register_login_logout(lobby: LobbyServer) -> None:
    alice = await lobby.player("Alice")
    other = await lobby.client()
    await expect_error(other.call("register", name="ALICE", password=PASSWORD), "conflict")
    await expect_error(other.call("register", name="bob", password="abc"), "bad_request")
    await expect_error(alice.call("register", name="bob", password=PASSWORD), "conflict")
    await expect_error(other.call("login", name="alice", password="wrong-one"), "forbidden")
    await expect_error(other.call("login", name="nobody", password=PASSWORD), "forbidden")
    # names are matched ignoring case, shown as registered
    assert (await other.call("login", name="alice", password=PASSWORD))["player"] == "Alice"
    await alice.next_push("logged_out")
    assert (await other.call("whois", name="ALICE"))["player"] == "Alice"

    assert await other.call("logout") == {"player": "Alice", "logged_in": False, "revoked": True}
    await expect_error(other.call("invite", name="Alice", ladder="backgammon"), "not_logged_in")
    await expect_error(other.call("logout"), "not_logged_in")
    assert (await other.call("who"))["players"] == []
    info = await other.call("whois", name="alice")
    assert info["online"] is False and info["last_login"] is not None and info["role"] == "player"
    # the stored password is a salted scrypt hash, never the password
    (stored,) = sql(lobby.db, "SELECT password_hash FROM players WHERE name = 'Alice'")[0]
    assert stored.startswith("scrypt$") and PASSWORD not in stored


async def test_user_add_while_the_server_runs(lobby: LobbyServer, fast_config: Path) -> None:
    admin = await lobby.admin()
    eid = (await admin.call("event create", name="Day", ladder="foosball-singles"))["id"]
    await admin.call("event result", new=True, event=eid, side_a="ann", side_b="ben", score_a=10, score_b=3)
    ann = await lobby.client()
    assert (await ann.call("whois", name="ann"))["role"] == "entry"
    await expect_error(ann.call("login", name="ann", password=PASSWORD), "forbidden")

    # the operator gives the ladder entry a password, and creates a second admin
    for args, stdin in ((["ann"], PASSWORD), (["dora", "--admin"], "dora-secret")):
        done = await run_cli_async(["user", "add", *args, "--db", str(lobby.db),
                                    "--config", str(fast_config)], lobby.db.parent,
                                   stdin + "\n")
        assert done.returncode == 0, done.stderr
    assert (await ann.login("ann", PASSWORD))["role"] == "player"
    assert (await ann.call("whois", name="ann"))["role"] == "player"
    dora = await lobby.client()
    assert (await dora.login("dora", "dora-secret"))["role"] == "admin"
    closed = await dora.call("event close", event=eid)
    assert {c["player"] for c in closed["changes"]} == {"ann", "ben"}
    assert sql(lobby.db, "SELECT count(*) FROM players WHERE name_key = 'ann'") == [(1,)]


async def test_presence_goes_to_who_listers_and_to_the_opponent(lobby: LobbyServer) -> None:
    """``presence`` reaches the sessions that listed ``who`` and a live match's opponent, not
    every session (which would be N² pushes for N logins)."""
    lister, quiet = await lobby.client(), await lobby.client()
    await lister.call("who")
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await told_presence(lister, {"alice": "ready", "bob": "ready"})
    await start_match(alice, bob)
    await bob.close()
    await told_presence(alice, {"bob": "offline"})  # the opponent, who may claim
    await told_presence(lister, {"bob": "offline"})
    # a reply on the same connection comes after any push sent before it
    await quiet.whois("alice")
    assert presence_entries(quiet.drain_pushes()) == []
    carol = await lobby.player("carol")  # alice neither listed `who` nor plays carol
    await told_presence(lister, {"carol": "ready"})
    await alice.whois("carol")
    assert [e for e in presence_entries(alice.drain_pushes()) if e[0] != "bob"] == []
    await carol.close()
    await told_presence(lister, {"carol": "offline"})
