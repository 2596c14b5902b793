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
    w_rating, l_rating = rate_ratings(winner.rating, winner.experience, loser.rating,
                                      loser.experience, length, options.experience_includes_match)
    return (
        FibsRating(w_rating, winner.experience + length),
        FibsRating(l_rating, loser.experience + length),
    )


def rate_ratings(
    winner_rating: float,
    winner_experience: int,
    loser_rating: float,
    loser_experience: int,
    length: int,
    includes_match: bool = True,
) -> tuple[float, float]:
    """:func:`rate_match` on plain numbers: the winner's and the loser's new ratings.

    The one implementation of the formula (``rate_match`` calls it; ``matchlobby
    replay`` calls it for each of a million matches, so it spends no objects).
    It does exactly the operations of :func:`win_probability` and
    :func:`experience_factor`, in the same order, so the results are the same
    bit for bit: U is computed once, since ``abs(a - b) == abs(b - a)``
    exactly in floating point.
    """
    if length < 1:
        raise ValueError("A rated FIBS match is at least 1 point long")
    root = math.sqrt(length)
    if winner_rating == loser_rating:
        w_expected = l_expected = 0.5
    else:
        under = 1.0 / (math.pow(10.0, abs(winner_rating - loser_rating) * root / 2000.0) + 1.0)
        if winner_rating > loser_rating:
            w_expected, l_expected = 1.0 - under, under
        else:
            w_expected, l_expected = under, 1.0 - under
    w_total = winner_experience + length if includes_match else winner_experience
    l_total = loser_experience + length if includes_match else loser_experience
    w_factor = max(1.0, 5.0 - w_total / 100.0)
    l_factor = max(1.0, 5.0 - l_total / 100.0)
    return (winner_rating + 4.0 * w_factor * root * (1.0 - w_expected),
            loser_rating + 4.0 * l_factor * root * (0.0 - l_expected))
