"""Account administration against a running lobby: ``matchlobby user passwd``, ``role``, ``ban``,
``unban``, ``list`` and ``log`` run as the operator runs them (a process of their own on the
lobby's database, SQLite file or PostgreSQL), and the admins' ``ban`` and ``unban``.

What they change reaches the running server through the database (``account_changes``): a
new password or role ends the account's open login, a ban tells the connection why and closes
it, and a banned account's logins and resumes are refused with ``banned``, naming the ban's
end and reason, until it ends or is lifted. Every change is in ``user log``, with who made it.
"""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from testkit.cli import Completed, run_cli_async
from testkit.clients import RecordingClient, expect_error
from testkit.constants import ADMIN, PASSWORD
from testkit.db import execute, sql
from testkit.server_loop import LobbyServer

NEW_PASSWORD = "a-new-secret"
FAR = "2099-01-15"  # a ban's end that is always ahead


async def user(harness: LobbyServer, config: Path, *args: str, stdin: str = "") -> Completed:
    """``matchlobby user ARGS`` on the harness's database, in a process of its own."""
    return await run_cli_async(["user", *args, "--db", str(harness.db), "--config", str(config)],
                               harness.db.parent, stdin)


async def done(harness: LobbyServer, config: Path, *args: str, stdin: str = "") -> str:
    ran = await user(harness, config, *args, stdin=stdin)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


async def refused(harness: LobbyServer, config: Path, *args: str, stdin: str = "") -> str:
    """A refusal: status 2 and one line on standard error, saying why."""
    ran = await user(harness, config, *args, stdin=stdin)
    assert ran.returncode == 2, (args, ran.stdout, ran.stderr)
    [line] = [x for x in ran.stderr.splitlines() if " INFO " not in x]
    assert line.startswith(f"matchlobby user {args[0]}: ") and "Traceback" not in ran.stderr
    return line


async def logged_out(c: RecordingClient, cause: str) -> dict[str, Any]:
    data: dict[str, Any] = (await c.next_push("logged_out", timeout=10))["data"]
    assert data["cause"] == cause and data["reason"], data
    return data


async def closed_for_a_ban(c: RecordingClient) -> dict[str, Any]:
    """The push saying why, then the close (4001)."""
    told = await logged_out(c, "banned")
    assert (await c.next_push("disconnected", timeout=10))["data"]["code"] == 4001
    return told


async def gather(*runs: Awaitable[str]) -> list[str]:
    """Commands that do not depend on each other, run at once."""
    return list(await asyncio.gather(*runs))


async def test_passwd_and_role_end_the_running_login(harness: LobbyServer,
                                                     fast_config: Path) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")

    # passwd: the open login ends, the old password no longer works, the new one does
    said = await done(harness, fast_config, "passwd", "alice", stdin=NEW_PASSWORD + "\n")
    assert "alice" in said and "1 of its sessions ended" in said
    assert "password" in (await logged_out(alice, "password"))["reason"]
    await expect_error(alice.call("invitations"), "not_logged_in")
    await expect_error(alice.call("login", name="alice", password=PASSWORD), "forbidden")
    assert (await alice.call("login", name="alice", password=NEW_PASSWORD))["player"] == "alice"

    # role: bob's login ends; logged in again he is an admin, then a player again
    await done(harness, fast_config, "role", "bob", "admin")
    await logged_out(bob, "role")
    assert (await bob.call("login", name="bob", password=PASSWORD))["role"] == "admin"
    assert await bob.call("disputes") == {"disputes": []}
    assert "already an admin" in await done(harness, fast_config, "role", "BOB", "admin")
    await done(harness, fast_config, "role", "bob", "player")
    await logged_out(bob, "role")
    assert (await bob.call("login", name="bob", password=PASSWORD))["role"] == "player"
    await expect_error(bob.call("disputes"), "forbidden")
    assert await alice.call("invitations") == {"sent": [], "received": []}  # bob's alone


