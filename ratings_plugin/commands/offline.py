"""What ``rate`` and ``evaluate`` share offline: ``--option K=V``, a configured ladder's
options, and a results file made into a ladder and its units.

``--option`` values are read as in TOML, without the quotes: ``true``/``false``, whole numbers,
decimals, a comma-separated list (``40,30,20``; ``[40]`` for a list of one), anything else
text. Each option is applied through the system's own ``parse_options`` on top of the ladder's
options, so a ladder with K=16 is reproduced offline exactly.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.api import LadderConfig, RatedUnit, RatingSystem
from server.api.results_file import ResultRow, ResultsError, group_events

RESERVED = frozenset({"name", "system"})


class OptionError(ValueError):
    """A bad ``--option`` (or ``--config``/``--ladder``): the message says which and why."""


@dataclass(frozen=True)
class Option:
    text: str
    key: str
    value: Any


def _scalar(text: str) -> Any:
    t = text.strip()
    if t in ("true", "false"):
        return t == "true"
    for kind in (int, float):
        try:
            return kind(t)
        except ValueError:
            pass
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    return t


def parse_value(text: str) -> Any:
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        inner = t[1:-1].strip()
        return [_scalar(v) for v in inner.split(",")] if inner else []
    if "," in t:
        return [_scalar(v) for v in t.split(",")]
    return _scalar(t)


def parse_option(text: str) -> Option:
    key, sep, value = text.partition("=")
    if not sep or not key.strip() or not value.strip():
        raise OptionError(f"--option {text}: write it as KEY=VALUE")
    return Option(text, key.strip(), parse_value(value))


def variant(given: Sequence[Option]) -> dict[str, Any]:
    """The options as a report's ``variant`` shows them."""
    return {o.key: o.value for o in given}


def options_of(system: RatingSystem, table: Mapping[str, Any], given: Sequence[Option]) -> Any:
    """``system``'s options from ``table`` with ``given`` applied one by one; raises
    :class:`OptionError` naming the option refused."""
    merged = dict(table)
    for o in given:
        if o.key in RESERVED or o.key not in system.option_keys():
            known = ", ".join(sorted(system.option_keys()))
            raise OptionError(f"--option {o.text}: {system.name} has no option {o.key!r} "
                              f"(its options: {known})")
        merged[o.key] = o.value
        try:
            system.parse_options(merged)
        except (TypeError, ValueError) as e:
            raise OptionError(f"--option {o.text}: {e}") from None
    return system.parse_options(merged)


def configured_table(config: str | None, ladder: LadderConfig) -> dict[str, Any]:
    """A configured ladder's options as its ``[[ladders]]`` table gives them (the keys besides
    ``name`` and ``system``); a default ladder's are only its format."""
    entries: list[Any] = []
    if config is not None:
        try:
            with open(config, "rb") as f:
                entries = tomllib.load(f).get("ladders", [])
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise OptionError(f"--config {config}: {e}") from None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == ladder.name:
            return {k: v for k, v in entry.items() if k not in RESERVED}
    return {"format": "doubles"} if ladder.format == "doubles" else {}


def read_config_ladder(config: str | None, name: str, defaults: Sequence[LadderConfig]
                       ) -> tuple[RatingSystem, dict[str, Any]]:
    """The system and options table of the ladder ``name`` in the configuration file ``config``
    (a command that opens no database reads only this of the file); with no file, or a file
    with no ``[[ladders]]``, the lobby's default ladders (``defaults``)."""
    from server.api.registry import rating_systems

    data: dict[str, Any] = {}
    if config is not None:
        try:
            with open(config, "rb") as f:
                data = tomllib.load(f)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise OptionError(f"--config {config}: {getattr(e, 'strerror', None) or e}"
                              ) from None
    if "ladders" not in data:
        for ladder in defaults:
            if ladder.name == name:
                return ladder.system, configured_table(None, ladder)
        names = ", ".join(x.name for x in defaults)
        raise OptionError(f"--ladder {name}: no such ladder (the default ladders: {names})")
    entries = [e for e in data["ladders"] if isinstance(e, dict)]
    for entry in entries:
        if entry.get("name") == name:
            system = rating_systems().get(entry.get("system"))  # type: ignore[arg-type]
            if system is None:
                raise OptionError(f"--config {config}: ladder {name!r} has an unknown system "
                                  f"{entry.get('system')!r}")
            unknown = set(entry) - RESERVED - system.option_keys()
            if unknown:  # as the lobby refuses it at start
                named = ", ".join(repr(k) for k in sorted(unknown))
                keys = ", ".join(sorted(system.option_keys() | RESERVED))
                raise OptionError(f"--config {config} ({name}): unknown key"
                                  f"{'s' if len(unknown) > 1 else ''} {named} for a ladder of "
                                  f"system {system.name!r}; its keys: {keys}")
            return system, {k: v for k, v in entry.items() if k not in RESERVED}
    names = ", ".join(str(e.get("name")) for e in entries) or "none"
    raise OptionError(f"--ladder {name}: no such ladder in {config} (its ladders: {names})")


def file_ladder(rows: Sequence[ResultRow], system: RatingSystem, source: str,
                table: Mapping[str, Any] | None = None, given: Sequence[Option] = ()
                ) -> LadderConfig:
    """The ladder a results file is rated on: ``table``'s options (by default singles, or
    doubles where a side has two players) with ``given`` applied, every row checked by the
    system. Raises ``ResultsError`` naming the file and line, :class:`OptionError` for an
    option."""
    doubles_rows = [r for r in rows if len(r.game.side_a) > 1 or len(r.game.side_b) > 1]
    if table is None:
        try:
            system.parse_options({"format": "doubles"} if doubles_rows else {})
        except ValueError:
            raise ResultsError(f"{source}:{doubles_rows[0].line}: {system.name} has no "
                               "doubles: sides must be one player") from None
        table = {"format": "doubles"} if doubles_rows else {}
    options = options_of(system, table, given)
    for r in rows:
        g = r.game
        if doubles_rows and (len(g.side_a) != 2 or len(g.side_b) != 2):
            raise ResultsError(f"{source}:{r.line}: singles and doubles are mixed: this file's "
                               f"first doubles game is on line {doubles_rows[0].line}")
        try:
            system.check_game(options, g)
        except ValueError as e:
            raise ResultsError(f"{source}:{r.line}: {e}") from None
    return LadderConfig(system.name, system, options)


def file_units(rows: Sequence[ResultRow], ladder: str) -> list[RatedUnit]:
    """Each event of the file (its rows grouped by ``event``, in the order of their first row)
    as one unit, as an event closed in the lobby."""
    units = []
    for seq, (_event, games) in enumerate(group_events(rows), start=1):
        first = min(g.played_on for g in games)
        units.append(RatedUnit(ladder, seq, f"{first.isoformat()}T00:00:00Z", tuple(games), {},
                               event_id=seq))
    return units


class Plan(argparse.Action):
    """``--system`` and ``--option`` kept in the order given (an option applies to the system
    named just before it)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        plan = list(getattr(namespace, "plan", None) or [])
        plan.append((self.dest, values))
        namespace.plan = plan
