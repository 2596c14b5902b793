"""Half-away-from-zero rounding on exact numbers.

RATINGS.md rounds half away from zero everywhere, and its worked examples only
come out right when that is done on exact decimals: P4P's 50 × (1 − 0.67) must
be 16.5 → 17, while binary floating point gives 16.4999… → 16. Everything is
therefore converted to a :class:`~fractions.Fraction` (exactly, floats
included) before rounding.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

Exact = int | Fraction | Decimal | float


def round_half_away(value: Exact, places: int = 0) -> Fraction:
    """Round ``value`` to ``places`` decimals, halves away from zero, exactly."""
    scaled = Fraction(value) * 10**places
    magnitude = (2 * abs(scaled.numerator) + scaled.denominator) // (2 * scaled.denominator)
    return Fraction(-magnitude if scaled < 0 else magnitude, 10**places)


def round_to_int(value: Exact) -> int:
    """Round to a whole number, halves away from zero."""
    return int(round_half_away(value, 0))


def round_to_decimal(value: Exact, places: int) -> Decimal:
    """Round to ``places`` decimals and return the exact :class:`Decimal`."""
    r = round_half_away(value, places)
    return Decimal(r.numerator) / Decimal(r.denominator)
