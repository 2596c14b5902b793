"""An asyncio client for the lobby protocol.

It sends commands as JSON with an ``id`` and awaits the reply carrying that
id; pushes arrive on an async iterator (:meth:`LobbyClient.pushes`) or through
callbacks (:meth:`LobbyClient.on`). When the connection drops it reconnects
with exponential back-off, logs in again (``resume`` with the session token of
its login, else the password), re-watches its ladders and lists ``who`` again
if it had (the server sends presence pushes to who has). A ``logged_out`` push
(a new password or role, a logout everywhere, a newer login elsewhere) makes it
forget the token and the password: it does not log in again by itself. A server that is
restarting says so first (``server_shutdown``): the client waits the ``reconnect_after`` it
names, then connects again (to the same address: with several servers behind a balancer,
to another) and resumes, as after any lost connection but without counting it a failure.

Every ``ladders`` reply it reads is kept in :attr:`LobbyClient.ladder_info`:
how each ladder's ratings are shown (:class:`clients.models.LadderInfo`).
A watched ladder's ``ladder_updated`` push names a few of the rows that moved
(:class:`clients.models.LadderUpdated`), whatever the ladder's size: fetch the
rows you show with :meth:`LobbyClient.ladder`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import re
import secrets
from collections.abc import AsyncIterator, Callable
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from clients.models import (
    History,
    Invitations,
    Invited,
    Ladder,
    LadderInfo,
    LadderUpdated,
    LoggedIn,
    MatchFinished,
    Ratings,
    Session,
    Stake,
    Whois,
)

log = logging.getLogger(__name__)
Push = dict[str, Any]
RESTORE_ATTEMPTS = 5  # logins tried after a reconnect while refused for too many logins
REPLACED = 4000
"""Close code of a connection replaced by a newer login of the same account: never reconnect
(logging in again would replace the newer connection in turn, and the two would take turns)."""
BANNED = 4001
"""Close code of a banned account's connection: never reconnect (its logins are refused until
the ban ends; the ``logged_out`` push before the close says until when and why)."""
FINAL_CLOSES = frozenset({REPLACED, BANNED})
MAX_RESTART_WAIT = 60.0
"""The longest ``server_shutdown``'s ``reconnect_after`` is taken at."""
PAGE_RETRIES = 5
MAX_PAGE_WAIT = 10.0
"""A page the server refused for now (``rate_limited`` with ``retry_after``: its reads from
this address are over their budget) is asked again after the wait, up to PAGE_RETRIES
times, each wait at most MAX_PAGE_WAIT seconds."""


