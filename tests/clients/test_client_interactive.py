"""``matchlobby client URL`` on a terminal: the prompt_toolkit session, driven through a
pseudo-terminal (and, where tmux is installed, checked on tmux's rendered screen)."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit.cli import cli_env, matchlobby_command, run_cli_async
from testkit.constants import PASSWORD, ROOT
from testkit.fibs import fibs_changes
from testkit.server_loop import LobbyServer
from testkit.terminal import Terminal, screen_text

from server import PROTOCOL_VERSION

MENU_ENTRY = re.compile(r" {4,}[a-z]+")


def terminal_env(home: Path, answers_cpr: bool = False) -> dict[str, str]:
    """HOME: the command history file goes to the test's folder. The bare pseudo-terminal
    does not answer cursor position requests (tmux does): prompt_toolkit is told so, as
    pexpect users do, instead of waiting for the answer and then warning."""
    env = cli_env(HOME=str(home), TERM="xterm-256color", NO_COLOR="1")
    if not answers_cpr:
        env["PROMPT_TOOLKIT_NO_CPR"] = "1"
    return env


async def test_prompt_commands_pushes_while_typing_and_quit(lobby: LobbyServer, tmp_path: Path
                                                            ) -> None:
    bob = await lobby.player("bob")
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        await term.expect(rf"Connected to matchlobby \S+ \(protocol {PROTOCOL_VERSION}\)\.\n")
        await term.expect(r"matchlobby>")
        term.type(f"register alice {PASSWORD}\r")
        await term.expect(r"Welcome, alice: your account is made and you are logged in\.\n")
        await term.expect(r"alice>")  # the prompt now names the player
        term.type("who\r")
        await term.expect(r"player  status  ratings\nalice   ready   -\nbob     ready   -\n"
                          r"2 players, 0 spectators\.\n")
        await term.expect(r"alice>")

        # half a command typed, then a push: it is printed, and the line being typed survives
        term.type("wh")
        await term.expect(r"whois")  # the completion menu offers who and whois
        await bob.call("invite", name="alice", ladder="backgammon")
        await term.expect(r"\*\* bob invites you to a 1-point backgammon match, open until "
                          r"\d\d:\d\d:\d\d UTC\. Type 'join bob' or 'decline bob'\.\n"
                          r"  bob \(rating 1500\.00\): 50\.0% to win; a win \+9\.98, "
                          r"a loss -9\.98\.\n"
                          r"  alice \(rating 1500\.00\): 50\.0% to win; a win \+9\.98, "
                          r"a loss -9\.98\.\n")
        await term.expect(r"alice> wh")
        term.type("ois bob\r")
        await term.expect(r"Information about bob:\n  Still logged in\. Ready to play\.\n"
                          r"  No ratings yet\.\n  Matches: 0 played, 0 dropped, 0 disputed\.\n")

        term.type("join bob\r")
        mid = (await bob.next_push("match_started"))["data"]["match"]
        await term.expect(rf"Match {mid} started: bob vs alice \(backgammon, 1 point\)\.\n"
                          r"  bob \(rating 1500\.00\): 50\.0% to win;.*\n"
                          r"  alice \(rating 1500\.00\): 50\.0% to win;.*\n")
        # a push while idle at the prompt
        await term.expect(r"alice>")
        await bob.resign()
        await term.expect(rf"\*\* bob resigned; alice wins match {mid} \(backgammon, 1 point\)\.\n"
                          r"  alice: 1500\.00 -> 1509\.98 \(\+9\.98\)\n"
                          r"  bob: 1500\.00 -> 1490\.02 \(-9\.98\)\n")
        await term.expect(r"alice>")

        term.type("frobnicate\r")
        between = await term.expect(r"Error \(unknown_command\): Unknown command 'frobnicate'; "
                                    r"try 'help'\.\n")
        # her own rating change was printed once, with the result: no push repeats it
        assert "rating:" not in between and "1509.98" not in between
        await term.expect(r"alice>")
        term.type("quit\r")
        assert await term.wait() == 0
        tail = screen_text(term.raw)[term.mark:]  # what came after the quit
    finally:
        await term.aclose()
    everything = term.raw.decode("utf-8", "replace")
    assert "Traceback" not in everything
    assert "disconnected" not in tail  # its own closing is not reported as news
    history = (tmp_path / ".matchlobby_history").read_text(encoding="utf-8")
    assert "+whois bob" in history and "+join bob" in history
    assert not (await bob.whois("alice")).online


async def test_an_unreachable_server_on_a_terminal(tmp_path: Path) -> None:
    term = await Terminal.spawn([*matchlobby_command(), "client", "ws://127.0.0.1:9/ws"],
                                terminal_env(tmp_path))
    try:
        assert await term.wait() == 2
        await term.expect(r"matchlobby client: cannot connect to ws://127\.0\.0\.1:9/ws: ")
    finally:
        await term.aclose()
    assert "Traceback" not in term.raw.decode("utf-8", "replace")


# ---- the same on tmux's screen -----------------------------------------------------------


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[list[str]]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (the pseudo-terminal test above still runs)")
    base = ["tmux", "-L", f"matchlobby-{uuid.uuid4().hex[:8]}", "-f", "/dev/null"]
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, check=False, timeout=10)


async def screen(tmux: list[str]) -> list[str]:
    done = await asyncio.to_thread(subprocess.run, [*tmux, "capture-pane", "-p", "-t", "s"],
                                   capture_output=True, text=True, check=True, timeout=10)
    return done.stdout.rstrip("\n").splitlines()


async def until_screen(tmux: list[str], *tail: str, timeout: float = 10.0) -> list[str]:
    """The screen once its last lines are ``tail``, without the blank bottom and without the
    completion menu (indented single words below the prompt)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        lines = [line.rstrip() for line in await screen(tmux)
                 if not MENU_ENTRY.fullmatch(line.rstrip())]
        while lines and not lines[-1]:
            lines.pop()
        if lines[-len(tail):] == list(tail):
            return lines
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the screen does not end with {tail!r}:\n" + "\n".join(lines))
        await asyncio.sleep(0.05)


