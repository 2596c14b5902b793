"""Events: create, record results (one by one or a results file), close, list, show."""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from server.api import EventClosed, Game, LadderConfig, MatchFinished, RatedUnit
from server.api.paging import EVENT_PAGE, Page
from server.api.results_file import ResultsError, parse_results
from server.handlers.matches import check_score
from server.lobby import Call, Effects, Lobby, LobbyError, Player, fail
from server.protocol import MAX_LENGTH, MAX_SCORE
from server.store import events as stored
from server.store import matches, now, players, today
from server.store.handle import WriteTx

MAX_IMPORT_ROWS = 5000


@dataclass
class EventRow:
    id: int
    name: str
    ladder: str
    date: str
    status: str
    version: int = 0  # moves on with every change to its results


def event_data(e: EventRow) -> dict[str, Any]:
    return {"id": e.id, "name": e.name, "ladder": e.ladder, "date": e.date, "status": e.status}


async def load_event(lobby: Lobby, event_id: int) -> EventRow:
    row = await stored.get(lobby.db, event_id)
    if row is None:
        raise fail("not_found", f"No event {event_id}.")
    return EventRow(row["id"], row["name"], row["ladder"], row["date"], row["status"],
                    row["version"])


async def open_event(lobby: Lobby, event_id: int) -> tuple[EventRow, LadderConfig]:
    """An event that still takes results, and its ladder; ``conflict`` once it is closed."""
    event = await load_event(lobby, event_id)
    if event.status != "open":
        raise fail("conflict", f"Event {event.id} is closed; it takes no more results.")
    return event, lobby.ladder(event.ladder)


async def still_open(tx: WriteTx, event_id: int) -> None:
    """The event takes results as this transaction sees it (a close may have committed since
    the command looked)."""
    if not await stored.is_open(tx, event_id):
        raise fail("conflict", f"Event {event_id} is closed; it takes no more results.")


def validate_game(ladder: LadderConfig, game: Game) -> None:
    """The ladder's rules for one recorded game; ``bad_request`` with the reason."""
    # the bounds of `event result`'s arguments, for results files too (SQLite holds 64 bits)
    if max(game.score_a, game.score_b) > MAX_SCORE:
        raise fail("bad_request", f"A score is at most {MAX_SCORE}.")
    if game.length is not None and game.length > MAX_LENGTH:
        raise fail("bad_request", f"A match length is at most {MAX_LENGTH}.")
    try:
        ladder.system.check_game(ladder.options, game)
    except ValueError as e:
        raise fail("bad_request", f"{e}.") from None
    if ladder.system.match_lengths and game.unrated_reason is None:
        winner, loser = max(game.score_a, game.score_b), min(game.score_a, game.score_b)
        check_score(game.length, winner, loser)


async def event_create(call: Call) -> Any:
    ladder = call.lobby.ladder(call.args["ladder"])
    day = call.args.get("date") or today().isoformat()
    name = call.args["name"]

    async def job(tx: WriteTx) -> dict[str, Any]:
        event_id = await stored.create(tx, name, ladder.name, day, now())
        data = event_data(EventRow(event_id, name, ladder.name, day, "open"))
        await call.remember(tx, data)
        return data

    return await call.write(job)


async def ensure_players(lobby: Lobby, tx: WriteTx, names: Sequence[str],
                         created: dict[str, Player]) -> dict[str, int]:
    """Ids for ``names``; unknown names become password-less ladder entries. Each name is
    read (and held) as this transaction sees it: a name known here may have been removed
    (``player remove``) by another server since."""
    ids: dict[str, int] = {}
    for n in names:
        p = created.get(n.casefold())
        if p is None:
            # Another job earlier in this transaction may have created it already.
            found = await players.find_in(tx, n, hold=True)
            if found is None:
                pid = await players.create(tx, n, None, "player", now())
                p = created[n.casefold()] = Player(pid, n)
            else:
                known = lobby.players.get(n.casefold())
                p = known if known is not None and known.id == found[0] else Player(*found)
                if p is not known:
                    created[n.casefold()] = p
        ids[p.name] = p.id
    return ids


async def new_on_ladder(lobby: Lobby, tx: WriteTx, ladder: str, games: Sequence[Game]
                        ) -> list[str]:
    """The names of ``games`` that have never played on ``ladder`` (a new entry, or a
    player of other ladders): in a director's typing, as often a misspelling as a newcomer,
    so the reply names them."""
    found: dict[str, tuple[int, str] | None] = {}
    for name in dict.fromkeys(p for g in games for p in g.players):
        p = lobby.players.get(name.casefold())
        found[name] = (p.id, p.name) if p is not None else await players.find_in(tx, name)
    played = await matches.played_on_ladder(
        tx, [f[0] for f in found.values() if f is not None], ladder)
    new = [name if f is None else f[1] for name, f in found.items()
           if f is None or f[0] not in played]
    return new


