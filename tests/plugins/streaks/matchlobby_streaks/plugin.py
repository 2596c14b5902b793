"""The streaks plugin: its hooks and its command ``streak NAME``.

It keeps no state in memory: what it derives from a result is written in
that result's transaction, and ``streak`` reads the committed table, so
nobody sees a streak before the result that made it is durable, and a failed
transaction leaves nothing to undo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matchlobby_streaks import table
from server.api import (
    ANYONE,
    Arg,
    CommandContext,
    CommandSpec,
    DomainEvent,
    EventClosed,
    LadderConfig,
    LadderCorrected,
    MatchFinished,
    PluginBase,
    PluginCommand,
    PluginSetup,
    Schema,
    Tx,
)

STREAK = CommandSpec("streak", ANYONE,
                     "A player's current and best winning streak on each ladder they play.",
                     (Arg("name", "name"),), read_only=True)


class StreaksPlugin(PluginBase):
    """Keeps nothing in memory and publishes nothing: every answer is read from its table,
    committed with the result that made it."""

    name = table.NAME

    def __init__(self, setup: PluginSetup) -> None:
        self.ladders: dict[str, LadderConfig] = {x.name: x for x in setup.ladders}
        self.schema: Schema = table.schema(setup.ladders)

    def commands(self) -> Sequence[PluginCommand]:
        return (PluginCommand(STREAK, self.streak),)

    async def on_event(self, tx: Tx, event: DomainEvent) -> None:
        if isinstance(event, MatchFinished | EventClosed):
            ladder = self.ladders.get(event.unit.ladder)
            if ladder is not None:
                await table.apply(tx, ladder, event.unit)
        elif isinstance(event, LadderCorrected):
            ladder = self.ladders.get(event.ladder)
            if ladder is not None:
                await table.rebuild(tx, ladder)

    async def streak(self, ctx: CommandContext, args: dict[str, Any]) -> dict[str, Any]:
        name = ctx.player_name(args["name"])
        rows = {row[0]: row for row in await ctx.reader.fetchall(table.OF_PLAYER,
                                                                  [ctx.player_id(name)])}
        return {"player": name,
                "streaks": [{"ladder": ladder, "current": rows[ladder][1], "best": rows[ladder][2]}
                            for ladder in ctx.ladders if ladder in rows]}


def plugin(setup: PluginSetup) -> StreaksPlugin:
    """The ``matchlobby.plugins`` entry point."""
    return StreaksPlugin(setup)
