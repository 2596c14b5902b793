"""A base class for lobby plugins: every member of :class:`~server.api.plugin.LobbyPlugin` but
``name`` with a default that does nothing, so a plugin defines only what it means.

The lobby does not require it: any object with the protocol's members is a
plugin. Subclassing only saves writing the no-ops (and keeps a plugin working
when a later version of the protocol adds a member with a default here).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from server.api.commands import CliCommand, PluginCommand
from server.api.events import DomainEvent
from server.api.publish import Publisher
from server.api.storage import Reader, Schema, Tx


class PluginBase:
    """Defaults: no tables, no commands, no ``matchlobby`` sub-commands, hooks that do nothing,
    nothing added to replies, profiles or matches. A subclass sets ``name`` (its entry point's
    name) and overrides what it uses; ``schema`` may be assigned in ``__init__``."""

    name: str

    @cached_property
    def schema(self) -> Schema:
        """No tables: a schema of no versions (nothing is created or recorded)."""
        return Schema(self.name)

    def commands(self) -> Sequence[PluginCommand]:
        return ()

    def cli_commands(self) -> Sequence[CliCommand]:
        return ()

    async def load(self, reader: Reader, committed: bool) -> None:
        """Nothing kept in memory, nothing to load."""

    async def on_event(self, tx: Tx, event: DomainEvent) -> Any:
        """Nothing written with the event; the outcome is ``None``."""
        return None

    def reply_fields(self, event: DomainEvent, outcome: Any) -> dict[str, Any]:
        return {}

    def on_commit(self, done: Sequence[tuple[DomainEvent, Any]], publish: Publisher,
                  bulk: bool = False) -> None:
        """Nothing to publish."""

    def describe_player(self, name: str, brief: bool) -> dict[str, Any]:
        return {}

    def describe_match(self, ladder: str, a: str, b: str, length: int | None) -> dict[str, Any]:
        return {}
