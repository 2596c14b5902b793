"""The commands the ratings plugin adds to the lobby: ladders, ladder, rating, history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ratings_plugin.book import today
from server.api import (
    ANYONE,
    Arg,
    CommandContext,
    CommandError,
    CommandSpec,
    Flag,
    LadderConfig,
    PluginCommand,
)

if TYPE_CHECKING:
    from ratings_plugin.plugin import RatingsPlugin

MAX_ROWS = 1000
DEFAULT_ROWS = 50


def describe(ladder: LadderConfig) -> dict[str, Any]:
    """A ladder as clients need it to show any system: its system and its columns."""
    system = ladder.system
    return {"ladder": ladder.name, "system": system.name, "system_title": system.title,
            "format": ladder.format,
            "updated": "after each match" if system.rates_each_result
            else ("after each match; events when they close" if system.live_matches
                  else "when an event closes"),
            "live": system.live_matches,
            "columns": [c.as_dict() for c in system.columns(ladder.options)]}


def lobby_commands(plugin: RatingsPlugin) -> Sequence[PluginCommand]:
    async def ladders(ctx: CommandContext, args: dict[str, Any]) -> Any:
        return {"ladders": [{**describe(x), "players": plugin.players_on(x.name)}
                            for x in plugin.ladders.values()]}

    async def ladder(ctx: CommandContext, args: dict[str, Any]) -> Any:
        config = ctx.ladder(args["ladder"])
        rows = plugin.rows(config.name, today())
        if not args.get("all"):
            rows = [r for r in rows if r["active"]]
        start = max(1, args.get("from") or 1)
        count = args.get("count")
        count = DEFAULT_ROWS if count is None else min(count, MAX_ROWS)
        return {"ladder": config.name, "system": config.system.name, "total": len(rows),
                "columns": [c.as_dict() for c in config.system.columns(config.options)],
                "players": rows[start - 1:start - 1 + count]}

    async def rating(ctx: CommandContext, args: dict[str, Any]) -> Any:
        name, only = args.get("name"), args.get("ladder")
        if name is not None and only is None and name in plugin.ladders and not _is_player(
                ctx, name):
            name, only = None, name
        if name is None:
            if ctx.player is None:
                raise CommandError("bad_request",
                                   "Give a player's NAME, or log in to see your own ratings.")
            name = ctx.player
        name = ctx.player_name(name)
        if only is not None:
            ctx.ladder(only)
        return {"player": name, "ratings": plugin.ratings_of(name, today(), only)}

    async def history(ctx: CommandContext, args: dict[str, Any]) -> Any:
        name = ctx.player_name(args["name"])
        only = args.get("ladder")
        sql = "SELECT * FROM history WHERE player_id = ?"
        params: list[Any] = [ctx.player_id(name)]
        if only is not None:
            ctx.ladder(only)
            sql += " AND ladder = ?"
            params.append(only)
        entries = []
        for r in await ctx.reader.fetchall(sql + " ORDER BY id", params):
            cause = {"match": r["match_id"]} if r["match_id"] is not None else {
                "event": r["event_id"]}
            if r["match_id"] is not None and r["event_id"] is not None:
                cause["event"] = r["event_id"]
            before, after = r["before"], r["after"]
            config = plugin.ladders.get(r["ladder"])
            if config is not None and _whole(config):
                before = None if before is None else int(before)
                after = int(after)
            entries.append({"ladder": r["ladder"], "at": r["at"], "before": before,
                            "after": after, "change": None if before is None else after - before,
                            "cause": cause})
        return {"player": name, "ladder": only, "entries": entries}

    return (
        PluginCommand(CommandSpec("rating", ANYONE,
                                  "Ratings of a player (yourself by default) in every ladder, "
                                  "or one.", (Arg("name", "name", True),
                                              Arg("ladder", "ladder", True)), read_only=True),
                      rating),
        PluginCommand(CommandSpec("ladder", ANYONE, "A ladder's ranking, active players first.",
                                  (Arg("ladder", "ladder"), Arg("from", "count", True),
                                   Arg("count", "count", True)), (Flag("all"),), read_only=True),
                      ladder),
        PluginCommand(CommandSpec("history", ANYONE, "A player's rating history, oldest first.",
                                  (Arg("name", "name"), Arg("ladder", "ladder", True)),
                                  read_only=True), history),
        PluginCommand(CommandSpec("ladders", ANYONE,
                                  "The configured ladders, their systems and columns.",
                                  read_only=True), ladders),
    )


def _is_player(ctx: CommandContext, name: str) -> bool:
    try:
        ctx.player_name(name)
    except CommandError:
        return False
    return True


def _whole(ladder: LadderConfig) -> bool:
    """Whether the ladder's ratings are whole numbers (history shows them as such)."""
    rating = next((c for c in ladder.system.columns(ladder.options) if c.key == "rating"), None)
    return rating is not None and rating.kind == "integer"
