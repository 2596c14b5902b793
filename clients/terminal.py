"""``matchlobby client``: an interactive line client in the spirit of a FIBS session.

Interactive on a terminal (prompt_toolkit: history, tab completion of
commands, players and ladders, pushes printed above the line being typed, the
bell on an invitation); with ``--batch`` or a non-terminal standard input it
runs one command per line and exits, so it can be scripted. Replies and
pushes are printed as sentences (:mod:`clients.render`), ``--json`` as they
came.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from websockets.exceptions import WebSocketException

from clients.completion import Names
from clients.lobby_client import BANNED, REPLACED, Disconnected, LobbyClient, LobbyError, join_pages
from clients.models import Session
from clients.render import NO_LADDERS, NOBODY, Ladders, Viewer, render_push, render_reply

DEFAULT_URL = "ws://127.0.0.1:8765/ws"
LOCAL_EXIT = {"quit", "exit", "bye"}
UNREACHABLE = (OSError, ConnectionError, TimeoutError, WebSocketException)
"""What connecting may raise: refused, timed out, not a WebSocket endpoint (HTTP 404), a bad URL."""
BELL = "\a"
HISTORY_NAME = ".matchlobby_history"
PIPE_WIDTH = 80
"""The width replies are wrapped to when the output is not a terminal."""
NO_BELL_ENV = "MATCHLOBBY_NO_BELL"
LOGINS = {"login", "register", "resume"}
SHOUTS_ON_ARRIVAL = 5
PRESENCE = "presence"
FINISHING = {"resign", "confirm", "claim", "adjudicate"}  # replies that may end one's match
REPLACED_TEXT = ("Not reconnecting: that would close your newer login. Type 'login NAME PASSWORD' "
                 "to log in here again (the other connection is then closed), or 'quit'.")
NOT_CONNECTED_TEXT = ("Not connected: you logged in from another connection. Type "
                      "'login NAME PASSWORD' to log in here again, or 'quit'.")
BANNED_TEXT = ("Not reconnecting: the account is banned. Type 'login NAME PASSWORD' to log in "
               "as someone else, or 'quit'.")
BANNED_NOT_CONNECTED_TEXT = ("Not connected: the account is banned. Type 'login NAME PASSWORD' "
                             "to log in as someone else, or 'quit'.")
"""Set (to anything but empty or 0) to keep the terminal from ringing on an invitation."""


def _print(text: str, out: TextIO) -> None:
    out.write(text + "\n")
    out.flush()


def show_reply(reply: dict[str, Any], as_json: bool, out: TextIO,
               ladders: Ladders = NO_LADDERS, viewer: Viewer = NOBODY) -> None:
    _print(json.dumps(reply, ensure_ascii=False) if as_json
           else render_reply(reply, ladders, viewer), out)


def show_push(push: dict[str, Any], as_json: bool, out: TextIO,
              ladders: Ladders = NO_LADDERS, viewer: Viewer = NOBODY) -> None:
    _print(json.dumps(push, ensure_ascii=False) if as_json
           else render_push(push, ladders, viewer), out)


def help_words(line: str) -> str | None:
    """The command a ``help`` line asks about when it names one of several words unquoted
    (``help report win``), which a plain line would send as too many arguments."""
    words = line.split()
    if len(words) > 2 and words[0].lower() == "help" and not any(q in line for q in "'\"\\"):
        return " ".join(words[1:])
    return None


def bell_wanted(flag: bool) -> bool:
    return flag and os.environ.get(NO_BELL_ENV, "") in ("", "0")


class Echoes:
    """Rating changes already on the screen, so that the pushes repeating them are not printed
    again: a finished match's reply or push lists both players' changes, an event's close or
    result and a correction list theirs, and then ``rating_changed`` brings each again."""

    def __init__(self) -> None:
        self.seen: set[tuple[str, str, Any]] = set()

    def _note(self, changes: Any, cause: dict[str, Any] | None) -> None:
        if not isinstance(changes, list):
            return
        for c in changes:
            if not isinstance(c, dict) or not isinstance(c.get("player"), str):
                continue
            why = c.get("cause") if isinstance(c.get("cause"), dict) else cause
            if why:
                self.seen.add(self._key(c["player"], why))

    @staticmethod
    def _key(player: str, cause: dict[str, Any]) -> tuple[str, str, Any]:
        return (player.casefold(), "match", cause["match"]) if "match" in cause else (
            player.casefold(), "event", cause.get("event"))

    def note(self, data: Any) -> None:
        """Remember the changes a reply's or a push's data shows."""
        if isinstance(data, dict) and "changes" in data:
            cause = {"match": data["match"]} if "match" in data else (
                {"event": data["id"]} if "id" in data else None)
            self._note(data["changes"], cause)

    def repeats(self, push: dict[str, Any]) -> bool:
        d = push.get("data")
        if push.get("event") != "rating_changed" or not isinstance(d, dict):
            return False
        cause, player = d.get("cause"), d.get("player")
        return isinstance(cause, dict) and isinstance(player, str) and bool(cause) and \
            self._key(player, cause) in self.seen


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
    flight is held until that reply is printed; while a login is in flight, every push is
    held, so that it is read knowing who logged in. The client's own closing is not shown,
    nor a push that repeats what is on the screen already (:class:`Echoes`, the
    dispute one sent oneself, one's own comings and goings). A connection replaced by a
    newer login of the same account logs out here and says how to log in again.
    With ``bell``, an invitation rings the terminal's bell.
    """

    def __init__(self, client: _CountingClient, as_json: bool, out: TextIO | None,
                 width: Callable[[], int | None] = lambda: None, bell: bool = False) -> None:
        self.client = client
        self.as_json = as_json
        self.out = out
        self.width = width
        self.bell = bell
        self.sent_at: int | None = None
        self.logging_in = False
        self.replaced = False  # closed for good (replaced or banned): no reconnecting
        self.banned = False
        self.logged_out_as: str | None = None  # logged out by the server (a new role, a ban)
        self.restarting = False  # told server_shutdown: its closing is no news
        self.held: list[dict[str, Any]] = []
        self.closed = False
        self.echoes = Echoes()
        self.me: str | None = None
        self.role: str | None = None
        # the statuses the reader's own match gives its opponent, not announced to them
        self.expected: set[tuple[str, str]] = set()

    @property
    def viewer(self) -> Viewer:
        return Viewer(self.me, self.role, self.width())

    def push(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        if self.sent_at is not None and (self.logging_in or
                                         self.client.replies_received > self.sent_at):
            self.held.append(message)
        else:
            self._show_push(message)

    def _show_push(self, message: dict[str, Any]) -> None:
        data = message.get("data")
        if not self.as_json:
            if self.echoes.repeats(message):
                return
            if message.get("event") == "result_disputed" and isinstance(data, dict) and \
                    self.viewer.mine(data.get("by")):
                return
            if message.get("event") == PRESENCE and isinstance(data, dict) and isinstance(
                    data.get("players"), list):
                told = [e for e in data["players"] if not self._known(e)]
                if not told:
                    return
                message = {**message, "data": {**data, "players": told}}
        if message.get("event") in ("match_started", "match_finished"):
            self._expect(data)
        if message.get("event") == "logged_out":
            self.logged_out_as = self.me  # the presence push of one's own leaving is no news
            self.me = self.role = None  # the connection carries on as a spectator's (or closes)
        if message.get("event") == "disconnected" and isinstance(data, dict) and \
                data.get("code") in (REPLACED, BANNED):
            self.replaced = True
            self.banned = data.get("code") == BANNED
            self.me = self.role = None
            if not self.as_json:
                _print(BANNED_TEXT if self.banned else REPLACED_TEXT, self.out or sys.stdout)
                return
        if message.get("event") == "match_finished":
            self.echoes.note(data)
        if not self.as_json and self._restart_told(message):
            return
        out = self.out or sys.stdout
        if self.bell and message.get("event") == "invited":
            out.write(BELL)
        show_push(message, self.as_json, out, self.client.ladder_info, self.viewer)

    def _restart_told(self, message: dict[str, Any]) -> bool:
        """A restart told once: ``server_shutdown`` in a sentence (without the promise to
        reconnect where the client does not), the lost connection that follows not again."""
        event = message.get("event")
        if event == "server_shutdown":
            self.restarting = True
            if not self.client.reconnect:
                _print("The server is restarting.", self.out or sys.stdout)
                return True
        elif event == "disconnected" and self.restarting:
            return True
        elif event == "reconnected":
            self.restarting = False
        return False

    def _known(self, entry: Any) -> bool:
        """A presence entry the reader knows already: their own, or their opponent's status
        that their own match's start or end gives."""
        if not isinstance(entry, dict) or self.viewer.mine(entry.get("player")):
            return True
        if self.logged_out_as is not None and entry.get("status") == "offline" and \
                str(entry.get("player", "")).casefold() == self.logged_out_as.casefold():
            self.logged_out_as = None
            return True
        key = (str(entry.get("player", "")).casefold(), str(entry.get("status", "")))
        if key in self.expected:
            self.expected.discard(key)
            return True
        return False

    def _expect(self, data: Any) -> None:
        """A match of the reader's started (its opponent is now playing) or ended (free)."""
        if not isinstance(data, dict):
            return
        ended = "winner" in data
        sides = [s for k in (("winner", "loser") if ended else ("a", "b"))
                 if isinstance(s := data.get(k), str)]
        if len(sides) != 2 or not any(map(self.viewer.mine, sides)):
            return
        for side in sides:
            if not self.viewer.mine(side):
                self.expected.add((side.casefold(), "ready" if ended else "playing"))

    def _release(self) -> None:
        self.sent_at = None
        self.logging_in = False
        held, self.held = self.held, []
        for message in held:
            self._show_push(message)

    async def run(self, line: str) -> dict[str, Any]:
        """Send ``line``, print its reply (every page of it), then the pushes held meanwhile."""
        self.sent_at = self.client.replies_received
        self.logging_in = line.split(maxsplit=1)[0].lower() in LOGINS
        try:
            asked = help_words(line)
            reply = await (self.client.send_line(line) if asked is None
                           else self.client.request("help", {"command": asked}))
            reply = await self._rest(reply)
        except BaseException:
            self._release()
            raise
        self._learn(reply)
        if reply.get("ok") and (reply.get("cmd") == "join" or reply.get("cmd") in FINISHING):
            self._expect(reply.get("data"))
        self.echoes.note(reply.get("data") if reply.get("ok") else None)
        show_reply(reply, self.as_json, self.out or sys.stdout, self.client.ladder_info,
                   self.viewer)
        self._release()
        return reply

    def _learn(self, reply: dict[str, Any]) -> None:
        """Who is logged in, from the replies that log in and out."""
        data = reply.get("data")
        if not reply.get("ok") or not isinstance(data, dict):
            return
        if reply.get("cmd") in ("login", "register", "resume") and "player" in data:
            self.me, self.role = data["player"], data.get("role")
        elif reply.get("cmd") == "logout" and not data.get("logged_in"):
            self.me = self.role = None

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

    async def log_in_again(self) -> None:
        """A new connection after this one was replaced; it logs in only by the command the
        user types next, so the other connection is closed only by choice."""
        self.client.credentials = self.client.session = None
        await self.client.connect()
        self.replaced = False

    async def close(self) -> None:
        self.closed = True
        await self.client.close()


async def run_batch(url: str, lines: Iterable[str], as_json: bool = False,
                    pushes: bool = False, out: TextIO = sys.stdout, err: TextIO = sys.stderr
                    ) -> int:
    """Run each line as a command; 0 when all succeeded, 1 when any was refused, 2 if unreachable."""
    client = _CountingClient(url, reconnect=False, follow_restarts=True)
    try:
        await client.connect()
    except UNREACHABLE as e:
        _print(f"matchlobby client: cannot connect to {url}: {e}", err)
        return 2
    if not as_json:
        await describe_ladders(client)
    session = _Session(client, as_json, out, width=lambda: _columns(out))
    if pushes:
        client.on("*", session.push)
    status = 0
    source = iter(lines)
    try:
        # read off the event loop: a script's input may wait for long, and meanwhile the
        # connection answers the server's pings and hears its pushes (a restart among them)
        while (raw := await asyncio.to_thread(next, source, None)) is not None:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.lower() in LOCAL_EXIT:
                break
            try:
                reply = await session.run(line)
            except (Disconnected, TimeoutError) as e:
                _print(f"matchlobby client: {str(e) or 'no reply in time'}; giving up", err)
                return 2
            _remember_login(client, line, reply)
            if not reply.get("ok"):
                status = 1
        if pushes:
            await session.settle()
        if session.me is not None and client.credentials is not None:
            # a login the script made leaves no session behind it (a token it resumed was
            # made elsewhere, and stays)
            with contextlib.suppress(Disconnected, TimeoutError, LobbyError):
                await client.request("logout", {}, timeout=5)
    finally:
        await session.close()
    return status


def _columns(out: TextIO) -> int:
    """The width of the terminal ``out`` writes to; :data:`PIPE_WIDTH` for a file or pipe, as
    text meant to be read there is (a mail, a log)."""
    try:
        return shutil.get_terminal_size().columns if out.isatty() else PIPE_WIDTH
    except (OSError, ValueError):
        return PIPE_WIDTH


async def run_interactive(url: str, as_json: bool = False, bell: bool = True) -> int:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer, Completion
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.patch_stdout import patch_stdout

    client = _CountingClient(url)
    names = Names(lambda: client.ladder_info.keys(), LOCAL_EXIT)

    class LobbyCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Any:
            text = document.text_before_cursor
            words = text.split()
            current = "" if not words or text[-1:].isspace() else words[-1]
            done = words if not current else words[:-1]
            for word in names.offers(done):
                if word.lower().startswith(current.lower()):
                    yield Completion(word, start_position=-len(current))

    try:
        hello = await client.connect()
    except UNREACHABLE as e:
        print(f"matchlobby client: cannot connect to {url}: {e}", file=sys.stderr)
        return 2
    print(render_push({"event": "hello", "data": hello}))
    await describe_ladders(client)
    with contextlib.suppress(LobbyError, Disconnected, TimeoutError, KeyError, TypeError):
        names.learn(await client.call("help"))
        names.players = {p["player"] for p in (await client.call("who"))["players"]}
        recent = await client.request("shouts", {"count": SHOUTS_ON_ARRIVAL})
        if recent.get("ok") and recent["data"]["shouts"]:
            print(render_reply(recent))  # what the lobby has been shouting lately
    client.on("*", names.update)
    # sys.stdout as patch_stdout has it; the width of the terminal at each reply
    output = _Session(client, as_json, None, width=lambda: shutil.get_terminal_size().columns,
                      bell=bell_wanted(bell))
    client.on("*", output.push)
    history: Any = file_history()
    if history is None:
        print("Command history is kept for this session only: no writable home folder "
              f"for {HISTORY_NAME}.")
        history = InMemoryHistory()
    session: PromptSession[str] = PromptSession(history=history, completer=LobbyCompleter())
    with patch_stdout():
        while True:
            try:  # the prompt is redrawn with who is logged in when a push changes that
                line = (await session.prompt_async(
                    lambda: f"{output.me or 'matchlobby'}> ")).strip()
            except (EOFError, KeyboardInterrupt):
                break
            if not line:
                continue
            if line.lower() in LOCAL_EXIT:
                break
            if output.replaced:
                if line.split()[0].lower() not in LOGINS:
                    print(BANNED_NOT_CONNECTED_TEXT if output.banned else NOT_CONNECTED_TEXT)
                    continue
                try:
                    await output.log_in_again()
                except UNREACHABLE as e:
                    print(f"Cannot connect to {url}: {e}")
                    continue
            try:
                reply = await output.run(line)
            except (Disconnected, TimeoutError):
                if not output.replaced:
                    print("Connection lost; reconnecting…")
                continue
            _remember_login(client, line, reply)
            if output.me:
                names.players.add(output.me)  # never told of oneself, nor back after a replaced login
    await output.close()
    return 0


def file_history() -> Any:
    """The command history kept in the home folder (:class:`clients.history.PrivateHistory`),
    or ``None`` when the folder cannot be written: prompt_toolkit would otherwise fail at every
    command it tries to save."""
    from clients.history import PrivateHistory

    try:
        return PrivateHistory(Path.home() / HISTORY_NAME)
    except (OSError, RuntimeError):  # RuntimeError: no home folder can be found
        return None


def _remember_login(client: LobbyClient, line: str, reply: dict[str, Any]) -> None:
    """Keep the session token (and the password of a login typed here) so that the library
    can log in again after a reconnect."""
    words = line.split()
    data = reply.get("data")
    if not reply.get("ok") or not words or not isinstance(data, dict):
        return
    command = words[0].lower()
    if command in ("login", "register") and len(words) == 3:
        client.credentials = (words[1], words[2])
        client.session = Session.maybe(data.get("session"))
    elif command == "resume" and len(words) == 2:
        client.credentials = None
        client.session = Session(words[1])
    elif command == "logout" and not data.get("logged_in"):
        client.credentials = client.session = None


def main(url: str | None, as_json: bool, batch: bool, pushes: bool, bell: bool = True) -> int:
    url = url or DEFAULT_URL
    if batch or not sys.stdin.isatty():
        return asyncio.run(run_batch(url, sys.stdin, as_json, pushes))
    return asyncio.run(run_interactive(url, as_json, bell))