class LobbyError(Exception):
    """The server refused a command: ``code`` is its stable error word."""

    def __init__(self, code: str, message: str, reply: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.reply = reply or {}


class Disconnected(ConnectionError):
    """The connection dropped before the reply arrived; the command may or may not have run."""


class LobbyClient:
    def __init__(self, url: str = "ws://127.0.0.1:8765/ws", *, reconnect: bool = True,
                 backoff: tuple[float, float] = (0.05, 5.0), max_size: int | None = 2**24,
                 origin: str | None = None, follow_restarts: bool = False) -> None:
        """``reconnect``: connect again (and log in again) whenever the connection drops;
        ``follow_restarts``: only after the server said it restarts (``server_shutdown``), as a
        script that should fail on a lost connection but ride out a restart wants."""
        self.url = url
        self.reconnect = reconnect
        self.follow_restarts = follow_restarts
        self.backoff = backoff
        self.max_size = max_size
        self.origin = origin
        self.hello: dict[str, Any] | None = None
        self.credentials: tuple[str, str] | None = None
        self.session: Session | None = None  # the last login's token: resume logs in with it
        self.player: str | None = None
        self.watching: set[str] = set()
        self.listed_who = False  # the server sends presence pushes to who has listed `who`
        self.ladder_info: dict[str, LadderInfo] = {}
        self._ws: ClientConnection | None = None
        # Ids are the server's idempotency keys: unique per client, reused only to retry.
        self._id_prefix = secrets.token_hex(4)
        self._ids = itertools.count(1)
        self._pending: dict[int | str, asyncio.Future[dict[str, Any]]] = {}
        self._lines: list[asyncio.Future[dict[str, Any]]] = []
        self._pushes: asyncio.Queue[Push] = asyncio.Queue()
        self._callbacks: dict[str, list[Callable[[Push], Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._closing = False
        self.reconnects = 0
        self._come_back_after: float | None = None  # server_shutdown's reconnect_after
        self._restoring: asyncio.Task[None] | None = None

    # ---- connection -----------------------------------------------------------------------

    async def connect(self) -> dict[str, Any]:
        """Open the connection and return the server's ``hello``."""
        await self._open()
        self._reader = asyncio.create_task(self._read_loop(), name="lobby-client-reader")
        assert self.hello is not None
        return self.hello

    async def _open(self) -> None:
        kwargs: dict[str, Any] = {"max_size": self.max_size, "open_timeout": 10}
        if self.origin is not None:
            kwargs["origin"] = self.origin
        self._ws = await connect(self.url, **kwargs)
        first = json.loads(await asyncio.wait_for(self._ws.recv(), 10))
        if first.get("event") != "hello":
            raise ConnectionError(f"expected hello, got {first!r}")
        self.hello = first["data"]
        self._connected.set()

    def _stop_restoring(self) -> None:
        if self._restoring is not None and not self._restoring.done():
            self._restoring.cancel()

    async def close(self) -> None:
        self._closing = True
        self._stop_restoring()
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        self._fail_pending(Disconnected("client closed"))

    async def __aenter__(self) -> LobbyClient:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_connected(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def _ready(self, timeout: float) -> None:
        """Wait for the connection, and after a reconnect for the login again (a request sent
        meanwhile is the player's, not a guest's); a client that will not connect again
        refuses at once."""
        if not self._connected.is_set():
            if self._closing or self._reader is None or self._reader.done():
                raise Disconnected("not connected")
            await self.wait_connected(timeout)
        await self._restored(timeout)

    async def _restored(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds, for the login again after a reconnect (not from
        inside it). Its own failure is its own (logged): the request goes as it is then."""
        restoring = self._restoring
        if restoring is None or restoring.done() or asyncio.current_task() is restoring:
            return
        try:
            await asyncio.wait_for(asyncio.shield(restoring), timeout)
        except asyncio.CancelledError:
            if not restoring.cancelled():
                raise
        except TimeoutError:
            if not restoring.done():
                raise
        except Exception:  # the restore logged it
            pass

    async def _read_loop(self) -> None:
        while True:
            ws = self._ws
            assert ws is not None
            try:
                async for frame in ws:
                    self._dispatch(json.loads(frame))
            except ConnectionClosed:
                pass
            self._connected.clear()
            self._fail_pending(Disconnected("connection lost"))
            self._deliver({"event": "disconnected", "data": {
                "code": ws.close_code, "reason": ws.close_reason}})
            if self._closing or ws.close_code in FINAL_CLOSES:
                return
            if not self.reconnect and not (self.follow_restarts
                                           and self._come_back_after is not None):
                return
            await self._reconnect()

    async def _reconnect(self) -> None:
        """Connect again after the back-off; after ``server_shutdown``, after the wait it
        named, the back-off starting afresh from there."""
        delay = self.backoff[0]
        wait, self._come_back_after = self._come_back_after, None
        while not self._closing:
            await asyncio.sleep(delay if wait is None else wait)
            wait = None
            try:
                await self._open()
            except (OSError, InvalidHandshake, ConnectionError, TimeoutError) as e:
                log.info("reconnect failed (%s); retrying in %.2f s", e, delay)
                delay = min(delay * 2, self.backoff[1])
                continue
            self.reconnects += 1
            self._stop_restoring()  # an earlier connection's login again: not on this one
            self._restoring = asyncio.create_task(self._restore())
            self._deliver({"event": "reconnected", "data": {"attempts": self.reconnects}})
            return

    async def _restore(self) -> None:
        """Log in again (with the session token, else the password), re-watch ladders, list
        `who` again (for presence) and describe the ladders again (if it had) after a
        reconnect."""
        try:
            await self._log_in_again()
            for ladder in sorted(self.watching):
                await self.call("watch", ladder=ladder)
            if self.listed_who:
                await self.call("who")
            if self.ladder_info:
                await self.call("ladders")  # the server may have restarted with other ladders
        except (LobbyError, Disconnected, TimeoutError) as e:
            log.warning("could not restore the session: %s", str(e) or "no reply in time")

    async def _log_in_again(self) -> None:
        """``resume`` with the token, else ``login`` with the password; refused for too many
        logins (a crowd behind one address coming back at once), tried again a little later."""
        for attempt in range(RESTORE_ATTEMPTS):
            try:
                if self.session is not None:
                    try:
                        self._told_while_away(await self.call("resume", token=self.session.token))
                        return
                    except LobbyError as e:
                        if e.code != "forbidden" or self.credentials is None:
                            raise
                        self.session = None
                if self.credentials is not None:
                    self._told_while_away(await self.login(*self.credentials))
                return
            except LobbyError as e:
                if e.code == "banned":  # banned while away: say why, and stop logging in
                    self.credentials = self.session = None
                    self._deliver({"event": "logged_out", "data": {
                        "cause": "banned", "reason": e.message}})
                    return
                if e.code != "rate_limited" or attempt + 1 == RESTORE_ATTEMPTS:
                    raise
                wait = re.search(r"try again in (\d+) s", e.message)
                await asyncio.sleep(min(float(wait.group(1)) if wait else 5.0, 60.0))

    def _told_while_away(self, data: Any) -> None:
        """How the player's matches ended while the connection was down: the reply of the
        login again, which no caller sees, arrives as the local push ``while_away`` (the
        reply's ``while_away`` and ``player``)."""
        if isinstance(data, dict) and isinstance(data.get("while_away"), dict):
            self._deliver({"event": "while_away",
                           "data": {**data["while_away"], "player": data.get("player")}})

    def _fail_pending(self, exc: Exception) -> None:
        for fut in list(self._pending.values()) + self._lines:
            if not fut.done():
                fut.set_exception(exc)
        self._pending.clear()
        self._lines.clear()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "event" in message:
            if message["event"] == "server_shutdown":
                self._come_back_after = restart_wait(message.get("data"))
            self._deliver(message)
            return
        rid = message.get("id")
        fut = self._pending.pop(rid, None) if isinstance(rid, int | str) else None
        if fut is None and self._lines:
            fut = self._lines.pop(0)
        if message.get("cmd") == "ladders" and message.get("ok"):
            self._learn_ladders(message.get("data"))
        if fut is not None and not fut.done():
            fut.set_result(message)

    def _learn_ladders(self, data: Any) -> None:
        try:
            described = {x.ladder: x for x in map(LadderInfo.from_dict, data["ladders"])}
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("a ladders reply this client cannot read: %r", data)
            return
        self.ladder_info = described

    def _deliver(self, message: Push) -> None:
        if message["event"] == "logged_out":
            # the account's password or role changed, it logged out everywhere, or another
            # connection took over: logging in again by itself would undo what was meant
            self.credentials = self.session = self.player = None
        self._pushes.put_nowait(message)
        for cb in self._callbacks.get(message["event"], []) + self._callbacks.get("*", []):
            try:
                cb(message)
            except Exception:
                log.exception("push callback failed")

    # ---- requests -------------------------------------------------------------------------

    def new_id(self) -> str:
        return f"{self._id_prefix}-{next(self._ids)}"

    async def request(self, cmd: str, args: dict[str, Any] | None = None,
                      timeout: float = 30.0, retry: bool = False,
                      request_id: str | None = None) -> dict[str, Any]:
        """Send one JSON command and return the whole reply (``ok`` true or false).

        With ``retry``, a connection lost before the reply is survived: once
        reconnected (and logged in again) the same request is sent with the same
        id, which the server answers without applying it twice.
        """
        rid = request_id or self.new_id()
        attempts = 5 if retry else 1
        for attempt in range(attempts):
            try:
                reply = await self._request_once(rid, cmd, args, timeout)
                if cmd == "who" and reply.get("ok"):
                    self.listed_who = True
                return reply
            except Disconnected:
                if attempt + 1 == attempts or not self.reconnect:
                    raise
                await self.wait_connected(timeout)
                await self._restored(timeout)
        raise AssertionError("unreachable")

    async def _request_once(self, rid: str, cmd: str, args: dict[str, Any] | None,
                            timeout: float) -> dict[str, Any]:
        await self._ready(timeout)
        ws = self._ws
        assert ws is not None
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        message = {"id": rid, "cmd": cmd, "args": args or {}}
        try:
            await ws.send(json.dumps(message))
        except ConnectionClosed:
            self._pending.pop(rid, None)
            raise Disconnected("connection lost while sending") from None
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(rid, None)

    async def send_line(self, line: str, timeout: float = 30.0) -> dict[str, Any]:
        """Send a plain command line; its reply (id ``null``) is matched in order."""
        return await self.send_raw(line, timeout)

    async def send_raw(self, frame: str | bytes, timeout: float = 30.0) -> dict[str, Any]:
        """Send a frame exactly as given (for tools and tests of bad input) and return its reply.

        Replies whose id matches no request of this client are taken in order.
        """
        await self._ready(timeout)
        ws = self._ws
        assert ws is not None
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._lines.append(fut)
        try:
            await ws.send(frame)
        except ConnectionClosed:
            raise Disconnected("connection lost while sending") from None
        return await asyncio.wait_for(fut, timeout)

    async def call_all(self, cmd: str, **args: Any) -> Any:
        """:meth:`call`, then the rest of a paged reply (``ladder``, ``event show``, ``history``):
        its ``next`` sent back until it is null, each page's lists joined to the first's."""
        data = await self._page(cmd, args)
        while isinstance(data, dict) and isinstance(data.get("next"), dict):
            data = join_pages(data, await self._page(cmd, data["next"]))
        return data

    async def _page(self, cmd: str, args: dict[str, Any]) -> Any:
        """One page; when the server asks to wait (its read budget for this address is spent),
        asked again after the wait it names, a few times at most."""
        for _ in range(PAGE_RETRIES):
            try:
                return await self.call(cmd, **args)
            except LobbyError as e:
                wait = (e.reply.get("error") or {}).get("retry_after")
                if e.code != "rate_limited" or not isinstance(wait, int | float):
                    raise
                await asyncio.sleep(min(float(wait), MAX_PAGE_WAIT))
        return await self.call(cmd, **args)

    async def call(self, cmd: str, *, retry: bool = False, **args: Any) -> Any:
        """Send a command and return its ``data``, raising :class:`LobbyError` on a refusal."""
        reply = await self.request(cmd, {k: v for k, v in args.items() if v is not None},
                                   retry=retry)
        if not reply.get("ok"):
            err = reply.get("error") or {}
            raise LobbyError(err.get("code", "internal"), err.get("message", ""), reply)
        return reply.get("data")

    # ---- pushes ---------------------------------------------------------------------------

    def on(self, event: str, callback: Callable[[Push], Any]) -> None:
        """Call ``callback(push)`` for every push named ``event`` (``"*"`` for all)."""
        self._callbacks.setdefault(event, []).append(callback)

    async def pushes(self) -> AsyncIterator[Push]:
        while True:
            yield await self._pushes.get()

    async def next_push(self, event: str | None = None, timeout: float = 10.0,
                        where: Callable[[Push], bool] | None = None) -> Push:
        """The next push (named ``event``, matching ``where``); earlier others are dropped."""
        async def find() -> Push:
            while True:
                p = await self._pushes.get()
                if (event is None or p["event"] == event) and (where is None or where(p)):
                    return p
        return await asyncio.wait_for(find(), timeout)

    async def ladder_updated(self, ladder: str | None = None, timeout: float = 10.0
                             ) -> LadderUpdated:
        """The next ``ladder_updated`` push (of ``ladder``): which rows moved, at most a few;
        :meth:`ladder` fetches the rows to show."""
        push = await self.next_push("ladder_updated", timeout,
                                    None if ladder is None
                                    else lambda p: p["data"]["ladder"] == ladder)
        return LadderUpdated.from_dict(push["data"])

    def drain_pushes(self) -> list[Push]:
        out = []
        while not self._pushes.empty():
            out.append(self._pushes.get_nowait())
        return out

    # ---- common commands ------------------------------------------------------------------

    async def register(self, name: str, password: str) -> Any:
        data = await self.call("register", name=name, password=password)
        self.credentials = (name, password)
        self._logged_in(data)
        return data

    async def login(self, name: str, password: str) -> Any:
        data = await self.call("login", name=name, password=password)
        self.credentials = (name, password)
        self._logged_in(data)
        return data

    async def resume(self, token: str) -> LoggedIn:
        """Log in with a session token a login gave (this client's or a saved one), without
        the password; a token that has ended raises :class:`LobbyError` ``forbidden``."""
        data = await self.call("resume", token=token)
        self.player = data["player"]
        if self.session is None or self.session.token != token:
            self.session = Session(token)
        return LoggedIn.from_dict(data)

    def _logged_in(self, data: Any) -> None:
        with contextlib.suppress(KeyError, TypeError):
            self.player = data["player"]
            self.session = Session.maybe(data.get("session"))

    async def logout(self, everywhere: bool = False, others: bool = False) -> Any:
        """Log out (ending this login's session token); ``everywhere``: every session of the
        account on every connection (``--all``); ``others``: every one but this login's, which
        stays (``--others``)."""
        if others:
            return await self.call("logout", others=True)
        self.credentials = None
        self.session = None
        self.player = None
        return await self.call("logout", all=True if everywhere else None)

    async def watch(self, ladder: str) -> Any:
        data = await self.call("watch", ladder=ladder)
        self.watching.add(ladder)
        return data

    async def unwatch(self, ladder: str) -> Any:
        self.watching.discard(ladder)
        return await self.call("unwatch", ladder=ladder)

    async def ladders(self) -> list[LadderInfo]:
        """The configured ladders and how their ratings are shown (also kept in
        :attr:`ladder_info`)."""
        data = await self.call("ladders")
        return [LadderInfo.from_dict(x) for x in data["ladders"]]

    async def whois(self, name: str) -> Whois:
        return Whois.from_dict(await self.call("whois", name=name))

    async def rating(self, name: str | None = None, ladder: str | None = None) -> Ratings:
        return Ratings.from_dict(await self.call("rating", name=name, ladder=ladder))

    async def ladder(self, ladder: str, start: int | None = None, count: int | None = None,
                     all: bool = False) -> Ladder:
        """``count`` rows (the server's default: 50) from row ``start``, however many replies it
        takes."""
        args: dict[str, Any] = {"ladder": ladder, "from": start, "count": count}
        if all:
            args["all"] = True
        return Ladder.from_dict(await self.call_all("ladder", **args))

    async def event(self, event: int) -> dict[str, Any]:
        """``event show``: every game and the whole standings, however many replies it takes."""
        data: dict[str, Any] = await self.call_all("event show", event=event)
        return data

    async def history(self, name: str, ladder: str | None = None) -> History:
        return History.from_dict(await self.call("history", name=name, ladder=ladder))

    async def stake(self, name: str, ladder: str, length: int | str | None = None) -> Stake:
        """What a match against ``name`` would put at stake now (you first)."""
        return Stake.from_dict(await self.call("stake", name=name, ladder=ladder, length=length))

    async def invite(self, name: str, ladder: str, length: int | str | None = None) -> Invited:
        """Invite ``name``; inviting the same player again replaces the invitation."""
        return Invited.from_dict(await self.call("invite", name=name, ladder=ladder,
                                                 length=length))

    async def invitations(self) -> Invitations:
        """The invitations you sent and those you received, still standing."""
        data = await self.call("invitations")
        return Invitations.from_dict(data, self.player or "")

    async def uninvite(self, name: str) -> str:
        """Withdraw your invitation to ``name``; the name as registered."""
        withdrawn: str = (await self.call("uninvite", name=name))["withdrawn"]
        return withdrawn

    async def resign(self) -> MatchFinished:
        return MatchFinished.from_dict(await self.call("resign"))

    async def confirm(self, match: int) -> MatchFinished:
        return MatchFinished.from_dict(await self.call("confirm", match=match))

    async def claim(self, match: int) -> MatchFinished:
        return MatchFinished.from_dict(await self.call("claim", match=match))

    async def adjudicate(self, match: int, winner: str) -> Any:
        return await self.call("adjudicate", match=match, winner=winner)


def restart_wait(data: Any) -> float:
    """The seconds ``server_shutdown`` asks to wait before connecting again (at most
    :data:`MAX_RESTART_WAIT`; 1 when it does not say)."""
    after = data.get("reconnect_after") if isinstance(data, dict) else None
    if isinstance(after, bool) or not isinstance(after, int | float) or not after >= 0:
        return 1.0
    return min(float(after), MAX_RESTART_WAIT)


def join_pages(first: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """A paged reply's data with the next page's added: its lists joined, its ``next`` taken."""
    joined = dict(first)
    for key, value in more.items():
        if isinstance(value, list) and isinstance(first.get(key), list):
            joined[key] = first[key] + value
    joined["next"] = more.get("next")
    return joined
