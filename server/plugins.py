"""The installed plugins, made for a configuration (their factories are found by entry point)."""

from __future__ import annotations

import sqlite3

from server.api import LobbyPlugin, PluginSetup, Store
from server.api.registry import plugin_factories
from server.commands import COMMANDS, CommandTable
from server.config import Config, ConfigError
from server.store.backends import open_store
from server.store.schema import migrate, migrate_plugin


def load_plugins(config: Config) -> list[LobbyPlugin]:
    """Every installed plugin, in name order, each given its ``[plugins.NAME]`` table."""
    factories = plugin_factories()
    unknown = sorted(set(config.plugins) - set(factories))
    if unknown:
        raise ConfigError(f"[plugins] names plugin(s) that are not installed: {unknown}; "
                          f"installed: {sorted(factories)}")
    plugins = []
    for name, factory in factories.items():
        plugin = factory(PluginSetup(config.ladders, config.plugins.get(name, {})))
        if plugin.name != name:
            raise ConfigError(f"plugin entry point {name!r} made a plugin named {plugin.name!r}")
        plugins.append(plugin)
    return plugins


async def open_database(config: Config) -> Store:
    """The configured database as a sub-command's store, the lobby's tables and every installed
    plugin's brought up to date (the server does the same as it opens the database)."""
    return await open_store(config.database, [plugin.schema for plugin in load_plugins(config)])


async def migrate_all(conn: sqlite3.Connection, config: Config) -> None:
    """The lobby's tables and every installed plugin's, brought up to date (``matchlobby`` sub-
    commands; the server does the same as it opens the database)."""
    await migrate(conn)
    for plugin in load_plugins(config):
        await migrate_plugin(conn, plugin.schema)


def command_table(config: Config | None = None) -> CommandTable:
    """Every command a lobby with this configuration answers: its own, then its plugins'."""
    plugins = load_plugins(config or Config())
    return CommandTable([*COMMANDS.values(),
                         *(c.spec for plugin in plugins for c in plugin.commands())])
