"""What every system's ladders share: activity, the configuration keys, dates, the game checks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from typing import Any

from server.api import Game

COMMON_KEYS = frozenset({"inactivity_days", "format"})
DEFAULT_INACTIVITY_DAYS = 365


def inactivity_days(table: Mapping[str, Any]) -> int | None:
    """``inactivity_days`` (default 365; 0 or absent-by-``None`` turns inactivity off)."""
    days = table.get("inactivity_days", DEFAULT_INACTIVITY_DAYS)
    if days in (0, None):
        return None
    if isinstance(days, bool) or not isinstance(days, int):
        raise ValueError("inactivity_days must be a whole number of days")
    if days < 1:
        raise ValueError("inactivity_days must be at least 1")
    return days


def doubles(table: Mapping[str, Any], allowed: bool, system: str) -> bool:
    fmt = table.get("format", "singles")
    if fmt not in ("singles", "doubles"):
        raise ValueError("format must be 'singles' or 'doubles'")
    if fmt == "doubles" and not allowed:
        raise ValueError(f"{system} has no doubles ladders: format must be 'singles'")
    return bool(fmt == "doubles")


def is_active(days: int | None, last_played: date | None, as_of: date | None) -> bool:
    """Active unless the player has no rated game in the ``days`` before ``as_of`` (games after
    it count as recent)."""
    if days is None or as_of is None or last_played is None:
        return True
    return last_played >= as_of - timedelta(days=days)


def check_sides(game: Game, width: int, kind: str) -> None:
    """The checks every system makes of a game's sides and scores (raises ``ValueError``)."""
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
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} must be a number")
    return float(value)


def whole(table: Mapping[str, Any], key: str, default: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} must be a whole number")
    return value
