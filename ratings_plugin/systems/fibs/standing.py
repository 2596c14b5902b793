"""A FIBS ladder's options and a player's standing on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from ratings_plugin.systems import common
from ratings_plugin.systems.fibs import FibsOptions


@dataclass(frozen=True)
class FibsLadder:
    """A FIBS ladder's options."""

    fibs: FibsOptions = field(default_factory=FibsOptions)
    inactivity_days: int | None = common.DEFAULT_INACTIVITY_DAYS


@dataclass(frozen=True, slots=True)
class FibsStanding:
    """A player's FIBS rating (unrounded), experience (the lengths of their rated matches)."""

    player: str
    rating: float
    games: int = 0
    last_played: date | None = None
    experience: int = 0
