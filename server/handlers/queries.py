"""Read-only commands: who and whois (the ratings in them come from the plugins)."""

from __future__ import annotations

import time
from typing import Any

from server.lobby import AWAY_AFTER, Call, Lobby
from server.store import players as stored


def status_of(lobby: Lobby, name: str) -> str:
    if name in lobby.match_of:
        return "playing"
    s = lobby.session_of(name)
    if s is not None and time.monotonic() - s.last_seen > AWAY_AFTER:
        return "away"
    return "ready"


async def who(call: Call) -> Any:
    lobby = call.lobby
    lobby.presence.listen(call.session)  # from now on, told who comes and goes
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


async def whois(call: Call) -> Any:
    lobby = call.lobby
    player = lobby.player(call.args["name"])
    online = player.key in lobby.online
    mid = lobby.match_of.get(player.name)
    played, disputed, record = await stored.record(lobby.db, player.id)
    return {
        "player": player.name,
        "online": online,
        "status": status_of(lobby, player.name) if online else "offline",
        "last_login": player.last_login,
        "role": player.role if player.password_hash else "entry",
        "match": lobby.match_summary(lobby.matches[mid]) if mid in lobby.matches else None,
        **lobby.describe_player(player.name, brief=False),
        "matches": {"played": played, "dropped": player.dropped, "disputed": disputed},
        "record": record,
    }


HANDLERS = {"who": who, "whois": whois}
