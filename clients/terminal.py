"""``matchlobby client``: an interactive line client in the spirit of a FIBS session.

Interactive on a terminal (prompt_toolkit: history, tab completion of
commands and online players, pushes printed above the line being typed);
with ``--batch`` or a non-terminal standard input it runs one command per
line and exits, so it can be scripted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from websockets.exceptions import WebSocketException

from clients.lobby_client import Disconnected, LobbyClient, LobbyError, join_pages
from clients.render import NO_LADDERS, Ladders, render_push, render_reply

DEFAULT_URL = "ws://127.0.0.1:8765/ws"
LOCAL_EXIT = {"quit", "exit", "bye"}
UNREACHABLE = (OSError, ConnectionError, TimeoutError, WebSocketException)
"""What connecting may raise: refused, timed out, not a WebSocket endpoint (HTTP 404), a bad URL."""


def _print(text: str, out: TextIO) -> None:
    out.write(text + "\n")
    out.flush()


def show_reply(reply: dict[str, Any], as_json: bool, out: TextIO,
               ladders: Ladders = NO_LADDERS) -> None:
    _print(json.dumps(reply, ensure_ascii=False) if as_json else render_reply(reply, ladders), out)


def show_push(push: dict[str, Any], as_json: bool, out: TextIO,
              ladders: Ladders = NO_LADDERS) -> None:
    _print(json.dumps(push, ensure_ascii=False) if as_json else render_push(push, ladders), out)


async def describe_ladders(client: LobbyClient) -> None:
    """Learn how the server's ladders are shown (their columns) before showing any rating;
    a server that cannot say is shown by the values themselves."""
    with contextlib.suppress(LobbyError, Disconnected, TimeoutError, KeyError, TypeError):
        await client.ladders()


class _CountingClient(LobbyClient):
    """Counts replies as they arrive, so that pushes can be printed in order around them."""

    replies_received = 0

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "event" not in message:
            self.replies_received += 1
        super()._dispatch(message)


class _Session:
    """Runs command lines and prints replies and pushes in the order the server sent them.

    The library delivers the pushes it has already read before the command awaiting
    its reply wakes up, so a push that arrives after the reply of the command in
    flight is held until that reply is printed. The client's own closing is not shown.
    """

    def __init__(self, client: _CountingClient, as_json: bool, out: TextIO | None) -> None:
        self.client = client
        self.as_json = as_json
        self.out = out
        self.sent_at: int | None = None
        self.held: list[dict[str, Any]] = []
        self.closed = False

    def push(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        if self.sent_at is not None and self.client.replies_received > self.sent_at:
            self.held.append(message)
        else:
            show_push(message, self.as_json, self.out or sys.stdout, self.client.ladder_info)

    def _release(self) -> None:
        self.sent_at = None
        held, self.held = self.held, []
        for message in held:
            show_push(message, self.as_json, self.out or sys.stdout, self.client.ladder_info)

    async def run(self, line: str) -> dict[str, Any]:
        """Send ``line``, print its reply (every page of it), then the pushes held meanwhile."""
        self.sent_at = self.client.replies_received
        try:
            reply = await self.client.send_line(line)
            reply = await self._rest(reply)
        except BaseException:
            self._release()
            raise
        show_reply(reply, self.as_json, self.out or sys.stdout, self.client.ladder_info)
        self._release()
        return reply

    async def _rest(self, reply: dict[str, Any]) -> dict[str, Any]:
        """A paged reply (``ladder``, ``event show``, ``history``) completed with the pages it
        announces."""
        while reply.get("ok") and isinstance(reply.get("data"), dict) \
                and isinstance(reply["data"].get("next"), dict):
            more = await self.client.request(reply["cmd"], reply["data"]["next"])
            if not more.get("ok"):
                return more
            reply = {**reply, "data": join_pages(reply["data"], more["data"])}
        return reply

    async def settle(self) -> None:
        """Take in the pushes already on their way before closing: the server answers a
        connection's frames in order, after the pushes the earlier ones caused, so one more
        round trip brings them all."""
        self.sent_at = self.client.replies_received
        with contextlib.suppress(Disconnected, TimeoutError):
            await self.client.request("help", {"command": "help"}, timeout=5)
        self._release()

    async def close(self) -> None:
        self.closed = True
        await self.client.close()


async def run_batch(url: str, lines: Iterable[str], as_json: bool = False,
                    pushes: bool = False, out: TextIO = sys.stdout, err: TextIO = sys.stderr
                    ) -> int:
    """Run each line as a command; 0 when all succeeded, 1 when any was refused, 2 if unreachable."""
    client = _CountingClient(url, reconnect=False)
    try:
        await client.connect()
    except UNREACHABLE as e:
        _print(f"matchlobby client: cannot connect to {url}: {e}", err)
        return 2
    if not as_json:
        await describe_ladders(client)
    session = _Session(client, as_json, out)
    if pushes:
        client.on("*", session.push)
    status = 0
    try:
        for raw in lines:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.lower() in LOCAL_EXIT:
                break
            try:
                reply = await session.run(line)
            except (Disconnected, TimeoutError) as e:
                _print(f"matchlobby client: connection lost: {e}", err)
                return 2
            if not reply.get("ok"):
                status = 1
        if pushes:
            await session.settle()
    finally:
        await session.close()
    return status


class Names:
    """Commands and online players, kept current from pushes for tab completion."""

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.players: set[str] = set()

    def update(self, push: dict[str, Any]) -> None:
        data = push.get("data") or {}
        if push.get("event") == "player_online":
            self.players.add(data.get("player", ""))
        elif push.get("event") == "player_offline":
            self.players.discard(data.get("player", ""))


async def run_interactive(url: str, as_json: bool = False) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import FileHistory, InMemoryHistory
    from prompt_toolkit.patch_stdout import patch_stdout

    names = Names()

    class LobbyCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            text = document.text_before_cursor
            words = text.split()
            current = "" if text.endswith(" ") else (words[-1] if words else "")
            if len(words) == 0 or (len(words) == 1 and not text.endswith(" ")):
                pool = sorted({c.split()[0] for c in names.commands} | LOCAL_EXIT)
            elif words[0] in ("event", "report") and len(words) <= 2 and not (
                    len(words) == 2 and text.endswith(" ")):
                pool = sorted(c.split()[1] for c in names.commands
                              if c.startswith(words[0] + " "))
            else:
                pool = sorted(names.players)
            for word in pool:
                if word.lower().startswith(current.lower()):
                    yield Completion(word, start_position=-len(current))

    client = _CountingClient(url)
    try:
        hello = await client.connect()
    except UNREACHABLE as e:
        print(f"matchlobby client: cannot connect to {url}: {e}", file=sys.stderr)
        return 2
    print(render_push({"event": "hello", "data": hello}))
    await describe_ladders(client)
    try:
        names.commands = [c["command"] for c in (await client.call("help"))["commands"]]
        names.players = {p["player"] for p in (await client.call("who"))["players"]}
    except Exception:
        names.commands = []
    client.on("*", names.update)
    output = _Session(client, as_json, None)  # sys.stdout as patch_stdout has it
    client.on("*", output.push)
    try:
        history: Any = FileHistory(str(Path.home() / ".matchlobby_history"))
    except OSError:
        history = InMemoryHistory()
    session: PromptSession[str] = PromptSession(history=history, completer=LobbyCompleter())
    with patch_stdout():
        while True:
            who = client.credentials[0] if client.credentials else "matchlobby"
            try:
                line = (await session.prompt_async(f"{who}> ")).strip()
            except (EOFError, KeyboardInterrupt):
                break
            if not line:
                continue
            if line.lower() in LOCAL_EXIT:
                break
            try:
                reply = await output.run(line)
            except (Disconnected, TimeoutError):
                print("Connection lost; reconnecting…")
                continue
            _remember_login(client, line, reply)
    await output.close()
    return 0


def _remember_login(client: LobbyClient, line: str, reply: dict[str, Any]) -> None:
    """Keep credentials so the library can log in again after a reconnect."""
    words = line.split()
    if reply.get("ok") and len(words) == 3 and words[0].lower() in ("login", "register"):
        client.credentials = (words[1], words[2])
    elif reply.get("ok") and words and words[0].lower() == "logout":
        client.credentials = None


def main(url: str | None, as_json: bool, batch: bool, pushes: bool) -> int:
    url = url or DEFAULT_URL
    if batch or not sys.stdin.isatty():
        return asyncio.run(run_batch(url, sys.stdin, as_json, pushes))
    return asyncio.run(run_interactive(url, as_json))