def new_player_refusal(new: Sequence[str], ladder: str) -> LobbyError:
    """``new_player``, naming ``new`` as a sentence: nothing is recorded until the director
    confirms them (the request says ``new``), so that a misspelling is not entered."""
    one = len(new) == 1
    who = new[0] if one else f"{', '.join(new[:-1])} and {new[-1]}"
    return fail("new_player", f"{who} {'has' if one else 'have'} never played on {ladder}: "
                              f"check the spelling, or confirm {new[0] if one else 'them'} "
                              f"as {'a new player' if one else 'new players'}.")


def canonical(lobby: Lobby, side: tuple[str, ...], created: dict[str, Player]) -> tuple[str, ...]:
    out = []
    for n in side:
        p = lobby.players.get(n.casefold()) or created.get(n.casefold())
        out.append(p.name if p else n)
    return tuple(out)


async def record(lobby: Lobby, tx: WriteTx, event: EventRow, ladder: LadderConfig, game: Game,
                 created: dict[str, Player], effects: Effects
                 ) -> tuple[int, dict[str, Any] | None, Game]:
    """Insert one event game; on a ladder that rates each result it is rated at once, like a
    live match (the plugins' reply fields come back; ``None``: not rated now)."""
    ids = await ensure_players(lobby, tx, game.players, created)
    game = Game(canonical(lobby, game.side_a, created), canonical(lobby, game.side_b, created),
                game.score_a, game.score_b, game.played_on, game.length, game.unrated_reason)
    when = now()
    winner = "a" if game.score_a > game.score_b else "b" if game.score_b > game.score_a else "draw"
    rated_now = ladder.system.rates_each_result and ladder.system.counts(ladder.options, game)
    seq = await tx.next_seq(ladder.name) if rated_now else None
    mid = await matches.record_result(tx, ladder.name, event.id, game.side_a, game.side_b,
                                      (game.score_a, game.score_b), game.length,
                                      game.played_on.isoformat(), winner, game.unrated_reason,
                                      seq, when, ids)
    if seq is None:
        return mid, None, game
    unit = RatedUnit(ladder.name, seq, when, (game,), ids, match_id=mid, event_id=event.id)
    return mid, await lobby.emit(tx, MatchFinished(unit), effects), game


def game_data(mid: int, game: Game, fields: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "match": mid, "side_a": "+".join(game.side_a), "side_b": "+".join(game.side_b),
        "score_a": game.score_a, "score_b": game.score_b, "rated": game.unrated_reason is None,
    }
    if game.unrated_reason is not None:
        data["unrated"] = game.unrated_reason
    if fields is not None:
        data.update(fields)
    return data


async def event_result(call: Call) -> Any:
    lobby, args = call.lobby, call.args
    event, ladder = await open_event(lobby, args["event"])
    raw = args.get("length", 1)
    game = Game(
        side_a=canonical(lobby, args["side_a"], {}), side_b=canonical(lobby, args["side_b"], {}),
        score_a=args["score_a"], score_b=args["score_b"],
        played_on=date.fromisoformat(event.date),
        length=None if raw == "unlimited" else int(raw), unrated_reason=args.get("unrated"),
    )
    validate_game(ladder, game)
    created: dict[str, Player] = {}

    async def job(tx: WriteTx) -> tuple[Effects, dict[str, Any]]:
        await still_open(tx, event.id)
        await stored.results_changed(tx, event.id)
        created.clear()
        effects = Effects()
        new = await new_on_ladder(lobby, tx, ladder.name, [game])
        if new and not args.get("new"):
            raise new_player_refusal(new, ladder.name)
        mid, fields, kept = await record(lobby, tx, event, ladder, game, created, effects)
        data = {"event": event.id, **game_data(mid, kept, fields), "new_players": new}
        await call.remember(tx, data)
        return effects, data

    effects, data = await call.write(job)
    for p in created.values():
        lobby.players[p.key] = p
    call.committed(effects)
    return data