async def test_the_screen_keeps_the_prompt_below_a_push(lobby: LobbyServer, tmp_path: Path,
                                                        tmux: list[str]) -> None:
    async def keys(*keys: str) -> None:
        await asyncio.to_thread(subprocess.run, [*tmux, "send-keys", "-t", "s", *keys],
                                check=True, timeout=10)

    command = " ".join([*matchlobby_command(), "client", lobby.url])
    script = f"cd {ROOT} && {command}; echo exit=$?; sleep 60"
    await asyncio.to_thread(subprocess.run, [*tmux, "new-session", "-d", "-s", "s", "-x", "160",
                                             "-y", "30", script],
                            env=terminal_env(tmp_path, answers_cpr=True), check=True, timeout=10)
    await until_screen(tmux, "matchlobby>")
    await keys(f"register alice {PASSWORD}", "Enter")
    await until_screen(tmux, "Welcome, alice: your account is made and you are logged in.",
                       "alice>")
    carol = await lobby.player("carol")
    await until_screen(tmux, "** carol is online, free to play.", "alice>")
    await keys("who")
    await until_screen(tmux, "alice> who")
    until = (await carol.call("invite", name="alice", ladder="backgammon", length=3)
             )["expires_at"].split("T")[1].rstrip("Z")
    win, loss = fibs_changes(1500.0, 0, 1500.0, 0, 3, True)
    # the push is written above the prompt, which still holds what was typed
    lines = await until_screen(
        tmux, f"** carol invites you to a 3-point backgammon match, open until {until} UTC. "
              "Type 'join carol' or 'decline carol'.",
        *(f"  {name} (rating 1500.00): 50.0% to win; a win {win:+.2f}, a loss {loss:+.2f}."
          for name in ("carol", "alice")), "alice> who")
    assert lines[-5] == "** carol is online, free to play."
    await keys("Enter")
    await until_screen(tmux, "alice> who", "player  status  ratings", "alice   ready   -",
                       "carol   ready   -", "2 players, 0 spectators.", "alice>")
    await keys("quit", "Enter")
    lines = await until_screen(tmux, "alice> quit", "exit=0")
    assert not any("Traceback" in line or "disconnected" in line for line in lines)