async def test_a_ban_closes_the_login_until_it_is_lifted_or_ends(harness: LobbyServer,
                                                                 fast_config: Path) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    assert alice.session is not None
    token = alice.session.token
    said = await done(harness, fast_config, "ban", "alice", "--until", FAR,
                      "--reason", "cheating at dice")
    assert f"until {FAR}: cheating at dice" in said
    told = await closed_for_a_ban(alice)
    assert FAR in told["reason"] and "cheating at dice" in told["reason"]
    c = await harness.client()
    e = await expect_error(c.call("login", name="alice", password=PASSWORD), "banned")
    assert e.message == f"The account alice is banned until {FAR}: cheating at dice"
    await expect_error(c.call("resume", token=token), "banned")
    await expect_error(c.call("login", name="alice", password=NEW_PASSWORD), "forbidden")

    listing, banned, admins = [x.splitlines() for x in await gather(
        done(harness, fast_config, "list"), done(harness, fast_config, "list", "--banned"),
        done(harness, fast_config, "list", "--role", "admin"))]
    assert listing[0].split() == ["NAME", "ROLE", "CREATED", "LAST", "LOGIN", "BANNED"]
    assert [row.split()[:2] for row in listing[1:]] == [
        ["alice", "player"], ["bob", "player"], [ADMIN, "admin"]]
    assert listing[1].endswith(f"until {FAR}: cheating at dice") and listing[2].endswith("-")
    assert [row.split()[0] for row in banned[1:]] == ["alice"]
    assert [row.split()[0] for row in admins[1:]] == [ADMIN]

    # unban: back in, with the token kept through the ban
    assert "unbanned alice" in await done(harness, fast_config, "unban", "alice")
    assert (await c.call("resume", token=token))["player"] == "alice"

    # a ban with no end, then one that has ended: it lets the account in
    await done(harness, fast_config, "ban", "alice")
    await closed_for_a_ban(c)
    e = await expect_error((await harness.client()).call(
        "login", name="alice", password=PASSWORD), "banned")
    assert e.message == "The account alice is banned with no end date."
    listed = (await done(harness, fast_config, "list", "--banned")).splitlines()
    assert listed[1].endswith("with no end date"), listed  # as the lobby words it
    said = await done(harness, fast_config, "ban", "alice", "--until", "2099-01-15T10:30+02:00")
    assert "until 2099-01-15 08:30 UTC" in said  # a full ISO time, said in UTC
    execute(harness.db, "UPDATE bans SET until = '2001-01-01T00:00:00Z'")
    assert (await harness.login("alice")).credentials is not None

    # the record: what, to whom, by whom
    log = (await done(harness, fast_config, "log", "alice")).splitlines()
    assert log[0].split() == ["AT", "ACCOUNT", "CHANGE", "BY", "DETAIL"]
    by = f"cli:{getpass.getuser()}"
    assert [row.split()[1:4] for row in log[1:]] == [
        ["alice", "ban", by], ["alice", "unban", by], ["alice", "ban", by], ["alice", "ban", by]]
    assert log[1].endswith(f"until {FAR}: cheating at dice") and log[3].endswith("with no end date")
    assert await bob.call("invitations") == {"sent": [], "received": []}  # bob untouched


async def test_a_refused_user_command_says_why_in_one_line_and_writes_nothing(
        harness: LobbyServer, fast_config: Path) -> None:
    await harness.start()
    bob = await harness.player("bob")
    before = sql(harness.db, "SELECT count(*) FROM account_changes")
    said = await gather(
        refused(harness, fast_config, "role", "bob", "boss"),
        refused(harness, fast_config, "ban", "nobody"),
        refused(harness, fast_config, "ban", "bob", "--until", "2020-01-01"),
        refused(harness, fast_config, "ban", "bob", "--until", "soon"),
        refused(harness, fast_config, "ban", "bob", "--until", "2099-02-30"),
        refused(harness, fast_config, "ban", "bob", "--reason", "a\nb"),
        refused(harness, fast_config, "passwd", "nobody", stdin=NEW_PASSWORD + "\n"),
        refused(harness, fast_config, "passwd", "bob", stdin="short\n"),
        refused(harness, fast_config, "list", "--role", "boss"),
        refused(harness, fast_config, "unban", "no body"))
    for line, why in zip(said, ("not a role", "no account named 'nobody'", "has begun already",
                                "not a date", "not a date", "control character", "no account",
                                "8 characters", "not a role", "not a valid name"), strict=True):
        assert why in line, (why, line)
    assert sql(harness.db, "SELECT count(*) FROM account_changes") == before
    assert await bob.call("invitations") == {"sent": [], "received": []}  # still logged in


