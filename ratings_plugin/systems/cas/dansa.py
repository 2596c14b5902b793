"""Dansa (RATINGS.md §3.3): medium-term form, NSA-style, by expected wins."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from ratings_plugin.systems.rounding import round_to_int

START = 1500


@dataclass(frozen=True, slots=True)
class DansaRating:
    rating: int = START
    games: int = 0


def expectation(rating: float, opponent: float) -> float:
    """Φ((R − R_i) / (200·√2)) written as ½(1 + erf(d/400)), the same quantity."""
    return 0.5 * (1.0 + math.erf((rating - opponent) / 400.0))


def k_factor(rating: int, games: int) -> int:
    """K from the pre-event rating and the games played before the event (no band split)."""
    few = games < 50
    if rating < 1800:
        return 30 if few else 20
    if rating < 2000:
        return 24 if few else 16
    return 15 if few else 10


def rate_event(
    ratings: Mapping[str, DansaRating],
    games: Iterable[tuple[str, str, int, int]],
) -> dict[str, DansaRating]:
    """New Dansa ratings of everyone in ``games`` (player, opponent, score, opponent score)."""
    before: dict[str, DansaRating] = {}
    opponents: dict[str, list[int]] = {}
    wins: dict[str, Fraction] = {}
    for a, b, sa, sb in games:
        for p in (a, b):
            if p not in before:
                before[p] = ratings.get(p) or DansaRating()
                opponents[p] = []
                wins[p] = Fraction(0)
        opponents[a].append(before[b].rating)
        opponents[b].append(before[a].rating)
        if sa > sb:
            wins[a] += 1
        elif sb > sa:
            wins[b] += 1
        else:
            wins[a] += Fraction(1, 2)
            wins[b] += Fraction(1, 2)
    after: dict[str, DansaRating] = {}
    for p, old in before.items():
        expected = math.fsum(expectation(old.rating, r) for r in opponents[p])
        k = k_factor(old.rating, old.games)
        # The float P is taken exactly, so only the final rounding is applied.
        new = round_to_int(old.rating + k * (wins[p] - Fraction(expected)))
        after[p] = DansaRating(new, old.games + len(opponents[p]))
    return after
