"""The lobby command ``evaluate LADDER``: how well the ladder's own system has predicted its
results, beside the two baselines, for the web page and any client.

The report is what ``matchlobby evaluate --ladder`` prints, read from the committed log by the
same code (:mod:`ratings_plugin.log_evaluation`: a page at a time, the pure work on a thread
so the lobby keeps serving). Each ladder's evaluation is kept between asks: the next ask
after new matches feeds it only the units rated since (and charges the asker for those
alone); a correction (a void, an adjudication) or a new configuration starts it over. It is
only a cache of what the committed log gives: every node keeps its own and each ask checks
it against the log, so several nodes on one database answer alike. What it holds grows with
the ladder: each row's predictions and the outcomes (8 bytes a game each) and the system's
standings, about 60 MB for a ladder of a million FIBS matches (docs/PERFORMANCE.md, 14b).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ratings_plugin.log_evaluation import Evaluation, evaluation
from server.api import (
    ANYONE,
    Arg,
    CommandContext,
    CommandError,
    CommandSpec,
    LadderConfig,
    PluginCommand,
)


@dataclass
class Evaluations:
    """Each ladder's evaluation as far as the log had gone at its last ask."""

    kept: dict[str, Evaluation] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def report(self, ctx: CommandContext, config: LadderConfig) -> dict[str, Any]:
        """The ladder's report, its evaluation carried on to where the log stands now; one
        at a time per ladder (askers meanwhile wait for it and share it)."""
        lock = self.locks.setdefault(config.name, asyncio.Lock())
        async with lock:
            kept = self.kept.pop(config.name, None)  # put back only when carried on whole
            try:
                found = await evaluation(ctx.reader, config.name, [({}, config)], ctx.charge,
                                         kept)
            except ValueError as e:  # a game the ladder's options, since changed, refuse
                raise CommandError("conflict", f"{config.system.title} cannot rate the log "
                                   f"of {config.name} as it is configured now: {e}") from None
            report = await asyncio.to_thread(found.report)
            self.kept[config.name] = found
            return report


def evaluation_commands() -> Sequence[PluginCommand]:
    evaluations = Evaluations()

    async def run(ctx: CommandContext, args: dict[str, Any]) -> Any:
        config = ctx.ladder(args["ladder"])
        report = await evaluations.report(ctx, config)
        return {"ladder": config.name, "system": config.system.name, **report}

    return (
        PluginCommand(CommandSpec("evaluate", ANYONE,
                                  "How well the ladder's system has predicted its results.",
                                  (Arg("ladder", "ladder"),), read_only=True), run),
    )
