"""Lobby plugins: code that reacts to what happens in the lobby and adds commands to it.

A plugin is found through the ``matchlobby.plugins`` entry points: each names
a factory called with a :class:`PluginSetup` that returns a
:class:`LobbyPlugin`. The lobby then

- creates and migrates the plugin's tables (:attr:`LobbyPlugin.schema`);
- calls :meth:`~LobbyPlugin.load` at start (and again after a failed
  transaction, to follow what the database holds);
- calls :meth:`~LobbyPlugin.on_event` for every domain event, inside the
  transaction that records it, so that what the plugin writes commits with
  the result or not at all; the outcome it returns is the plugin's own;
- once that transaction has committed, merges
  :meth:`~LobbyPlugin.reply_fields` into the command's reply and calls
  :meth:`~LobbyPlugin.on_commit` once with the command's events, where the
  plugin may push;
- routes the plugin's commands (:meth:`~LobbyPlugin.commands`) like its own;
- asks :meth:`~LobbyPlugin.describe_player` and :meth:`~LobbyPlugin.describe_match` for the
  fields it adds to a player's profile and to a live match, proposed or played;
- pairs automatch's seekers by the optional :class:`Matchmaking` hooks of the plugin that
  has them (the ratings plugin).

The dependency runs one way: a plugin imports ``server.api`` and nothing else
of the server; the server never imports a plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from server.api.commands import CliCommand, PluginCommand
from server.api.events import DomainEvent
from server.api.publish import Publisher
from server.api.rating import LadderConfig
from server.api.storage import Reader, Schema, Tx


@dataclass(frozen=True)
class PluginSetup:
    """What a plugin factory is given: the configured ladders and its own configuration table
    (``[plugins.NAME]``, empty when absent)."""

    ladders: Sequence[LadderConfig]
    settings: Mapping[str, Any] = field(default_factory=dict)


class LobbyPlugin(Protocol):
    @property
    def name(self) -> str:
        """Its name: the configuration table ``[plugins.NAME]`` and its schema's record."""

    @property
    def schema(self) -> Schema: ...

    def commands(self) -> Sequence[PluginCommand]:
        """Commands it adds to the lobby (their names must be new)."""

    def cli_commands(self) -> Sequence[CliCommand]:
        """``matchlobby`` sub-commands it adds."""

    async def load(self, reader: Reader, committed: bool) -> None:
        """(Re)build its state in memory from what ``reader`` sees. ``committed`` is false when
        ``reader`` is an open transaction whose writes are not durable yet (after a job of it
        failed): then nothing may be published from it."""

    async def on_event(self, tx: Tx, event: DomainEvent) -> Any:
        """React inside the event's transaction; the returned outcome (``None`` for nothing)
        comes back to :meth:`reply_fields` and :meth:`on_commit` once it has committed."""

    def reply_fields(self, event: DomainEvent, outcome: Any) -> dict[str, Any]:
        """Fields it adds to the reply of the command that caused the event."""

    def on_commit(self, done: Sequence[tuple[DomainEvent, Any]], publish: Publisher,
                  bulk: bool = False) -> None:
        """The transaction holding these events and their outcomes (one command's) committed:
        make them visible, push what changed. ``bulk``: many results recorded by one command
        (an import), whose net effect is what people need to hear."""

    def describe_player(self, name: str, brief: bool) -> dict[str, Any]:
        """Fields it adds to a player's ``whois`` (``brief``: to their line in ``who``)."""

    def describe_match(self, ladder: str, a: str, b: str, length: int | None) -> dict[str, Any]:
        """Fields it adds to a live match of A against B on ``ladder`` (``length`` points,
        ``None``: unlimited), played or proposed: to the invitation, the match summary and the
        ``stake`` query. ``stake`` is what the match puts at stake (the ratings plugin's)."""


class Matchmaking(Protocol):
    """Optional hooks of a plugin that knows ladders' ratings: what automatch pairs seekers by
    (a plugin without them is not asked)."""

    def seek_rating(self, ladder: str, player: str) -> tuple[float, float] | None:
        """The player's rating on a ladder rated live, and its deviation where the system
        keeps one (Glicko-2's RD; else 0); ``None``: not a ladder it rates live."""

    def win_chance(self, ladder: str, a: str, b: str, length: int | None) -> float | None:
        """The chance that A beats B in a match of ``length`` points (``None``: unlimited) by
        the ladder's own expectation."""


class Following(Protocol):
    """An optional hook for a plugin whose memory can follow another server's results
    (several servers on one database) without being rebuilt: a plugin without it is
    reloaded whole (:meth:`LobbyPlugin.load`) each time another server changes a ladder."""

    async def follow(self, reader: Reader, ladder: str) -> bool:
        """Another writer (another server, the command line) committed results on ``ladder``
        since this plugin last saw it: read what changed through ``reader`` and take it in.
        ``False``: it cannot (a rebuilt ladder, too much changed), and it is reloaded whole
        instead; only that plugin, and the others keep what they followed."""
