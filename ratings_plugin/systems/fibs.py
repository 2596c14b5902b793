"""FIBS backgammon rating (RATINGS.md §1): applied after every finished match."""

from __future__ import annotations

import math
from dataclasses import dataclass

START_RATING = 1500.0


@dataclass(frozen=True, slots=True)
class FibsRating:
    """A player's FIBS state: unrounded rating and experience (sum of match lengths)."""

    rating: float = START_RATING
    experience: int = 0


@dataclass(frozen=True, slots=True)
class FibsOptions:
    """Per-ladder options; ``experience_includes_match`` is RATINGS.md's Decision."""

    experience_includes_match: bool = True
    start_rating: float = START_RATING


def underdog_probability(difference: float, length: int) -> float:
    """U: probability that the lower-rated player wins a match of ``length`` points."""
    return 1.0 / (math.pow(10.0, abs(difference) * math.sqrt(length) / 2000.0) + 1.0)


def favourite_probability(difference: float, length: int) -> float:
    """F = 1 − U: probability that the higher-rated player wins."""
    return 1.0 - underdog_probability(difference, length)


def experience_factor(experience: int, length: int, includes_match: bool = True) -> float:
    """PE = max(1, 5 − (E + n)/100), or with E alone when the option is off."""
    total = experience + length if includes_match else experience
    return max(1.0, 5.0 - total / 100.0)


def win_probability(own: float, other: float, length: int) -> float:
    """The expected score W of a player rated ``own`` against one rated ``other``."""
    if own == other:
        return 0.5
    if own > other:
        return favourite_probability(own - other, length)
    return underdog_probability(own - other, length)


def rate_match(
    winner: FibsRating,
    loser: FibsRating,
    length: int,
    options: FibsOptions = FibsOptions(),
) -> tuple[FibsRating, FibsRating]:
    """Both players' new states after ``winner`` beat ``loser`` in a ``length``-point match.

    Both changes are computed from the pre-match values; they need not cancel
    when the experience factors differ.
    """
    if length < 1:
        raise ValueError("a rated FIBS match has a length of at least 1")
    root = math.sqrt(length)
    w_expected = win_probability(winner.rating, loser.rating, length)
    l_expected = win_probability(loser.rating, winner.rating, length)
    incl = options.experience_includes_match
    w_change = 4.0 * experience_factor(winner.experience, length, incl) * root * (1.0 - w_expected)
    l_change = 4.0 * experience_factor(loser.experience, length, incl) * root * (0.0 - l_expected)
    return (
        FibsRating(winner.rating + w_change, winner.experience + length),
        FibsRating(loser.rating + l_change, loser.experience + length),
    )
