"""Paluba (RATINGS.md §3.2): short-term form from score differences."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal, localcontext
from fractions import Fraction

from ratings_plugin.systems.rounding import round_to_decimal, round_to_int

START = 100


def _sign(value: int | Fraction) -> int:
    return (value > 0) - (value < 0)


def z_value(score: int, opponent_score: int, strength: int, opponent_strength: int) -> Decimal:
    """The change z of one game for the player, rounded to 0.01; the opponent gets −z.

    Worked in float64 first: its relative error is below 1e-12, so unless 100·z
    lies within 1e-9 (relative) of a half, it rounds as the exact value does,
    and so as :func:`z_exact`, which is used otherwise (about 1 game in 10⁷).
    """
    margin = score - opponent_score
    if margin == 0:
        return Decimal("0.00")
    sign = _sign(margin)
    diff = sign * (strength - opponent_strength)
    if abs(diff) <= 5000 and abs(margin) <= 10**9:
        hundredths = (margin + sign * 9) * 20.0 / (1.0 + 1.02**diff)  # 100·z
        magnitude = abs(hundredths)
        if abs(magnitude % 1.0 - 0.5) > 1e-9 * (1.0 + magnitude):
            return Decimal(sign * math.floor(magnitude + 0.5)).scaleb(-2)
    return z_exact(score, opponent_score, strength, opponent_strength)


def z_exact(score: int, opponent_score: int, strength: int, opponent_strength: int) -> Decimal:
    """:func:`z_value` in 40-digit decimals, rounded exactly."""
    margin = score - opponent_score
    rel = Fraction(margin + _sign(margin) * 9, 10)
    if rel == 0:
        return Decimal("0.00")
    diff = _sign(rel) * (strength - opponent_strength)
    with localcontext() as ctx:
        ctx.prec = 40
        rel_d = Decimal(rel.numerator) / Decimal(rel.denominator)
        value = rel_d * 2 / (1 + Decimal("1.02") ** diff)
    return round_to_decimal(value, 2)


def rate_event(
    strengths: Mapping[str, int],
    games: Iterable[tuple[str, str, int, int]],
    start: int = START,
) -> dict[str, int]:
    """New strengths of everyone in ``games`` (player, opponent, score, opponent score).

    z values are summed per player and added to the pre-event strength; the
    total is rounded to a whole number and floored at 0 (opponents keep their
    full z regardless).
    """
    before: dict[str, int] = {}
    total: dict[str, Decimal] = {}
    for a, b, sa, sb in games:
        for p in (a, b):
            if p not in before:
                before[p] = strengths.get(p, start)
                total[p] = Decimal(0)
        z = z_value(sa, sb, before[a], before[b])
        total[a] += z
        total[b] -= z
    return {p: max(0, round_to_int(before[p] + total[p])) for p in before}