async def test_no_writable_home_keeps_the_history_in_memory(lobby: LobbyServer, tmp_path: Path
                                                            ) -> None:
    missing = tmp_path / "no-such-home"
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(missing))
    try:
        await term.expect(r"Command history is kept for this session only: no writable home "
                          r"folder for \.matchlobby_history\.\n")
        await term.expect(r"matchlobby>")
        term.type("who\r")
        await term.expect(r"Nobody is logged in \(1 spectator\)\.\n")
        term.type("whois nobody\r")
        await term.expect(r"Error \(not_found\)")
        await term.expect(r"matchlobby>")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    everything = screen_text(term.raw)
    assert "Traceback" not in everything and everything.count(".matchlobby_history") == 1
    assert not missing.exists()


OLD_HISTORY = ("\n# 2026-03-01 20:00:00.000000\n+login carol carol-pass-1\n"
               "\n# 2026-03-01 20:00:05.000000\n+whois bob\n"
               "\n# 2026-03-01 20:00:09.000000\n+RESUME 4f9c2d1e\n"
               "\n# 2026-03-01 20:00:12.000000\n+ladder backgammon\n")


@pytest.mark.parametrize("existing", [False, True], ids=["new file", "file of an older client"])
async def test_the_history_keeps_no_password_or_token_and_only_its_owner_reads_it(
        lobby: LobbyServer, tmp_path: Path, existing: bool) -> None:
    path = tmp_path / ".matchlobby_history"
    if existing:
        path.write_text(OLD_HISTORY, encoding="utf-8")
        path.chmod(0o644)
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    typed = [f"register alice {PASSWORD}", "who", "resume 0123456789abcdef",
             f'{{"cmd": "login", "args": {{"name": "alice", "password": "{PASSWORD}"}}}}',
             f"  Login alice {PASSWORD}", "whois alice", "help login"]
    try:
        await term.expect(r"matchlobby>")
        for line in typed:
            term.type(line + "\r")
            await term.expect(r"(alice|matchlobby)> ")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    assert "Traceback" not in term.raw.decode("utf-8", "replace")
    history = path.read_text(encoding="utf-8")
    assert PASSWORD not in history and "0123456789abcdef" not in history
    assert "carol-pass-1" not in history and "4f9c2d1e" not in history
    assert path.stat().st_mode & 0o777 == 0o600
    kept = [line[1:] for line in history.splitlines() if line.startswith("+")]
    assert kept == (["whois bob", "ladder backgammon"] if existing else []) + [
        "who", "whois alice", "help login", "quit"]
    if existing:  # the older entries kept as they were written, with their times
        assert history.startswith("\n# 2026-03-01 20:00:05.000000\n+whois bob\n"
                                  "\n# 2026-03-01 20:00:12.000000\n+ladder backgammon\n")


async def test_a_login_elsewhere_logs_this_terminal_out_without_reconnecting(
        lobby: LobbyServer, tmp_path: Path) -> None:
    first = await lobby.player("bob")
    await first.call("who")  # presence pushes, so that it would hear of the terminal's login
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        await term.expect(r"matchlobby>")
        term.type(f"login bob {PASSWORD}\r")
        # the login replaced the first connection: no word of "bob left" about oneself
        shown = await term.expect(r"Logged in as bob\.\n(.*\n)*?bob>")
        assert "** bob" not in shown
        assert "another connection" in (await first.next_push("logged_out"))["data"]["reason"]

        second = await lobby.login("bob")
        await term.expect(r"\*\* You logged in from another connection; this one has been "
                          r"closed\.\n")
        await term.expect(r"Not reconnecting: that would close your newer login\. Type "
                          r"'login NAME PASSWORD' to log in here again \(the other connection "
                          r"is then closed\), or 'quit'\.\n")
        await term.expect(r"matchlobby>")  # the prompt no longer names bob
        term.type("who\r")
        await term.expect(r"Not connected: you logged in from another connection\. Type "
                          r"'login NAME PASSWORD' to log in here again, or 'quit'\.\n")
        await term.expect(r"matchlobby>")
        assert (await second.whois("bob")).online
        assert not [p for p in second.drain_pushes() if p["event"] == "logged_out"]

        term.type(f"login bob {PASSWORD}\r")  # by choice: the other connection is closed
        await term.expect(r"Logged in as bob\.\n")
        await term.expect(r"bob>")
        assert "another connection" in (await second.next_push("logged_out"))["data"]["reason"]
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    everything = screen_text(term.raw)
    assert "Traceback" not in everything and "Connection lost" not in everything
    assert everything.count("Not reconnecting") == 1


