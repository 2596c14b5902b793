"""RATINGS.md "Common conventions": rounding is half away from zero, on exact numbers."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings_plugin.systems.rounding import round_half_away, round_to_decimal, round_to_int


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Fraction(33, 2), 17),  # 16.5 → 17
        (Fraction(-33, 2), -17),  # −16.5 → −17
        (Decimal("16.5"), 17),
        (Decimal("-16.5"), -17),
        (16.5, 17),  # exactly representable in binary, so also a true half
        (-16.5, -17),
        (Fraction(5, 2), 3),  # round() would give 2 (half to even)
        (Fraction(-5, 2), -3),
        (Fraction(1, 2), 1),
        (Fraction(-1, 2), -1),
        (Decimal("16.4999"), 16),
        (Decimal("-16.4999"), -16),
        (0, 0),
        (7, 7),
    ],
)
def test_round_to_int_half_away_from_zero(value: Fraction | Decimal | float | int, expected: int) -> None:
    assert round_to_int(value) == expected


@pytest.mark.parametrize(("value", "expected"), [(16.5, 17), (0.5, 1), (2.5, 3), (-2.5, -3)])
def test_halves_go_away_from_zero_not_to_the_even_neighbour(value: float, expected: int) -> None:
    # Where the built-in round() (half to even, which RATINGS.md forbids) would go the other way.
    assert round_to_int(value) == expected


def test_two_places_0_125_to_0_13() -> None:
    assert round_half_away(Decimal("0.125"), 2) == Fraction(13, 100)
    assert round_to_decimal(Decimal("0.125"), 2) == Decimal("0.13")
    assert round_to_decimal(Decimal("-0.125"), 2) == Decimal("-0.13")
    assert round_to_decimal(Fraction(1, 8), 2) == Decimal("0.13")


def test_float_input_is_taken_exactly_not_as_its_short_repr() -> None:
    # 0.125 is exact in binary, so it is a true half; 0.135 is stored just above 0.135 and
    # 2.675 just below 2.675: the rounding sees the binary value, not the decimal spelling.
    assert round_to_decimal(0.125, 2) == Decimal("0.13")
    assert round_to_decimal(2.675, 2) == Decimal("2.67")
    assert round_to_decimal(Decimal("2.675"), 2) == Decimal("2.68")


def test_round_to_decimal_returns_exact_decimal_with_places() -> None:
    result = round_to_decimal(Fraction(2, 3), 2)
    assert result == Decimal("0.67")
    assert isinstance(result, Decimal)


@settings(max_examples=200, deadline=None)
@given(
    st.decimals(min_value=-10**6, max_value=10**6, places=5, allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=4),
)
def test_matches_decimal_round_half_up(value: Decimal, places: int) -> None:
    # Decimal's ROUND_HALF_UP rounds ties away from zero: an independent oracle.
    expected = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    assert round_to_decimal(value, places) == expected
    assert round_half_away(value, places) == Fraction(expected)
    if places == 0:
        assert round_to_int(value) == int(expected)


@settings(max_examples=150, deadline=None)
@given(st.fractions(min_value=-1000, max_value=1000, max_denominator=1000), st.integers(0, 3))
def test_symmetric_and_within_half_a_unit(value: Fraction, places: int) -> None:
    rounded = round_half_away(value, places)
    assert round_half_away(-value, places) == -rounded
    unit = Fraction(1, 10**places)
    assert abs(rounded - value) <= unit / 2
    assert (rounded / unit).denominator == 1
