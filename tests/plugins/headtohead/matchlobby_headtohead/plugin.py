"""The head-to-head plugin: the read-only command ``h2h A B``, over the games that count on
each ladder (an unrated or unlimited game does not).

Only a command: the base class's defaults say it keeps no tables, reacts to no
event and adds nothing to profiles or matches.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matchlobby_headtohead.tally import record
from server.api import (
    ANYONE,
    Arg,
    CommandContext,
    CommandError,
    CommandSpec,
    PluginBase,
    PluginCommand,
    PluginSetup,
)

H2H = CommandSpec("h2h", ANYONE, "Two players' wins against each other on each ladder.",
                  (Arg("a", "name"), Arg("b", "name")), read_only=True)


class HeadToHeadPlugin(PluginBase):
    name = "headtohead"

    def commands(self) -> Sequence[PluginCommand]:
        return (PluginCommand(H2H, self.h2h),)

    async def h2h(self, ctx: CommandContext, args: dict[str, Any]) -> dict[str, Any]:
        a, b = ctx.player_name(args["a"]), ctx.player_name(args["b"])
        if a == b:
            raise CommandError("bad_request", f"{a} has no record against themselves: "
                                              "name two players.")
        ladders = []
        total = {a: 0, b: 0}
        for ladder, config in ctx.ladders.items():
            units = await ctx.reader.log.units(ladder)
            ctx.charge(sum(len(unit.games) for unit in units))  # a whole log read for one line
            found = record((game for unit in units for game in unit.games
                            if config.system.counts(config.options, game)), a, b)
            if found is None:
                continue
            for name, won in found.wins.items():
                total[name] += won
            ladders.append({"ladder": ladder, "wins": found.wins, "draws": found.draws,
                            "last": found.last.isoformat() if found.last else None})
        return {"players": [a, b], "total": total, "ladders": ladders}


def plugin(setup: PluginSetup) -> HeadToHeadPlugin:
    """The ``matchlobby.plugins`` entry point."""
    return HeadToHeadPlugin()
