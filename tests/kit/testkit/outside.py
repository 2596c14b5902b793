"""The commands of installed plugins that are not the project's own (outside packages, such as
the test plugins in tests/plugins), and well-formed arguments for them.

Tests that go through every command of the table try these with arguments made from their
declaration, so that installing a plugin adds cases to them instead of failing them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from server.commands import CommandSpec
from server.config import Config
from server.plugins import load_plugins

PROJECT_PLUGINS = ("ratings_plugin.",)  # the modules of the plugins the project ships


def outside_commands() -> dict[str, CommandSpec]:
    """The installed plugins' commands but the project's own plugins', by name."""
    return {c.spec.name: c.spec for plugin in load_plugins(Config())
            if not type(plugin).__module__.startswith(PROJECT_PLUGINS) for c in plugin.commands()}


def well_formed(spec: CommandSpec, names: Iterable[str], match: int | None = None,
                csv: str = "") -> dict[str, Any]:
    """The command's required arguments: each ``name`` or ``side`` the next of ``names``, a
    ladder ``backgammon``, an ``id`` the match, a results file ``csv``, and a plain value of
    every other kind."""
    given: Iterator[str] = iter(names)
    values: dict[str, Callable[[], Any]] = {
        "name": lambda: next(given), "side": lambda: next(given), "ladder": lambda: "backgammon",
        "password": lambda: "correct horse battery", "id": lambda: match, "count": lambda: 1,
        "score": lambda: 1, "length": lambda: 1, "date": lambda: "2026-03-14",
        "status": lambda: "open", "csv": lambda: csv}
    return {a.name: values.get(a.kind, lambda: "Fine words")() for a in spec.args
            if not a.optional}
