"""The lobby-wide rules of a ladder, the same for every rating system.

:class:`server.api.systems.SystemBase` applies them by default; a system
written without it can call them itself. They raise ``ValueError`` with a
message for people (the lobby turns it into a ``bad_request`` reply, the
configuration check into one line naming the ladder).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

from server.api.records import Game

COMMON_KEYS = frozenset({"inactivity_days", "format"})
"""The configuration keys every ladder takes, whatever its system."""
DEFAULT_INACTIVITY_DAYS = 365
LARGEST = 10**15
"""The largest size of a number option: far beyond any rating system's, small enough that
none overflows a float."""


def inactivity_days(table: Mapping[str, Any]) -> int | None:
    """``inactivity_days`` (default 365; 0 turns inactivity off: ``None``)."""
    days = table.get("inactivity_days", DEFAULT_INACTIVITY_DAYS)
    if days in (0, None):
        return None
    if isinstance(days, bool) or not isinstance(days, int):
        raise ValueError("inactivity_days must be a whole number of days")
    if days < 1:
        raise ValueError("inactivity_days must be at least 1")
    return days


def parse_format(table: Mapping[str, Any], doubles_allowed: bool, title: str) -> bool:
    """``format``: ``"singles"`` (the default) or ``"doubles"``; true for doubles."""
    fmt = table.get("format", "singles")
    if fmt not in ("singles", "doubles"):
        raise ValueError("format must be 'singles' or 'doubles'")
    if fmt == "doubles" and not doubles_allowed:
        raise ValueError(f"{title} has no doubles ladders: format must be 'singles'")
    return bool(fmt == "doubles")


def is_active(days: int | None, last_played: date | None, as_of: date | None) -> bool:
    """Active unless the player has no rated game in the ``days`` before ``as_of`` (games after
    it count as recent)."""
    if days is None or as_of is None or last_played is None:
        return True
    return last_played >= as_of - timedelta(days=days)


def counts(game: Game, unlimited_rated: bool) -> bool:
    """Whether a game moves ratings: not when it is unrated, nor when it is unlimited (no
    length) on a ladder whose system plays live matches or matches to a length."""
    return game.unrated_reason is None and (unlimited_rated or game.length is not None)


def check_sides(game: Game, width: int, kind: str) -> None:
    """A game's sides and scores: ``width`` players a side (``kind`` names the format), nobody
    twice, no negative score, a positive length."""
    for side in (game.side_a, game.side_b):
        if len(side) != width:
            each = "one player a side" if width == 1 else f"{width} players a side, joined by +"
            raise ValueError(f"This ladder is for {kind}: {each}")
    if set(game.side_a) & set(game.side_b):
        raise ValueError("A player cannot be on both sides")
    if len(set(game.players)) != len(game.players):
        raise ValueError("A player appears twice in one game")
    if game.score_a < 0 or game.score_b < 0:
        raise ValueError("Scores cannot be negative")
    if game.length is not None and game.length < 1:
        raise ValueError("The match length must be positive")


def no_draws(game: Game, system: str) -> None:
    """Refuse a rated draw on a system that has none (an unrated game may end level)."""
    if game.is_draw and game.unrated_reason is None:
        raise ValueError(f"{system} has no draws: the scores must differ")


def last_dates(games: Iterable[Game]) -> dict[str, date]:
    """Each player's latest day among ``games``."""
    last: dict[str, date] = {}
    for g in games:
        for p in g.players:
            last[p] = max(last.get(p, g.played_on), g.played_on)
    return last


def later(a: date | None, b: date | None) -> date | None:
    """The later of two days, either of which may be unknown."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def iso(day: date | None) -> str | None:
    return None if day is None else day.isoformat()


def from_iso(text: str | None) -> date | None:
    return None if not text else date.fromisoformat(text)


def number(table: Mapping[str, Any], key: str, default: float) -> float:
    """An option that is a number (a whole one is taken as a float)."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} must be a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or abs(number) > LARGEST:
        raise ValueError(f"{key} must be a number between -{LARGEST:g} and {LARGEST:g}")
    return number


def whole(table: Mapping[str, Any], key: str, default: int) -> int:
    """An option that is a whole number."""
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be a whole number")
    if abs(value) > LARGEST:
        raise ValueError(f"{key} must be a whole number between -{LARGEST:g} and {LARGEST:g}")
    return value