async def test_the_client_does_not_announce_its_own_opponents_status(
        lobby: LobbyServer, tmp_path: Path) -> None:
    """Who listed ``who`` hears who comes, goes, starts and ends a match; but the reader's own
    match starting and ending is not news about its opponent ("bob is playing a match" as
    the match starts, "bob is online, free to play" as it ends): the match's own lines say
    it. Anyone else's status still is."""
    bob = await lobby.player("bob")
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        await term.expect(r"matchlobby>")
        term.type(f"register alice {PASSWORD}\r")
        await term.expect(r"alice>")
        term.type("who\r")
        await term.expect(r"2 players, 0 spectators\.\n")
        await bob.call("invite", name="alice", ladder="backgammon")
        await term.expect(r"\*\* bob invites you")
        term.type("join bob\r")
        mid = (await bob.next_push("match_started"))["data"]["match"]
        await term.expect(rf"Match {mid} started")
        await bob.resign()
        await term.expect(rf"\*\* bob resigned; alice wins match {mid}")
        await lobby.player("dave")  # told after the match's presence news, in order
        await term.expect(r"\*\* dave is online, free to play\.")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    shown = screen_text(term.raw)
    assert "bob is playing a match" not in shown and "bob is online" not in shown, shown


async def test_a_banned_terminal_says_why_and_does_not_reconnect(lobby: LobbyServer,
                                                                 tmp_path: Path) -> None:
    await lobby.player("dave")
    admin = await lobby.admin()
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        await term.expect(r"matchlobby>")
        term.type(f"login dave {PASSWORD}\r")
        await term.expect(r"dave>")
        await admin.call("ban", name="dave", reason="spamming the shouts")
        await term.expect(r"banned with no end date: spamming the shouts")
        await term.expect(r"Not reconnecting: the account is banned\. Type 'login NAME "
                          r"PASSWORD' to log in as someone else, or 'quit'\.\n")
        term.type("who\r")
        await term.expect(r"Not connected: the account is banned\.")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
        await admin.call("unban", name="dave")
    everything = screen_text(term.raw)
    assert "Traceback" not in everything and "Connection lost" not in everything
    assert "Connected again" not in everything


async def test_a_new_role_logs_the_terminal_out_without_telling_it_of_its_own_leaving(
        lobby: LobbyServer, tmp_path: Path) -> None:
    """Logged out by the server (the operator changed the role): the reason is shown, not a
    presence line about oneself ("gina left")."""
    await lobby.player("gina")
    watcher = await lobby.player("hank")
    await watcher.call("who")
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        await term.expect(r"matchlobby>")
        term.type(f"login gina {PASSWORD}\r")
        await term.expect(r"gina>")
        done = await run_cli_async(["user", "role", "gina", "admin", "--db", str(lobby.db)],
                                   lobby.db.parent)
        assert done.returncode == 0, done.stderr
        await term.expect(r"Your role was changed; log in again\.")

        async def gina_left() -> None:
            while True:
                push = await watcher.next_push("presence", timeout=10)
                if any(e.get("player") == "gina" and e.get("status") == "offline"
                       for e in push["data"]["players"]):
                    return

        await gina_left()  # the same batch reached the terminal, before the reply below
        term.type("whois hank\r")
        await term.expect(r"hank")
        await term.expect(r"matchlobby>")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    assert "gina left" not in screen_text(term.raw)
