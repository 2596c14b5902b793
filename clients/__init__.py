"""Clients of the lobby: the Python library, the terminal client and the web page."""

from clients.lobby_client import LobbyClient, LobbyError

__all__ = ["LobbyClient", "LobbyError"]
