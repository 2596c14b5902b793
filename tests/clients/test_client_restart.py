"""A server restarting gracefully, as the terminal client tells it: ``server_shutdown`` in one
sentence naming the wait, no "Connection lost", then connected again and still logged in."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from testkit.cli import cli_env, matchlobby_command
from testkit.constants import PASSWORD
from testkit.db import sql
from testkit.server_loop import LobbyServer
from testkit.server_process import ServerProcess
from testkit.terminal import Terminal, screen_text

from clients.lobby_client import restart_wait
from clients.render import render_push


def terminal_env(home: Path) -> dict[str, str]:
    """As the interactive tests have it: history in the test's folder, no cursor position
    requests (the bare pseudo-terminal does not answer them)."""
    return cli_env(HOME=str(home), TERM="xterm-256color", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1")


def test_the_notice_names_the_wait() -> None:
    notice = {"event": "server_shutdown",
              "data": {"reconnect_after": 2.5, "reason": "The server is restarting."}}
    assert render_push(notice) == "** The server is restarting; reconnecting in 2.5 s."


def test_the_wait_is_a_number_of_seconds_within_bounds() -> None:
    assert restart_wait({"reconnect_after": 2.4, "reason": "x"}) == 2.4
    assert restart_wait({"reconnect_after": 3600}) == 60.0  # at most a minute
    for odd in ({"reconnect_after": -1}, {"reconnect_after": "soon"}, {"reconnect_after": True},
                {"reconnect_after": float("nan")}, {}, None, []):
        assert restart_wait(odd) == 1.0, odd


async def test_the_terminal_says_the_server_is_restarting_and_comes_back_logged_in(
        lobby: LobbyServer, tmp_path: Path) -> None:
    term = await Terminal.spawn([*matchlobby_command(), "client", lobby.url],
                                terminal_env(tmp_path))
    try:
        await term.expect(r"matchlobby>")
        term.type(f"register alice {PASSWORD}\r")
        await term.expect(r"alice>")
        assert lobby.server is not None
        await lobby.server.drain()
        await term.expect(r"\*\* The server is restarting; reconnecting in \d(\.\d)? s\.\n")
        await lobby.restart()
        await term.expect(r"\*\* Connected again\.\n")
        term.type("invitations\r")  # a player's command: the session was resumed
        await term.expect(r"No invitations")
        await term.expect(r"alice>")
        term.type("quit\r")
        assert await term.wait() == 0
    finally:
        await term.aclose()
    everything = screen_text(term.raw)
    assert "Traceback" not in everything
    assert "Connection lost" not in everything  # the restart was told, once


async def test_a_script_rides_out_a_restart_and_leaves_no_session(
        db_path: Path, fast_config: Path, tmp_path: Path) -> None:
    """``client --batch`` waiting on its input while the server restarts: it answers the
    drain's ping (its input is read off the event loop), so the server closes it at once
    instead of at the end of the grace time; its next command goes to the restarted server,
    logged in again; at its end it logs out, so no session token outlives the script."""
    server = ServerProcess(db_path, fast_config, log=tmp_path / "serve.log").start()
    script: asyncio.subprocess.Process | None = None
    try:
        await server.ready()
        script = await asyncio.create_subprocess_exec(
            *matchlobby_command(), "client", server.url, "--batch", "--pushes",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=cli_env())
        assert script.stdin is not None and script.stdout is not None
        script.stdin.write(f"register carol {PASSWORD}\n".encode())
        await script.stdin.drain()
        seen = ""
        while "carol" not in seen:
            seen += (await asyncio.wait_for(script.stdout.readline(), 30)).decode()
        began = server.began_at
        server.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        assert await asyncio.to_thread(server.proc.wait, 60) == 0  # type: ignore[union-attr]
        stopping = server.output(began)
        assert "grace time is over" not in stopping, stopping  # it answered the ping: closed at once

        server.start()
        await server.ready()
        script.stdin.write(b"invitations\n")  # a player's command: it needs the login again
        script.stdin.close()
        out, err = await asyncio.wait_for(script.communicate(), 60)
        assert script.returncode == 0, (out, err)
        assert "No invitations" in out.decode()
        assert "The server is restarting" in (seen + out.decode())
    finally:
        if script is not None and script.returncode is None:
            script.kill()
        server.stop()
    assert sql(db_path, "SELECT count(*) FROM sessions") == [(0,)]
