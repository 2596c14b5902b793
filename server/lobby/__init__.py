"""The lobby: its state, the router that answers commands, and the pushes they cause."""

from server.lobby.call import Call, LobbyError, fail
from server.lobby.lobby import Effects, Lobby
from server.lobby.publish import fan_out
from server.lobby.router import Router
from server.lobby.state import AWAY_AFTER, Invitation, LiveMatch, Player, Session

__all__ = ["AWAY_AFTER", "Call", "Effects", "Invitation", "LiveMatch", "Lobby", "LobbyError",
           "Player", "Router", "Session", "fail", "fan_out"]
