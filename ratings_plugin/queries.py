"""The commands the ratings plugin adds to the lobby: ladders, ladder, rating, history."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ratings_plugin.book import today
from ratings_plugin.story import stories
from server.api import (
    ANYONE,
    Arg,
    CommandContext,
    CommandError,
    CommandSpec,
    Flag,
    LadderConfig,
    PluginCommand,
    Reader,
)
from server.api.paging import HISTORY_PAGE, LADDER_PAGE, Page

if TYPE_CHECKING:
    from ratings_plugin.plugin import RatingsPlugin

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
        page = Page.of(args, DEFAULT_ROWS, LADDER_PAGE)
        players = page.slice(rows)
        return {"ladder": config.name, "system": config.system.name, "total": len(rows),
                "columns": [c.as_dict() for c in config.system.columns(config.options)],
                "players": players, "from": page.start,
                "next": page.next(args, len(players), len(rows))}

    async def rating(ctx: CommandContext, args: dict[str, Any]) -> Any:
        name, only = args.get("name"), args.get("ladder")
        if name is not None and only is None and _found(ctx.ladder, name) and not _found(
                ctx.player_name, name):
            name, only = None, name
        if name is None:
            if ctx.player is None:
                raise CommandError("bad_request",
                                   "Give a player's NAME, or log in to see your own ratings.")
            name = ctx.player
        name = ctx.player_name(name)
        if only is not None:
            only = ctx.ladder(only).name
        return {"player": name, "ratings": plugin.ratings_of(name, today(), only)}

    async def history(ctx: CommandContext, args: dict[str, Any]) -> Any:
        name = ctx.player_name(args["name"])
        only = args.get("ladder")
        where = "WHERE player_id = ?"
        params: list[Any] = [ctx.player_id(name)]
        if only is not None:
            only = ctx.ladder(only).name
            where += " AND ladder = ?"
            params.append(only)
        page = Page.of(args, None, HISTORY_PAGE)
        counted = await ctx.reader.fetchone(f"SELECT count(*) FROM history {where}", params)
        total = counted[0] if counted is not None else 0
        # Counted, and their ids sorted to find the page: a tenth of a reply's row each.
        ctx.charge(total // 10)
        whole = {x.name: _whole(x) for x in plugin.ladders.values()}
        entries = []
        # The page's ids from the index alone; only its own rows are read from the table.
        rows = await ctx.reader.fetchall(
            f"SELECT * FROM history WHERE id IN (SELECT id FROM history {where} "
            "ORDER BY id LIMIT ? OFFSET ?) ORDER BY id", [*params, page.size, page.start - 1])
        told, games = await stories(ctx.reader, name, params[0], rows)
        ctx.charge(games)  # an event's entry reads the player's games of the event
        for r, story in zip(rows, told, strict=True):
            cause = {"match": r["match_id"]} if r["match_id"] is not None else {
                "event": r["event_id"]}
            if r["match_id"] is not None and r["event_id"] is not None:
                cause["event"] = r["event_id"]
            before, after = r["before"], r["after"]
            if whole.get(r["ladder"]):
                before = None if before is None else int(before)
                after = int(after)
            entries.append({"ladder": r["ladder"], "at": r["at"], "before": before,
                            "after": after, "change": None if before is None else after - before,
                            "cause": cause, **story})
        return {"player": name, "ladder": only, "entries": entries, "from": page.start,
                "total": total, "next": page.next(args, len(entries), total)}

    return (
        PluginCommand(CommandSpec("rating", ANYONE,
                                  "Ratings of a player (yourself by default) in every ladder, "
                                  "or one.", (Arg("name", "name", True),
                                              Arg("ladder", "ladder", True)), read_only=True),
                      rating),
        PluginCommand(CommandSpec("ladder", ANYONE,
                                  "A ladder's ranking, active players first: COUNT rows (50) "
                                  f"from row FROM, at most {LADDER_PAGE} a reply; 'next' asks "
                                  "for the rest.",
                                  (Arg("ladder", "ladder"), Arg("from", "count", True),
                                   Arg("count", "count", True)), (Flag("all"),), read_only=True),
                      ladder),
        PluginCommand(CommandSpec("history", ANYONE,
                                  "A player's rating history, oldest first: COUNT entries (all) "
                                  f"from FROM, at most {HISTORY_PAGE} a reply; 'next' asks for "
                                  "the rest.",
                                  (Arg("name", "name"), Arg("ladder", "ladder", True),
                                   Arg("from", "count", True), Arg("count", "count", True)),
                                  read_only=True), history),
        PluginCommand(CommandSpec("ladders", ANYONE,
                                  "The configured ladders, their systems and columns.",
                                  read_only=True), ladders),
    )


async def event_changes(plugin: RatingsPlugin, reader: Reader,
                        event_id: int) -> list[dict[str, Any]]:
    """The rating changes an event made, a row per player (by name): the rating before its
    first change and after its last (a ladder rated live changes at each of its games)."""
    first: dict[str, dict[str, Any]] = {}
    for r in await reader.fetchall(
            "SELECT h.ladder, h.before, h.after, p.name FROM history h "
            "JOIN players p ON p.id = h.player_id WHERE h.event_id = ? ORDER BY h.id",
            (event_id,)):
        ladder = plugin.ladders.get(r["ladder"])
        whole = ladder is not None and _whole(ladder)
        before = r["before"] if r["before"] is None or not whole else int(r["before"])
        after = int(r["after"]) if whole else r["after"]
        row = first.setdefault(r["name"], {"player": r["name"], "before": before})
        row["after"] = after
        row["change"] = None if row["before"] is None else after - row["before"]
    return sorted(first.values(), key=lambda c: c["player"].casefold())


def _found(lookup: Callable[[str], object], name: str) -> bool:
    """Whether ``lookup`` (a ladder's or a player's, by name) finds ``name``."""
    try:
        lookup(name)
    except CommandError:
        return False
    return True


def _whole(ladder: LadderConfig) -> bool:
    """Whether the ladder's ratings are whole numbers (history shows them as such)."""
    rating = next((c for c in ladder.system.columns(ladder.options) if c.key == "rating"), None)
    return rating is not None and rating.kind == "integer"
