"""Paluba (RATINGS.md §3.2): z examples, summing, rounding and the floor at 0."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings_plugin.systems.cas import paluba
from ratings_plugin.systems.cas.paluba import rate_event, z_exact, z_value

Row = tuple[str, str, int, int]


@pytest.mark.parametrize(
    ("score", "opponent_score", "strength", "opponent_strength", "z"),
    [
        (400, 399, 100, 100, "1.00"),
        (450, 400, 100, 100, "5.90"),
        (500, 400, 120, 100, "8.77"),
    ],
)
def test_source_examples(score: int, opponent_score: int, strength: int, opponent_strength: int,
                         z: str) -> None:
    assert z_value(score, opponent_score, strength, opponent_strength) == Decimal(z)
    # The opponent's change is exactly −z.
    assert z_value(opponent_score, score, opponent_strength, strength) == -Decimal(z)


def test_source_examples_as_an_event() -> None:
    after = rate_event({"p": 120, "q": 100}, [("p", "q", 500, 400)])
    assert after == {"p": 129, "q": 91}  # 120 + 8.77 → 129, 100 − 8.77 → 91


def test_draw_gives_zero() -> None:
    assert z_value(350, 350, 100, 180) == 0
    assert rate_event({"a": 140, "b": 60}, [("a", "b", 350, 350)]) == {"a": 140, "b": 60}


def test_new_players_start_at_100() -> None:
    assert paluba.START == 100
    assert rate_event({}, [("a", "b", 400, 399)]) == {"a": 101, "b": 99}


def test_floor_at_zero_opponent_keeps_full_z() -> None:
    # Equal strengths 2 and 2, 100:500: rel = (−400 − 9)/10 = −40.9, z = −40.9.
    assert z_value(100, 500, 2, 2) == Decimal("-40.90")
    after = rate_event({"weak": 2, "strong": 2}, [("weak", "strong", 100, 500)])
    assert after["weak"] == 0  # 2 − 40.9 = −38.9 → 0
    assert after["strong"] == 43  # 2 + 40.9 = 42.9 → 43: the full z, not reduced by the floor


def test_z_values_are_summed_before_rounding() -> None:
    # The strong player (188) beats two players of 100 by one point each:
    # z = 1·2/(1 + 1.02^88) ≈ 0.298 → 0.30, twice: 188 + 0.60 = 188.6 → 189.
    z_each = round(2 / (1 + 1.02**88), 2)
    assert z_each == 0.30
    after = rate_event({"s": 188, "w1": 100, "w2": 100}, [("s", "w1", 400, 399), ("w2", "s", 399, 400)])
    assert after["s"] == 189
    assert after["w1"] == after["w2"] == 100  # 100 − 0.30 → 99.7 → 100


def test_pre_event_strengths_are_used_for_every_game() -> None:
    # The same game three times: each gives 1.00 from the pre-event equal strengths.
    after = rate_event({"a": 100, "b": 100}, [("a", "b", 400, 399)] * 3)
    assert after == {"a": 103, "b": 97}


def test_half_total_is_rounded_away_from_zero() -> None:
    # All new (100). At equal strengths z = rel: 450:400 → +5.90, 399:404 → −1.40.
    # p: 100 + 5.90 − 1.40 = 104.5 → 105 (half to even would give 104).
    assert z_value(399, 404, 100, 100) == Decimal("-1.40")
    after = rate_event({}, [("p", "q", 450, 400), ("p", "r", 399, 404)])
    assert after == {"p": 105, "q": 94, "r": 101}


def literal_z(s1: int, s2: int, r1: int, r2: int) -> float:
    sgn = (s1 > s2) - (s1 < s2)
    rel = (s1 - s2 + sgn * 9) / 10
    diff = ((rel > 0) - (rel < 0)) * (r1 - r2)
    return rel * 2 / (1 + 1.02**diff)


scores = st.integers(0, 700)
strengths = st.integers(0, 400)


@settings(max_examples=120, deadline=None)
@given(scores, scores, strengths, strengths)
def test_z_agrees_with_formula_and_is_antisymmetric(s1: int, s2: int, r1: int, r2: int) -> None:
    z = z_value(s1, s2, r1, r2)
    assert z == z.quantize(Decimal("0.01"))
    assert abs(float(z) - literal_z(s1, s2, r1, r2)) <= 0.005 + 1e-9
    assert z_value(s2, s1, r2, r1) == -z
    # A win never loses strength, a loss never gains; the size is at most |rel|·2.
    sgn = (s1 > s2) - (s1 < s2)
    assert (z > 0) - (z < 0) in (sgn, 0)
    assert abs(z) <= Decimal(abs(s1 - s2) + 9) / 10 * 2


@st.composite
def events(draw: st.DrawFn) -> tuple[dict[str, int], list[Row]]:
    names = draw(st.lists(st.sampled_from("abcdef"), min_size=2, max_size=6, unique=True))
    before = {p: draw(strengths) for p in names if draw(st.booleans())}
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        a, b = draw(st.permutations(names))[:2]
        rows.append((a, b, draw(scores), draw(scores)))
    return before, rows


@settings(max_examples=50, deadline=None)
@given(events(), st.randoms(use_true_random=False))
def test_order_of_games_does_not_matter(event: tuple[dict[str, int], list[Row]],
                                       rnd: random.Random) -> None:
    before, rows = event
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    assert rate_event(before, rows) == rate_event(before, shuffled)


@settings(max_examples=50, deadline=None)
@given(events())
def test_swapping_sides_mirrors_the_result(event: tuple[dict[str, int], list[Row]]) -> None:
    before, rows = event
    mirrored = [(b, a, sb, sa) for a, b, sa, sb in rows]
    assert rate_event(before, rows) == rate_event(before, mirrored)


@settings(max_examples=50, deadline=None)
@given(events())
def test_event_is_rounded_sum_of_z_floored_at_zero(event: tuple[dict[str, int], list[Row]]) -> None:
    before, rows = event
    after = rate_event(before, rows)
    for p, strength in after.items():
        start = before.get(p, 100)
        total = start + sum(
            (z_value(sa, sb, before.get(a, 100), before.get(b, 100)) if p == a else Decimal(0))
            - (z_value(sa, sb, before.get(a, 100), before.get(b, 100)) if p == b else Decimal(0))
            for a, b, sa, sb in rows
        )
        rounded = int(Decimal(total).to_integral_value(rounding="ROUND_HALF_UP"))
        assert strength == max(0, rounded)
        assert strength >= 0


@settings(max_examples=1000, deadline=None)
@given(st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 3000), st.integers(0, 3000))
def test_float_z_equals_the_exact_decimal_z(s1: int, s2: int, r1: int, r2: int) -> None:
    assert z_value(s1, s2, r1, r2) == z_exact(s1, s2, r1, r2)


def test_float_z_equals_the_exact_decimal_z_everywhere_in_a_small_grid() -> None:
    for margin in range(-60, 61):
        for diff in range(-400, 401, 3):
            assert z_value(400 + margin, 400, 100 + diff, 100) == z_exact(400 + margin, 400, 100 + diff, 100)


def test_z_beyond_the_float_range_is_computed_exactly() -> None:
    # |diff| > 5000 takes the decimal path: the weaker side's win is worth almost 2·rel.
    assert z_value(500, 400, 0, 6000) == Decimal("21.80")
    assert z_value(500, 400, 6000, 0) == Decimal("0.00")
