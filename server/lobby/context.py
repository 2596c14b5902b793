"""The plugin API's command context: what a plugin's command gets for one request."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import date
from typing import Any, TypeVar

from server.api import LadderConfig, PluginCommand, Publisher, Reader, Tx
from server.api.commands import CommandHandler
from server.lobby.call import Call
from server.store import today
from server.store.handle import WriteTx

T = TypeVar("T")


class PluginContext:
    def __init__(self, call: Call) -> None:
        self.call = call

    @property
    def player(self) -> str | None:
        player = self.call.session.player
        return None if player is None else player.name

    @property
    def ladders(self) -> Mapping[str, LadderConfig]:
        return self.call.lobby.ladders

    @property
    def publish(self) -> Publisher:
        return self.call.publisher

    @property
    def reader(self) -> Reader:
        return self.call.lobby.db.committed

    def ladder(self, name: str) -> LadderConfig:
        return self.call.lobby.ladder(name)

    def player_name(self, name: str) -> str:
        return self.call.lobby.player(name).name

    def player_id(self, name: str) -> int:
        return self.call.lobby.player(name).id

    def today(self) -> date:
        return today()

    def charge(self, rows: int) -> None:
        self.call.charge(rows)

    async def write(self, job: Callable[[Tx], Awaitable[T]]) -> T:
        """The job's result is the command's stored reply: a retry of the request (the same id)
        gets it back instead of running the command again."""
        async def stored(tx: WriteTx) -> T:
            result = await job(tx)
            await self.call.remember(tx, result)
            return result

        return await self.call.write(stored)


def plugin_handler(command: PluginCommand) -> Callable[[Call], Awaitable[Any]]:
    """A plugin's command as a handler of the lobby's command table."""
    run: CommandHandler = command.run

    async def handle(call: Call) -> Any:
        return await run(PluginContext(call), call.args)

    return handle
