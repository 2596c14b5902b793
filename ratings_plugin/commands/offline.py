"""What ``rate`` and ``evaluate`` share offline: ``--option K=V``, a configured ladder's
options, and a results file made into a ladder and its units.

``--option`` values are read as in TOML, without the quotes: ``true``/``false``, whole numbers,
decimals, a comma-separated list (``40,30,20``; ``[40]`` for a list of one), anything else
text. Each option is applied through the system's own ``parse_options`` on top of the ladder's
options, so a ladder with K=16 is reproduced offline exactly.
"""

from __future__ import annotations

import argparse
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


def value_text(value: Any) -> str:
    """An option's value as ``--option`` takes it (:func:`parse_value` reads it back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(value_text(x) for x in value)
    return str(value)


def variant_text(options: Mapping[str, Any], sep: str = " ") -> str:
    """A report's ``variant`` as ``k=v`` pairs, the way ``--option`` takes them."""
    return sep.join(f"{k}={value_text(v)}" for k, v in options.items())


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


def find_ladder(ladders: Sequence[LadderConfig], name: str) -> LadderConfig:
    """The configured ladder ``name`` (the configuration's, else the default ladders); raises
    :class:`OptionError` listing the ladders there are."""
    for ladder in ladders:
        if ladder.name == name:
            return ladder
    names = ", ".join(x.name for x in ladders) or "none"
    raise OptionError(f"--ladder {name}: no such ladder (the configured ladders: {names})")


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
