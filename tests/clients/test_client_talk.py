"""Talk in the terminal client, as a FIBS session shows it: ``alice tells: hi``, ``You tell
bob: hi``; the recent shouts when it connects; the batch client's lines for each command."""

from __future__ import annotations

from pathlib import Path

from testkit.cli import cli_env, matchlobby_command, run_batch
from testkit.clients import start_match
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer
from testkit.terminal import Terminal

from clients.render import Viewer, render_push, render_reply


def terminal_env(home: Path) -> dict[str, str]:
    """As test_client_interactive's: the history in the test's folder; no cursor position
    requests, which the bare pseudo-terminal does not answer."""
    return cli_env(HOME=str(home), TERM="xterm-256color", NO_COLOR="1",
                   PROMPT_TOOLKIT_NO_CPR="1")


async def test_a_terminal_shows_talk_as_fibs_does(lobby: LobbyServer, tmp_path: Path) -> None:
    bob = await lobby.player("bob")
    await bob.call("shout", text="anyone for a 5-pointer?")
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        # a newcomer reads what was shouted lately, before logging in
        await term.expect(r"\[\d\d:\d\d\] bob shouts: anyone for a 5-pointer\?\n")
        await term.expect(r"matchlobby>")
        term.type(f"register alice {PASSWORD}\r")
        await term.expect(r"alice>")
        term.type("tell bob hi, don't wait for me\r")
        await term.expect(r"You tell bob: hi, don't wait for me\n")
        assert (await bob.next_push("told"))["data"]["text"] == "hi, don't wait for me"
        await term.expect(r"alice>")
        await bob.call("tell", name="alice", text="ok <b>then</b>")
        await term.expect(r"bob tells: ok <b>then</b>\n")
        await bob.call("shout", text="last call")
        await term.expect(r"bob shouts: last call\n")
    finally:
        await term.aclose()
    shown = term.raw.decode("utf-8", "replace")
    assert "Traceback" not in shown
    assert "** bob" not in shown  # a person's words, not a system message


async def test_the_batch_client_prints_each_talk_command(lobby: LobbyServer) -> None:
    alice, bob, carol = await lobby.players("alice", "bob", "carol")
    await start_match(alice, bob)
    await alice.close()
    done = await run_batch(lobby.url, [
        f"login alice {PASSWORD}", "tell carol hi carol", "say gl, have fun",
        "shout anyone for a 5-pointer?", "block", "block carol", "block", "unblock carol"])
    assert (done.returncode, done.stderr) == (0, ""), done.stdout
    assert done.lines[-7:] == [
        "You tell carol: hi carol",
        "You say to bob: gl, have fun",
        "You shout: anyone for a 5-pointer?",
        "You block nobody.",
        "You block carol: their tells, says and invitations no longer reach you (they are "
        "not told).",
        "You block carol.",
        "You hear carol again.",
    ]
    assert (await carol.next_push("told"))["data"]["text"] == "hi carol"
    assert (await bob.next_push("said"))["data"]["text"] == "gl, have fun"


def test_talk_pushes_read_as_fibs_lines() -> None:
    me = Viewer("alice")
    lines = [render_push({"event": e, "data": d}, viewer=me) for e, d in (
        ("told", {"from": "bob", "text": "hi"}),
        ("said", {"from": "bob", "text": "gl", "match": 3}),
        ("shouted", {"id": 1, "at": "2026-12-03T17:05:00Z", "from": "bob", "text": "5-pointer?"}),
        ("muted", {"muted": True, "until": "2026-12-03T17:35:00Z", "by": "root"}),
        ("muted", {"muted": True, "until": None, "by": "root"}),
        ("muted", {"muted": False, "until": None, "by": "root"}),
    )]
    assert lines == [
        "bob tells: hi",
        "bob says: gl",
        "bob shouts: 5-pointer?",
        "** root muted you until 2026-12-03 17:35 UTC: you cannot tell, say or shout meanwhile.",
        "** root muted you until an admin unmutes you: you cannot tell, say or shout meanwhile.",
        "** root unmuted you: you may tell, say and shout again.",
    ]


def test_talk_replies_read_as_sentences() -> None:
    def reply(cmd: str, data: object) -> str:
        return render_reply({"ok": True, "cmd": cmd, "data": data})

    assert reply("shouts", {"shouts": []}) == "Nobody has shouted yet."
    assert reply("shouts", {"shouts": [
        {"id": 1, "at": "2026-12-03T17:05:00Z", "from": "bob", "text": "anyone?"},
        {"id": 2, "at": "2026-12-03T17:06:10Z", "from": "carol", "text": "me"}]}) == (
        "[17:05] bob shouts: anyone?\n[17:06] carol shouts: me")
    assert reply("mute", {"player": "bob", "muted": True, "until": "2026-12-03T17:35:00Z"}) == (
        "bob is muted until 2026-12-03 17:35 UTC.")
    assert reply("mute", {"player": "bob", "muted": True, "until": None}) == (
        "bob is muted until you unmute them.")
    assert reply("unmute", {"player": "bob", "muted": False, "until": None}) == (
        "bob may tell, say and shout again.")
    # a long line wraps under its text, not under the speaker's name
    long = render_push({"event": "told", "data": {"from": "bob", "text": "word " * 30}},
                       viewer=Viewer("alice", width=40))
    assert long.splitlines()[0].startswith("bob tells: word") and all(
        len(line) <= 40 for line in long.splitlines())
