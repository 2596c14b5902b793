"""The one place a command is routed: its row of the command table, the role check, the
idempotent retry, the handler, and then its reply and its pushes, in that order."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from server.api import PluginCommand
from server.commands import ADMIN, COMMANDS, PLAYER, CommandTable
from server.lobby import command_log
from server.lobby.call import Call, LobbyError
from server.lobby.context import plugin_handler
from server.lobby.lobby import Lobby
from server.lobby.reads import read_cost, refusal, retry_after
from server.lobby.requests import AlreadyAnswered, Answer, key_of
from server.lobby.state import Session
from server.protocol import ProtocolError, Request, error, parse_frame, reply
from server.store import CommitFailed, DatabaseUnavailable, StorageFailed
from server.store.faults import current_command

log = logging.getLogger(__name__)
Handler = Callable[[Call], Awaitable[Any]]


class Router:
    """Every command the lobby answers (its own and its plugins'), each with its handler."""

    def __init__(self, lobby: Lobby, handlers: Mapping[str, Handler]) -> None:
        self.lobby = lobby
        commands: list[PluginCommand] = [c for p in lobby.plugins for c in p.commands()]
        self.table = CommandTable([*COMMANDS.values(), *(c.spec for c in commands)])
        self.own = handlers  # read at each call: a test may hold a command in flight
        self.added = {c.spec.name: plugin_handler(c) for c in commands}
        handled = set(handlers) | set(self.added)
        if handled != set(self.table) or set(handlers) & set(self.added):
            raise ValueError(
                f"commands without a handler: {sorted(set(self.table) - handled)}; "
                f"handlers without a command: {sorted(handled - set(self.table))}; "
                f"handled twice: {sorted(set(handlers) & set(self.added))}")
        lobby.commands = self.table
        lobby.metrics.name_commands(self.table)

    async def answer(self, session: Session, text: str, listening: bool = True) -> float:
        """Answer one frame: the reply first, then the pushes it caused.

        ``listening`` false: the peer has gone (or is closing) and will read no reply, so a
        read is not run; a change still is (a client may send one and leave at once).
        A read past its address's budget is refused (server.limits.ReadBudget); then the
        seconds the connection should wait before its next frame are returned (else 0): what
        it sends meanwhile waits in the network, not in the server.
        """
        metrics = self.lobby.metrics
        started = time.perf_counter()
        try:
            request = parse_frame(text, self.table)
        except ProtocolError as e:
            command_log.unreadable(session, e.cmd, e.code, self.table)
            session.send(error(e.code, e.message, e.id, e.cmd))
            metrics.command(e.cmd, e.code, time.perf_counter() - started)
            return 0.0
        reading = request.spec.read_only
        if reading:
            if not listening:
                return 0.0
            wait = self.lobby.reads.wait(session.address)
            if wait > 0:
                refused = error("rate_limited", refusal(wait), request.id, request.cmd)
                refused["error"]["retry_after"] = retry_after(wait)  # for clients that page
                command_log.unreadable(session, request.cmd, "rate_limited", self.table)
                session.send(refused)
                metrics.command(request.cmd, "rate_limited", time.perf_counter() - started,
                                limit="reads")
                return wait
        call = Call(self.lobby, session, request.args)
        # Named in the log line of a storage fault (server/writer.py).
        token = current_command.set(request.cmd if session.player is None
                                    else f"{request.cmd} ({session.player.name})")
        started = time.perf_counter()
        try:
            message = await self.run(call, request)
            took = time.perf_counter() - started
            command_log.answered(session, request.cmd, message, took)
            if reading:
                self.lobby.reads.pay(session.address, read_cost(message, call.read))
            if not session.closed:
                session.send(message)
            metrics.command(request.cmd, "ok" if message.get("ok") else message["error"]["code"],
                            took)
            call.pushes.send()
        finally:
            current_command.reset(token)
            if self.lobby.sharing is not None:
                self.lobby.sharing.release()  # the other nodes get what it shared, in place
        return 0.0

    async def run(self, call: Call, request: Request) -> dict[str, Any]:
        spec = request.spec
        player = call.session.player
        if spec.role in (PLAYER, ADMIN) and player is None:
            return error("not_logged_in", f"'{spec.name}' needs you to log in first.",
                         request.id, request.cmd)
        if spec.role == ADMIN and player is not None and player.role != "admin":
            return error("forbidden", f"'{spec.name}' is for tournament directors (admins).",
                         request.id, request.cmd)
        key = key_of(None if player is None else player.id, request)
        if key is None:
            return await self._execute(call, request)
        replies = self.lobby.requests
        slot = (key.player_id, key.request_id)
        while (waiting := replies.inflight.get(slot)) is not None:
            earlier_run: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            waiting.append(earlier_run)
            earlier, earlier_key = await earlier_run
            if earlier_key == key and earlier.get("ok"):
                return {**earlier, "id": request.id, "replayed": True}
        # Registered before any await, so a duplicate arriving meanwhile waits for this one
        # (with a future of its own: none is made when no duplicate comes).
        waiters: list[asyncio.Future[Answer]] = []
        replies.inflight[slot] = waiters
        message: dict[str, Any] | None = None
        try:
            stored = await replies.find(self.lobby.db, key) if replies.may_have(key) else None
            if stored is not None:
                message = reply(request, stored) | {"replayed": True}
            else:
                call.key = key
                message = await self._execute(call, request)
        finally:
            if message is None:
                message = error("internal", "Interrupted.", request.id, request.cmd)
            if replies.inflight.get(slot) is waiters:
                del replies.inflight[slot]
            for waiter in waiters:
                if not waiter.done():  # (one cancelled meanwhile)
                    waiter.set_result((message, key))
        return message

    async def _execute(self, call: Call, request: Request) -> dict[str, Any]:
        try:
            data = await (self.own.get(request.cmd) or self.added[request.cmd])(call)
        except AlreadyAnswered as e:
            return reply(request, e.data) | {"replayed": True}
        except (LobbyError, ProtocolError) as e:
            return error(e.code, e.message, request.id, request.cmd)
        except (StorageFailed, DatabaseUnavailable) as e:
            return error("internal", str(e), request.id, request.cmd)
        except CommitFailed:
            return error("internal", "The server could not save this; nothing was changed. "
                                     "Please try again.", request.id, request.cmd)
        except Exception:
            player = call.session.player
            log.exception("command %s failed", request.cmd,
                          extra={"command": request.cmd, "code": "internal",
                                 "player": None if player is None else player.name})
            return error("internal", "Something went wrong on the server; nothing was changed.",
                         request.id, request.cmd)
        return reply(request, data)