async def test_a_ban_end_that_has_come_is_refused_alike_in_the_lobby_and_on_the_command_line(
        harness: LobbyServer, fast_config: Path) -> None:
    """Years before 1000 too (stored unpadded, 999-01-01 was later than any time: a ban for
    good), compared as times, not as text."""
    await harness.start()
    bob = await harness.player("bob")
    admin = await harness.admin()
    today = datetime.now(UTC).date().isoformat()  # it began at midnight
    for day in ("0999-01-01", "0001-01-01", "1969-12-31", "2020-01-01", today):
        line = await refused(harness, fast_config, "ban", "bob", "--until", day)
        e = await expect_error(admin.call("ban", name="bob", until=day), "bad_request")
        said = f"{day} has begun already: a ban ends later than now"
        assert line == f"matchlobby user ban: {said}", line
        assert e.message == f"{said}.", e.message
    line = await refused(harness, fast_config, "ban", "bob", "--until", "0999-06-01T10:30+02:00")
    assert line.endswith(": 0999-06-01 08:30 UTC has begun already: a ban ends later than now")
    assert sql(harness.db, "SELECT count(*) FROM bans") == [(0,)]
    assert await bob.call("invitations") == {"sent": [], "received": []}  # never banned


async def test_admins_ban_and_unban_in_the_lobby(harness: LobbyServer,
                                                 fast_config: Path) -> None:
    await harness.start()
    alice, bob = await harness.players("alice", "bob")
    admin = await harness.admin()
    await expect_error(bob.call("ban", name="alice"), "forbidden")
    reply = await admin.send_line(f"ban alice --until {FAR} cheating at dice")
    assert reply["data"] == {"player": "alice", "banned": True, "until": f"{FAR}T00:00:00Z",
                             "reason": "cheating at dice"}
    told = await closed_for_a_ban(alice)
    assert told["reason"] == f"You have been banned until {FAR}: cheating at dice"
    e = await expect_error((await harness.client()).call(
        "login", name="ALICE", password=PASSWORD), "banned")
    assert FAR in e.message and "cheating at dice" in e.message
    await expect_error(bob.call("unban", name="alice"), "forbidden")
    await expect_error(admin.call("ban", name=ADMIN), "bad_request")
    await expect_error(admin.call("ban", name="nobody"), "not_found")
    await expect_error(admin.call("ban", name="bob", until="2020-01-01"), "bad_request")
    await expect_error(admin.call("ban", name="bob", until="soon"), "bad_request")
    assert await admin.call("unban", name="Alice") == {"player": "alice", "banned": False,
                                                       "lifted": True}
    assert (await harness.login("alice")).credentials is not None
    assert (await admin.call("unban", name="alice"))["lifted"] is False
    log = (await done(harness, fast_config, "log", "alice")).splitlines()
    assert [row.split()[2:4] for row in log[1:]] == [["ban", ADMIN], ["unban", ADMIN]]
    assert await bob.call("invitations") == {"sent": [], "received": []}


async def test_a_ban_on_one_node_closes_the_login_on_another(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    await b.start()
    alice = await b.player("alice")
    admin = await a.admin()
    await admin.call("ban", name="alice", reason="spam")
    assert (await closed_for_a_ban(alice))["reason"] == "You have been banned with no end date: spam"
    await expect_error((await b.client()).call("login", name="alice", password=PASSWORD),
                       "banned")
    await admin.call("unban", name="alice")
    assert (await b.login("alice")).credentials is not None


@pytest.mark.sqlite_only("a database file that is not there")
async def test_a_user_command_on_a_missing_database_file_is_refused_and_makes_none(
        tmp_path: Path, fast_config: Path) -> None:
    """A mistyped --db, or a forgotten --config: refused, not an empty lobby made and read;
    `user add` makes a new lobby's first account, so it may create the file."""
    missing = tmp_path / "typo.db"
    for args in (["list"], ["log"], ["role", "alice", "admin"], ["unban", "alice"]):
        ran = await run_cli_async(["user", *args, "--db", str(missing), "--config",
                                   str(fast_config)], tmp_path)
        assert ran.returncode == 2, (args, ran.stdout, ran.stderr)
        assert f"{missing}: no such database file" in ran.stderr
        assert not missing.exists()
    ran = await run_cli_async(["user", "add", "alice", "--admin", "--db", str(missing),
                               "--config", str(fast_config)], tmp_path, PASSWORD + "\n")
    assert ran.returncode == 0, ran.stderr
    assert missing.exists()


async def test_user_add_on_an_admin_without_admin_says_it_changes_the_role(
        harness: LobbyServer, fast_config: Path) -> None:
    await harness.start()
    await done(harness, fast_config, "add", "iris", "--admin", stdin=PASSWORD + "\n")
    said = await done(harness, fast_config, "add", "iris", stdin=NEW_PASSWORD + "\n")
    assert "a new password, and the role admin → player" in said
    assert "user passwd" in said
    said = await done(harness, fast_config, "add", "iris", stdin=PASSWORD + "\n")
    assert said.startswith("updated player account iris") and "role" not in said
