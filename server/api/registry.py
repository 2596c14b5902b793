"""Finding rating systems and plugins through their entry points (as pytest finds plugins)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from server.api.plugin import LobbyPlugin, PluginSetup
from server.api.rating import RatingSystem

RATING_SYSTEMS = "matchlobby.rating_systems"
PLUGINS = "matchlobby.plugins"

PluginFactory = Callable[[PluginSetup], LobbyPlugin]


class RegistryError(Exception):
    """An entry point that cannot be loaded, or two with the same name."""


def _load(group: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    origin: dict[str, EntryPoint] = {}
    for ep in entry_points(group=group):
        if ep.name in found:
            if origin[ep.name].value == ep.value:
                continue  # the same distribution seen twice on the path
            raise RegistryError(f"two {group} entry points are named {ep.name!r}: "
                                f"{origin[ep.name].value} and {ep.value}")
        try:
            found[ep.name] = ep.load()
        except Exception as e:
            raise RegistryError(f"{group} {ep.name!r} ({ep.value}) cannot be loaded: {e}") from e
        origin[ep.name] = ep
    return found


def rating_systems() -> dict[str, RatingSystem]:
    """Every installed rating system by its configuration name."""
    return dict(_rating_systems())


@cache
def _rating_systems() -> dict[str, RatingSystem]:
    systems = _load(RATING_SYSTEMS)
    for name, system in systems.items():
        if getattr(system, "name", None) != name:
            raise RegistryError(f"rating system entry point {name!r} is named "
                                f"{getattr(system, 'name', None)!r}")
    return systems


def plugin_factories() -> dict[str, PluginFactory]:
    """Every installed plugin's factory by its name, in name order (the order they run in)."""
    return dict(_plugin_factories())


@cache
def _plugin_factories() -> dict[str, PluginFactory]:
    """Found once a process, as the rating systems are: scanning every installed distribution's
    entry points costs a server start tens of milliseconds."""
    return dict(sorted(_load(PLUGINS).items()))
