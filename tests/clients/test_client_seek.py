"""Automatch on a terminal: ``seek`` typed at the prompt, the reply read as a sentence, and the
match an opponent's seek starts announced as any match start (with its stake)."""

from __future__ import annotations

from pathlib import Path

from testkit.cli import cli_env, matchlobby_command
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer
from testkit.terminal import Terminal


async def test_seek_at_the_prompt_starts_a_match_when_an_opponent_seeks(
        lobby: LobbyServer, tmp_path: Path) -> None:
    bob = await lobby.player("bob")
    env = cli_env(HOME=str(tmp_path), TERM="xterm-256color", NO_COLOR="1",
                  PROMPT_TOOLKIT_NO_CPR="1")
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url], env)
    try:
        await term.expect(r"matchlobby>")
        term.type(f"register alice {PASSWORD}\r")
        await term.expect(r"alice>")
        term.type("seek backgammon 3 --range 80\r")
        await term.expect(r"Looking for an opponent for a 3-point backgammon match within 80 "
                          r"points of your rating, wider the longer you wait\. The match starts "
                          r"as soon as one is found; 'unseek' stops looking\.\n")
        await term.expect(r"alice>")
        term.type("seeks\r")
        await term.expect(r"Looking for a match:\n  you, rating 1500\.00: a 3-point backgammon "
                          r"match within 80 points, since \d\d:\d\d:\d\d UTC\n")
        await term.expect(r"alice>")
        await bob.call("seek", ladder="backgammon", length=3)
        mid = (await bob.next_push("match_started"))["data"]["match"]
        await term.expect(rf"\*\* Match {mid} started: alice vs bob \(backgammon, 3 points\)\.\n"
                          r"  alice \(rating 1500\.00\): 50\.0% to win;.*\n"
                          r"  bob \(rating 1500\.00\): 50\.0% to win;.*\n")
        await term.expect(r"alice>")
        term.type("unseek\r")
        await term.expect(r"Error \(not_found\): You are not looking for a match\.\n")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    assert "Traceback" not in term.raw.decode("utf-8", "replace")
