"""A FIBS ladder's options and a player's standing on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ratings_plugin.systems.fibs import FibsOptions
from server.api import LadderOptions, StandingBase


@dataclass(frozen=True)
class FibsLadder(LadderOptions):
    """A FIBS ladder's options."""

    fibs: FibsOptions = field(default_factory=FibsOptions)


@dataclass(frozen=True, slots=True)
class FibsStanding(StandingBase):
    """A player's FIBS rating (unrounded), experience (the lengths of their rated matches)."""

    experience: int = 0
