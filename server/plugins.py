"""The installed plugins, made for a configuration (their factories are found by entry point)."""

from __future__ import annotations

import logging

from server.api import LobbyPlugin, PluginSetup
from server.api.registry import plugin_factories
from server.config import Config, ConfigError

log = logging.getLogger(__name__)


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
