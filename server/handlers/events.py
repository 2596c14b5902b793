"""Events (create, result, import, close, show) and corrections (void, adjudicate)."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import aiosqlite

from server.api import EventClosed, Game, LadderConfig, LadderCorrected, MatchFinished, RatedUnit
from server.api.paging import EVENT_PAGE, Page
from server.api.results_file import ResultsError, parse_results
from server.handlers.accounts import create_player
from server.handlers.matches import check_score, finish
from server.lobby import Effects, Lobby, Player, Session, fail, handler
from server.protocol import MAX_LENGTH, MAX_SCORE, push
from server.store import now, today
from server.store.legacy import event_unit, new_match_id, next_seq

MAX_IMPORT_ROWS = 5000


@dataclass
class EventRow:
    id: int
    name: str
    ladder: str
    date: str
    status: str


async def load_event(lobby: Lobby, event_id: int) -> EventRow:
    row = await lobby.db.fetchone("SELECT * FROM events WHERE id = ?", (event_id,))
    if row is None:
        raise fail("not_found", f"No event {event_id}.")
    return EventRow(row["id"], row["name"], row["ladder"], row["date"], row["status"])


async def open_event(lobby: Lobby, event_id: int) -> tuple[EventRow, LadderConfig]:
    """An event that still takes results, and its ladder; ``conflict`` once it is closed."""
    event = await load_event(lobby, event_id)
    if event.status != "open":
        raise fail("conflict", f"Event {event.id} is closed; it takes no more results.")
    return event, lobby.ladder(event.ladder)


def event_data(e: EventRow) -> dict[str, Any]:
    return {"id": e.id, "name": e.name, "ladder": e.ladder, "date": e.date, "status": e.status}


def validate_game(lobby: Lobby, ladder: LadderConfig, game: Game) -> None:
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


@handler("event create")
async def event_create(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    ladder = lobby.ladder(args["ladder"])
    when = args.get("date") or today().isoformat()
    name = args["name"]
    remember = lobby.remembering()

    async def job(conn: aiosqlite.Connection) -> dict[str, Any]:
        async with conn.execute(
            "INSERT INTO events (name, ladder, date, status, created_at) VALUES (?, ?, ?, 'open', ?)",
            (name, ladder.name, when, now()),
        ) as cur:
            assert cur.lastrowid is not None
            data = event_data(EventRow(cur.lastrowid, name, ladder.name, when, "open"))
        await remember(conn, data)
        return data

    return await lobby.db.write(job)


async def ensure_players(lobby: Lobby, conn: aiosqlite.Connection, names: Sequence[str],
                         created: dict[str, Player]) -> dict[str, int]:
    """Ids for ``names``; unknown names become password-less ladder entries."""
    ids: dict[str, int] = {}
    for n in names:
        p = lobby.players.get(n.casefold()) or created.get(n.casefold())
        if p is None:
            # Another job earlier in this transaction may have created it already.
            async with conn.execute("SELECT id, name FROM players WHERE name_key = ?",
                                    (n.casefold(),)) as cur:
                row = await cur.fetchone()
            if row is not None:
                p = created[n.casefold()] = Player(row[0], row[1])
            else:
                pid = await create_player(conn, n, None)
                p = created[n.casefold()] = Player(pid, n)
        ids[p.name] = p.id
    return ids


def canonical(lobby: Lobby, side: tuple[str, ...], created: dict[str, Player]) -> tuple[str, ...]:
    out = []
    for n in side:
        p = lobby.players.get(n.casefold()) or created.get(n.casefold())
        out.append(p.name if p else n)
    return tuple(out)


async def record(lobby: Lobby, conn: aiosqlite.Connection, event: EventRow,
                 ladder: LadderConfig, game: Game, created: dict[str, Player], effects: Effects
                 ) -> tuple[int, dict[str, Any] | None, Game]:
    """Insert one event game; on a ladder that rates each result it is rated at once, like a
    live match (the plugins' reply fields come back; ``None``: not rated now)."""
    ids = await ensure_players(lobby, conn, game.players, created)
    game = Game(canonical(lobby, game.side_a, created), canonical(lobby, game.side_b, created),
                game.score_a, game.score_b, game.played_on, game.length, game.unrated_reason)
    when = now()
    winner = "a" if game.score_a > game.score_b else "b" if game.score_b > game.score_a else "draw"
    rated_now = ladder.system.rates_each_result and ladder.system.counts(ladder.options, game)
    seq = next_seq(conn) if rated_now else None
    mid = new_match_id(conn)
    await conn.execute(
        """INSERT INTO matches (id, ladder, event_id, side_a, side_b, length, played_on, status,
           winner, score_a, score_b, how, unrated_reason, seq, created_at, finished_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, 'finished', ?, ?, ?, 'event', ?, ?, ?, ?)""",
        (mid, ladder.name, event.id, "+".join(game.side_a), "+".join(game.side_b), game.length,
         game.played_on.isoformat(), winner, game.score_a, game.score_b, game.unrated_reason,
         seq, when, when),
    )
    await conn.executemany(
        "INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)",
        [(mid, ids[p], "a") for p in game.side_a] + [(mid, ids[p], "b") for p in game.side_b],
    )
    if seq is None:
        return mid, None, game
    unit = RatedUnit(ladder.name, seq, when, (game,), ids, match_id=mid, event_id=event.id)
    return mid, await lobby.emit(conn, MatchFinished(unit), effects), game


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


@handler("event result")
async def event_result(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    event, ladder = await open_event(lobby, args["event"])
    raw = args.get("length", 1)
    game = Game(
        side_a=canonical(lobby, args["side_a"], {}), side_b=canonical(lobby, args["side_b"], {}),
        score_a=args["score_a"], score_b=args["score_b"],
        played_on=date.fromisoformat(event.date),
        length=None if raw == "unlimited" else int(raw), unrated_reason=args.get("unrated"),
    )
    validate_game(lobby, ladder, game)
    created: dict[str, Player] = {}
    remember = lobby.remembering()

    async def job(conn: aiosqlite.Connection) -> tuple[Effects, dict[str, Any]]:
        await _still_open(conn, event.id)
        created.clear()
        effects = Effects()
        mid, fields, stored = await record(lobby, conn, event, ladder, game, created, effects)
        data = {"event": event.id, **game_data(mid, stored, fields)}
        await remember(conn, data)
        return effects, data

    effects, data = await lobby.db.write(job)
    for p in created.values():
        lobby.players[p.key] = p
    lobby.committed(effects)
    return data


async def _still_open(conn: aiosqlite.Connection, event_id: int) -> None:
    async with conn.execute("SELECT status FROM events WHERE id = ?", (event_id,)) as cur:
        row = await cur.fetchone()
    if row is None or row[0] != "open":
        raise fail("conflict", f"Event {event_id} is closed; it takes no more results.")


@handler("event import")
async def event_import(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    event, ladder = await open_event(lobby, args["event"])
    try:
        rows = parse_results(args["csv"], "CSV")
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
            validate_game(lobby, ladder, g)
        except Exception as e:
            raise fail("bad_request", f"CSV:{r.line}: {e}") from None
        games.append(g)
    created: dict[str, Player] = {}
    remember = lobby.remembering()

    async def job(conn: aiosqlite.Connection) -> tuple[Effects, dict[str, Any]]:
        await _still_open(conn, event.id)
        created.clear()
        effects = Effects()
        results = [await record(lobby, conn, event, ladder, g, created, effects) for g in games]
        data = {"event": event.id, "imported": len(results),
                "games": [game_data(mid, g, fields) for mid, fields, g in results]}
        await remember(conn, data)
        return effects, data

    effects, data = await lobby.db.write(job)
    for p in created.values():
        lobby.players[p.key] = p
    lobby.committed(effects, bulk=True)
    return data


@handler("event close")
async def event_close(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    event, ladder = await open_event(lobby, args["event"])
    remember = lobby.remembering()

    async def job(conn: aiosqlite.Connection) -> tuple[Effects, dict[str, Any]]:
        effects = Effects()
        fields = await close(conn, effects)
        data = {**event_data(EventRow(event.id, event.name, event.ladder, event.date, "closed")),
                "changes": [], **fields}
        await remember(conn, data)
        return effects, data

    async def close(conn: aiosqlite.Connection, effects: Effects) -> dict[str, Any]:
        await _still_open(conn, event.id)
        when = now()
        if ladder.system.rates_each_result:
            await conn.execute("UPDATE events SET status = 'closed', closed_at = ? WHERE id = ?",
                               (when, event.id))
            return {}
        seq = next_seq(conn)
        await conn.execute(
            "UPDATE events SET status = 'closed', closed_at = ?, seq = ? WHERE id = ?",
            (when, seq, event.id))
        unit = await event_unit(conn, ladder.name, event.id, seq, when)
        return await lobby.emit(conn, EventClosed(unit), effects)

    effects, data = await lobby.db.write(job)
    lobby.committed(effects)
    return data


@handler("events")
async def events(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    sql = """SELECT e.*, (SELECT count(*) FROM matches m WHERE m.event_id = e.id
             AND m.status = 'finished') AS games FROM events e"""
    params: list[Any] = []
    if args.get("status"):
        sql += " WHERE e.status = ?"
        params.append(args["status"])
    rows = await lobby.db.fetchall(sql + " ORDER BY e.id", params)
    return {"events": [{**event_data(EventRow(r["id"], r["name"], r["ladder"], r["date"],
                                               r["status"])), "games": r["games"]} for r in rows]}


# `event show`, a page at a time: ?1 the event, ?2 the page's size, ?3 the rows before it.
# The standings count the event's finished, rated games: a win 1 point, a draw ½, for each
# player of a side; best first, ties by name ignoring case.
STANDINGS = """SELECT p.name AS player, count(*) AS played,
    count(CASE WHEN m.winner = mp.side THEN 1 END) AS won,
    count(CASE WHEN m.winner = 'draw' THEN 1 END) AS drawn,
    count(CASE WHEN m.winner IS NOT mp.side AND m.winner IS NOT 'draw' THEN 1 END) AS lost,
    total(CASE WHEN m.winner = mp.side THEN 1.0 WHEN m.winner = 'draw' THEN 0.5 END) AS points
    FROM matches m JOIN match_players mp ON mp.match_id = m.id
    JOIN players p ON p.id = mp.player_id
    WHERE m.event_id = ?1 AND m.status = 'finished' AND m.unrated_reason IS NULL
    GROUP BY mp.player_id ORDER BY points DESC, p.name_key LIMIT ?2 OFFSET ?3"""
SIZES = """SELECT (SELECT count(*) FROM matches WHERE event_id = ?1) AS games,
    (SELECT count(DISTINCT mp.player_id) FROM matches m JOIN match_players mp
     ON mp.match_id = m.id WHERE m.event_id = ?1 AND m.status = 'finished'
     AND m.unrated_reason IS NULL) AS players"""
GAMES = """SELECT id, side_a, side_b, score_a, score_b, length, played_on, status, unrated_reason
    FROM matches WHERE event_id = ?1 ORDER BY id LIMIT ?2 OFFSET ?3"""


@handler("event show")
async def event_show(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    """A page of the games and of the standings, each cut by SQL: however big the event, only
    a page of it is ever held."""
    event = await load_event(lobby, args["event"])
    page = Page.of(args, None, EVENT_PAGE)
    window = (event.id, page.size, page.start - 1)
    sizes = await lobby.db.fetchone(SIZES, (event.id,))
    assert sizes is not None
    games = [{"match": r["id"], "side_a": r["side_a"], "side_b": r["side_b"],
              "score_a": r["score_a"], "score_b": r["score_b"], "length": r["length"],
              "date": r["played_on"], "status": r["status"],
              "rated": r["unrated_reason"] is None, "unrated": r["unrated_reason"]}
             for r in await lobby.db.fetchall(GAMES, window)]
    standings = [dict(r) for r in await lobby.db.fetchall(STANDINGS, window)]
    # one window over both lists: a client that follows `next` gets each of them whole
    return {**event_data(event), "games": games, "standings": standings, "from": page.start,
            "total": sizes["games"], "total_standings": sizes["players"],
            "next": page.next(args, max(len(games), len(standings)),
                              max(sizes["games"], sizes["players"]))}


# ---- corrections ---------------------------------------------------------------------------


async def correct(lobby: Lobby, match_id: int, kind: str, new_status: str,
                  new_winner: str | None, reason: str | None, admin: Player,
                  seen: tuple[str, str | None] | None = None) -> dict[str, Any]:
    """Append a correction to the log and recompute the ladder from it when it was rated.

    ``seen`` is the (status, winner) the caller checked the correction against:
    if the match changed since, the correction is refused rather than applied to
    a state nobody checked (say, an adjudication to a match voided meanwhile).
    """
    row = await lobby.db.fetchone(
        "SELECT m.*, e.status AS event_status, e.seq AS event_seq FROM matches m "
        "LEFT JOIN events e "
        "ON e.id = m.event_id WHERE m.id = ?", (match_id,))
    if row is None:
        raise fail("not_found", f"No match {match_id}.")
    if seen is not None and (row["status"], row["winner"]) != seen:
        raise fail("conflict", f"Match {match_id} changed meanwhile; try again.")
    ladder = lobby.ladder(row["ladder"])
    rated = row["seq"] is not None or row["event_status"] == "closed"
    names = row["side_a"].split("+") + row["side_b"].split("+")
    swap = new_winner is not None and row["winner"] not in (None, new_winner) \
        and row["score_a"] is not None
    remember = lobby.remembering()
    data: dict[str, Any] = {"match": match_id, "ladder": ladder.name, "status": new_status,
                            "winner": _winner_name(row, new_winner), "reason": reason,
                            "recomputed": rated}

    async def job(conn: aiosqlite.Connection) -> tuple[Effects, dict[str, Any]]:
        effects = Effects()
        fields = await apply(conn, effects)
        full = dict(data)
        full.update(fields)
        await remember(conn, full)
        return effects, full

    async def apply(conn: aiosqlite.Connection, effects: Effects) -> dict[str, Any]:
        async with conn.execute("SELECT status, winner FROM matches WHERE id = ?",
                                (match_id,)) as cur:
            current = await cur.fetchone()
        if current is None or (current[0], current[1]) != (row["status"], row["winner"]):
            raise fail("conflict", f"Match {match_id} changed meanwhile; try again.")
        await conn.execute(
            """INSERT INTO corrections (match_id, kind, old_status, old_winner, new_status,
               new_winner, reason, by_player, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (match_id, kind, row["status"], row["winner"], new_status, new_winner, reason,
             admin.id, now()))
        if swap:
            await conn.execute(
                "UPDATE matches SET score_a = score_b, score_b = score_a WHERE id = ?",
                (match_id,))
        await conn.execute("UPDATE matches SET status = ?, winner = ? WHERE id = ?",
                           (new_status, new_winner, match_id))
        if not rated:
            return {}
        # The corrected unit's place in the log: the match's own, or its closed event's.
        seq = row["seq"] if row["seq"] is not None else row["event_seq"]
        return await lobby.emit(conn, LadderCorrected(ladder.name, cause={"match": match_id},
                                                      seq=seq), effects)

    effects, full = await lobby.db.write(job)
    lobby.defer(lobby.sessions_of(names), push("match_corrected", data))
    lobby.committed(effects)
    return full


def _winner_name(row: Any, side: str | None) -> str | None:
    if side in ("a", "b"):
        return str(row[f"side_{side}"])
    return None


@handler("void")
async def void(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    mid = args["match"]
    live = lobby.matches.get(mid)
    admin = lobby.me(session)
    if live is not None:
        if live.busy:
            raise fail("conflict", f"Match {mid} is being decided right now.")
        live.busy = True
        try:
            data = await correct(lobby, mid, "void", "voided", None, args["reason"], admin)
        finally:
            live.busy = False
        lobby.end_live(live)
        return data
    row = await lobby.db.fetchone("SELECT status, winner FROM matches WHERE id = ?", (mid,))
    if row is None:
        raise fail("not_found", f"No match {mid}.")
    if row["status"] in ("voided", "aborted"):
        raise fail("conflict", f"Match {mid} is already {row['status']}.")
    return await correct(lobby, mid, "void", "voided", None, args["reason"], admin,
                         seen=(row["status"], row["winner"]))


@handler("adjudicate")
async def adjudicate(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    mid = args["match"]
    admin = lobby.me(session)
    live = lobby.matches.get(mid)
    winner = args["winner"]
    if live is not None:
        name = next((n for n in (live.a, live.b) if n.casefold() == winner.casefold()), None)
        if name is None:
            raise fail("bad_request", f"{winner} does not play in match {mid}.")
        scores = live.claim_scores if live.claimed_by == name else None
        return await finish(lobby, session, live, name, "adjudicate", scores)
    row = await lobby.db.fetchone("SELECT * FROM matches WHERE id = ?", (mid,))
    if row is None:
        raise fail("not_found", f"No match {mid}.")
    if row["status"] != "finished":
        raise fail("conflict", f"Match {mid} is {row['status']}; only finished or live matches "
                               "can be adjudicated.")
    side = next((s for s in ("a", "b") if winner.casefold() in
                 [n.casefold() for n in row[f"side_{s}"].split("+")]), None)
    if side is None:
        raise fail("bad_request", f"{winner} does not play in match {mid}.")
    if row["winner"] == side:
        raise fail("conflict", f"Match {mid} is already won by {row[f'side_{side}']}.")
    if row["winner"] == "draw":
        raise fail("bad_request", f"Match {mid} was a draw with scores; void it and record the "
                                  "right result instead.")
    return await correct(lobby, mid, "adjudicate", "finished", side, None, admin,
                         seen=(row["status"], row["winner"]))


__all__ = ["MatchFinished", "validate_game"]