async def event_import(call: Call) -> Any:
    lobby = call.lobby
    event, ladder = await open_event(lobby, call.args["event"])
    try:
        rows = parse_results(call.args["csv"], "CSV")
    except ResultsError as e:
        raise fail("bad_request", str(e)) from None
    if len(rows) > MAX_IMPORT_ROWS:
        raise fail("bad_request", f"CSV: at most {MAX_IMPORT_ROWS} rows in one import.")
    games: list[Game] = []
    name = unicodedata.normalize("NFC", event.name).casefold()  # as the rows' (server/api/text.py)
    for r in rows:
        if r.event.casefold() != name:
            raise fail("bad_request", f"CSV:{r.line}: the row is for event {r.event!r}, "
                                      f"not {event.name!r}.")
        g = r.game
        g = Game(canonical(lobby, g.side_a, {}), canonical(lobby, g.side_b, {}), g.score_a,
                 g.score_b, g.played_on, g.length, g.unrated_reason)
        try:
            validate_game(ladder, g)
        except Exception as e:
            raise fail("bad_request", f"CSV:{r.line}: {e}") from None
        games.append(g)
    created: dict[str, Player] = {}

    async def job(tx: WriteTx) -> tuple[Effects, dict[str, Any]]:
        await still_open(tx, event.id)
        await stored.results_changed(tx, event.id)
        created.clear()
        effects = Effects()
        new = await new_on_ladder(lobby, tx, ladder.name, games)
        if new and not call.args.get("new"):
            raise new_player_refusal(new, ladder.name)
        results = [await record(lobby, tx, event, ladder, g, created, effects) for g in games]
        data = {"event": event.id, "imported": len(results),
                "games": [game_data(mid, g, fields) for mid, fields, g in results],
                "new_players": new}
        await call.remember(tx, data)
        return effects, data

    effects, data = await call.write(job)
    for p in created.values():
        lobby.players[p.key] = p
    call.committed(effects, bulk=True)
    return data


async def event_close(call: Call) -> Any:
    lobby = call.lobby
    started = time.perf_counter()
    event, ladder = await open_event(lobby, call.args["event"])

    async def job(tx: WriteTx) -> tuple[Effects, dict[str, Any]]:
        effects = Effects()
        await still_open(tx, event.id)
        when = now()
        fields: dict[str, Any] = {}
        if ladder.system.rates_each_result:  # its results were rated as they came
            await stored.close(tx, event.id, when, None)
        else:
            seq = await tx.next_seq(ladder.name)
            await stored.close(tx, event.id, when, seq)
            unit = await stored.unit(tx, ladder.name, event.id, seq, when)
            fields = await lobby.emit(tx, EventClosed(unit), effects)
        data = {**event_data(EventRow(event.id, event.name, event.ladder, event.date, "closed")),
                "changes": [], **fields}
        await call.remember(tx, data)
        return effects, data

    effects, data = await call.write(job)
    call.committed(effects)
    lobby.metrics.event_closed(ladder.name, time.perf_counter() - started)
    return data


async def events(call: Call) -> Any:
    """Every event, or the open or closed ones, with their games counted once per change."""
    rows, _ = await call.lobby.listing.get(call.lobby.db)
    status = call.args.get("status")
    return {"events": [r for r in rows if status is None or r["status"] == status]}


async def event_show(call: Call) -> Any:
    """A page of the games (cut by SQL) and of the standings (worked out once per version of
    the event's results): however big the event, a request reads only a page of it."""
    lobby = call.lobby
    event = await load_event(lobby, call.args["event"])
    page = Page.of(call.args, None, EVENT_PAGE)
    table, computed = await lobby.standings.get(lobby.db, event.id, event.version)
    if computed:
        call.charge(table.games)  # every game of the event was read
    rows = await stored.games(lobby.db, event.id, page.size, page.start - 1)
    games = [{"match": r["id"], "side_a": r["side_a"], "side_b": r["side_b"],
              "score_a": r["score_a"], "score_b": r["score_b"], "length": r["length"],
              "date": r["played_on"], "status": r["status"],
              # a voided game counts for nobody: unrated, whatever it was before
              "rated": r["status"] == "finished" and r["unrated_reason"] is None,
              "unrated": r["unrated_reason"]}
             for r in rows]
    standings = table.page(page.start - 1, page.size)
    fields: dict[str, Any] = {}
    for plugin in lobby.plugins:  # an optional hook: a closed event's rating changes
        describe = getattr(plugin, "describe_event", None)
        if describe is not None and page.start == 1:
            fields.update(await describe(lobby.db.committed, event.id,
                                         event.status == "closed"))
    # one window over both lists: a client that follows `next` gets each of them whole
    return {**event_data(event), **fields, "games": games, "standings": standings,
            "from": page.start,
            "total": table.games, "total_standings": len(table.rows),
            "next": page.next(call.args, max(len(games), len(standings)),
                              max(table.games, len(table.rows)))}


HANDLERS = {"event create": event_create, "event result": event_result,
            "event import": event_import, "event close": event_close, "events": events,
            "event show": event_show}
