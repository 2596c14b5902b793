"""Read-only commands: who and whois (the ratings in them come from the plugins)."""

from __future__ import annotations

import time
from typing import Any

from server.lobby import AWAY_AFTER, Call, Lobby
from server.lobby.presence import NOT_READY
from server.store import players as stored


def status_of(lobby: Lobby, name: str) -> str:
    if name in lobby.match_of:
        return "playing"
    s = lobby.session_of(name)
    if s is not None and not s.ready:
        return NOT_READY
    if s is not None and time.monotonic() - s.last_seen > AWAY_AFTER:
        return "away"
    return "ready"


def waiting_disputes(lobby: Lobby, name: str) -> list[dict[str, Any]]:
    """``name``'s disputed matches, which wait for an admin while their players play on."""
    return [{**m.summary(), "since": m.disputed_at} for m in lobby.disputed_of(name)]


async def who(call: Call) -> Any:
    lobby = call.lobby
    lobby.presence.listen(call.session)  # from now on, told who comes and goes
    here = {s.player.key: (s.player.name, status_of(lobby, s.player.name))
            for s in lobby.online.values() if s.player is not None}
    # and those online on the database's other nodes (several nodes on PostgreSQL)
    everyone = {key: (e.name, e.status) for key, e in lobby.elsewhere.items()} | here
    players = [{"player": name, "status": status, **lobby.describe_player(name, brief=True)}
               for _, (name, status) in sorted(everyone.items())]
    return {"players": players, "spectators": len(lobby.sessions) - len(here)}


async def whois(call: Call) -> Any:
    lobby = call.lobby
    player = lobby.player(call.args["name"])
    there = lobby.elsewhere.get(player.key)  # online on another node
    online = player.key in lobby.online or there is not None
    status = status_of(lobby, player.name) if player.key in lobby.online else \
        there.status if there is not None else "offline"
    mid = lobby.match_of.get(player.name)
    played, disputed, record = await stored.record(lobby.db, player.id)
    if lobby.sharing is not None and lobby.sharing.alive:  # another node may have moved them
        row = await stored.counted(lobby.db, player.id)
        if row is not None:
            player.dropped, player.last_login = int(row["dropped"]), row["last_login"]
    return {
        "player": player.name,
        "online": online,
        "status": status,
        "last_login": player.last_login,
        "role": player.role if player.password_hash else "entry",
        "match": lobby.match_summary(lobby.matches[mid]) if mid in lobby.matches else None,
        "disputes": waiting_disputes(lobby, player.name),
        **lobby.describe_player(player.name, brief=False),
        "matches": {"played": played, "dropped": player.dropped, "disputed": disputed},
        "record": record,
    }


HANDLERS = {"who": who, "whois": whois}
