"""Read-only commands: who, whois, rating, ladder, history, ladders."""

from __future__ import annotations

import time
from typing import Any

from server.lobby import AWAY_AFTER, Lobby, Player, Session, fail, handler
from server.paging import HISTORY_PAGE, LADDER_PAGE, Page
from server.storage import today


def status_of(lobby: Lobby, name: str) -> str:
    if name in lobby.match_of:
        return "playing"
    s = lobby.session_of(name)
    if s is not None and time.monotonic() - s.last_seen > AWAY_AFTER:
        return "away"
    return "ready"


def ratings_of(lobby: Lobby, name: str, only: str | None = None) -> list[dict[str, Any]]:
    out = []
    as_of = today()
    for ladder in lobby.ladders.values():
        if only is not None and ladder.name != only:
            continue
        row = lobby.ratings.row_of(ladder.name, name, as_of)
        if row is not None:
            out.append({"ladder": ladder.name, "system": ladder.system, **row})
    return out


@handler("who")
async def who(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    lobby.presence.add(session)  # from now on, told who comes and goes
    players = []
    for s in sorted(lobby.online.values(), key=lambda s: s.player.key if s.player else ""):
        if s.player is None:
            continue
        name = s.player.name
        players.append({
            "player": name,
            "status": status_of(lobby, name),
            "ratings": {r["ladder"]: r["rating"] for r in ratings_of(lobby, name)},
        })
    return {"players": players, "spectators": len(lobby.sessions) - len(players)}


async def match_counts(lobby: Lobby, player: Player) -> dict[str, int]:
    row = lobby.db.fetchone_now(
        """SELECT count(CASE WHEN m.status = 'finished' THEN 1 END) AS played,
                  count(CASE WHEN m.disputed = 1 THEN 1 END) AS disputed
           FROM match_players mp JOIN matches m ON m.id = mp.match_id WHERE mp.player_id = ?""",
        (player.id,),
    )
    played = row["played"] if row else 0
    disputed = row["disputed"] if row else 0
    return {"played": played, "dropped": player.dropped, "disputed": disputed}


@handler("whois")
async def whois(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    player = lobby.player(args["name"])
    online = player.key in lobby.online
    mid = lobby.match_of.get(player.name)
    return {
        "player": player.name,
        "online": online,
        "status": status_of(lobby, player.name) if online else "offline",
        "last_login": player.last_login,
        "role": player.role if player.password_hash else "entry",
        "match": lobby.matches[mid].summary() if mid in lobby.matches else None,
        "ratings": ratings_of(lobby, player.name),
        "matches": await match_counts(lobby, player),
    }


@handler("rating")
async def rating(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    name, ladder = args.get("name"), args.get("ladder")
    if name is not None and ladder is None and name.casefold() not in lobby.players \
            and name in lobby.ladders:
        name, ladder = None, name
    if name is None:
        if session.player is None:
            raise fail("bad_request", "Give a player's NAME, or log in to see your own ratings.")
        name = session.player.name
    player = lobby.player(name)
    if ladder is not None:
        lobby.ladder(ladder)
    return {"player": player.name, "ratings": ratings_of(lobby, player.name, ladder)}


@handler("ladder")
async def ladder_(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    ladder = lobby.ladder(args["ladder"])
    rows = lobby.ratings.rows(ladder.name, today())
    if not args.get("all"):
        rows = [r for r in rows if r["active"]]
    page = Page.of(args, 50, LADDER_PAGE)
    players = page.slice(rows)
    return {"ladder": ladder.name, "system": ladder.system, "total": len(rows),
            "players": players, "from": page.start,
            "next": page.next(args, len(players), len(rows))}


@handler("history")
async def history(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    player = lobby.player(args["name"])
    ladder = args.get("ladder")
    where = "WHERE player_id = ?"
    params: list[Any] = [player.id]
    if ladder is not None:
        lobby.ladder(ladder)
        where += " AND ladder = ?"
        params.append(ladder)
    page = Page.of(args, None, HISTORY_PAGE)
    counted = await lobby.db.fetchone(f"SELECT count(*) AS total FROM history {where}", params)
    total = counted["total"] if counted is not None else 0
    rows = await lobby.db.fetchall(f"SELECT * FROM history {where} ORDER BY id LIMIT ? OFFSET ?",
                                   [*params, page.size, page.start - 1])
    entries = []
    for r in rows:
        cause = {"match": r["match_id"]} if r["match_id"] is not None else {"event": r["event_id"]}
        if r["match_id"] is not None and r["event_id"] is not None:
            cause["event"] = r["event_id"]
        before, after = r["before"], r["after"]
        system = lobby.ladders[r["ladder"]].system if r["ladder"] in lobby.ladders else "fibs"
        if system != "fibs":
            before = None if before is None else int(before)
            after = int(after)
        entries.append({"ladder": r["ladder"], "at": r["at"], "before": before, "after": after,
                        "change": None if before is None else after - before, "cause": cause})
    return {"player": player.name, "ladder": ladder, "entries": entries, "from": page.start,
            "total": total, "next": page.next(args, len(entries), total)}


@handler("ladders")
async def ladders(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    return {"ladders": [
        {"ladder": x.name, "system": x.system, "format": x.format,
         "updated": "after each match" if x.live else "when an event closes",
         "players": len(lobby.ratings.published.get(x.name, {}))}
        for x in lobby.ladders.values()
    ]}
