"""The lobby command ``evaluate LADDER``: how well the ladder's own system has predicted its
results, beside the two baselines, for the web page and any client.

The report is what ``matchlobby evaluate --ladder`` prints, computed from the committed log
(from its plain rows where the system allows, as the command line does; else from its units
through the books). Replaying a big ladder takes a while, so the pure work runs on a thread
(the lobby keeps serving meanwhile) and its report is kept per ladder until the log changes: a
new rated unit
moves the ladder's last ``seq``, a void or an adjudication adds a correction. The cache is
only a cache: every node keeps its own and recomputes when its key is stale, so several nodes
on one database answer alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ratings_plugin.commands.replay import EVENT_UNITS, MATCH_LOG
from ratings_plugin.evaluation import evaluate, evaluate_plain
from ratings_plugin.evaluation.plain import plain_predictors
from server.api import (
    ANYONE,
    Arg,
    CommandContext,
    CommandError,
    CommandSpec,
    LadderConfig,
    LogRow,
    PluginCommand,
    Reader,
)

LOG_STATE = """SELECT (SELECT max(seq) FROM matches WHERE ladder = ?),
    (SELECT max(seq) FROM events WHERE ladder = ?),
    (SELECT max(c.id) FROM corrections c JOIN matches m ON m.id = c.match_id
     WHERE m.ladder = ?)"""
"""Where the ladder's log stands: its last rated match and closed event, its last correction."""


@dataclass
class Evaluations:
    """Each ladder's last report, with the log state and configuration it was computed for."""

    kept: dict[str, tuple[tuple[Any, ...], LadderConfig, dict[str, Any]]] = field(
        default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def report(self, ctx: CommandContext, config: LadderConfig) -> dict[str, Any]:
        """The ladder's report, recomputed only when its log or configuration changed; one
        computation at a time per ladder (askers meanwhile wait for it and share it)."""
        lock = self.locks.setdefault(config.name, asyncio.Lock())
        async with lock:
            state = await log_state(ctx.reader, config.name)
            kept = self.kept.get(config.name)
            if kept is not None and kept[0] == state and kept[1] == config:
                return kept[2]
            report = await plain_report(ctx, config)
            if report is None:
                report = await books_report(ctx, config)
            self.kept[config.name] = (state, config, report)
            return report


async def plain_report(ctx: CommandContext, config: LadderConfig) -> dict[str, Any] | None:
    """The report from the log's plain rows, as ``matchlobby evaluate --ladder`` makes it where
    it can (the same report, several times faster on a big ladder): ``None`` when the system
    has no plain predictions, the ladder has event units, or a row is not plain."""
    entries: list[tuple[dict[str, Any], LadderConfig]] = [({}, config)]
    if plain_predictors(entries, {}) is None:
        return None
    found = await ctx.reader.fetchone(EVENT_UNITS, (config.name,))
    if found is None or found[0]:
        return None
    ids = {row[1]: row[0] for row in await ctx.reader.fetchall("SELECT id, name FROM players")}
    rows: list[LogRow] = [tuple(row) async for row in ctx.reader.stream(MATCH_LOG, (config.name,))]
    ctx.charge(len(rows) + len(ids))  # every match of the ladder and every player were read
    report: dict[str, Any] | None = await asyncio.to_thread(evaluate_plain, entries, rows, ids)
    return report


async def books_report(ctx: CommandContext, config: LadderConfig) -> dict[str, Any]:
    """The report from the ladder's units, through the system's books."""
    units = await ctx.reader.log.units(config.name)
    ctx.charge(sum(len(u.games) for u in units))  # every game of the ladder was read
    try:
        report: dict[str, Any] = await asyncio.to_thread(evaluate, [({}, config)], units)
    except ValueError as e:  # a game the ladder's options, since changed, refuse
        raise CommandError("conflict", f"{config.system.title} cannot rate the log of "
                           f"{config.name} as it is configured now: {e}") from None
    return report


async def log_state(reader: Reader, ladder: str) -> tuple[Any, ...]:
    row = await reader.fetchone(LOG_STATE, (ladder, ladder, ladder))
    return tuple(row) if row is not None else ()


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
