"""Read-only commands: who and whois (the ratings in them come from the plugins)."""

from __future__ import annotations

import time
from typing import Any

from server.lobby import AWAY_AFTER, Lobby, Player, Session, handler


def status_of(lobby: Lobby, name: str) -> str:
    if name in lobby.match_of:
        return "playing"
    s = lobby.session_of(name)
    if s is not None and time.monotonic() - s.last_seen > AWAY_AFTER:
        return "away"
    return "ready"


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
            **lobby.describe_player(name, brief=True),
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
        **lobby.describe_player(player.name, brief=False),
        "matches": await match_counts(lobby, player),
    }
