"""Dansa (RATINGS.md §3.3): the source's 1876 example, expectation checks, K table."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings_plugin.systems.cas import dansa
from ratings_plugin.systems.cas.dansa import DansaRating, rate_event

Row = tuple[str, str, int, int]

SOURCE_OPPONENTS = [1702, 1702, 1778, 1922, 1922, 1998, 1998]


def phi_expectation(rating: float, opponent: float) -> float:
    """Φ((R − R_i) / (200·√2)) with the standard library's normal distribution."""
    return NormalDist().cdf((rating - opponent) / (200 * math.sqrt(2)))


def source_example_rows() -> list[Row]:
    # Four wins, one draw and two losses; which opponents are beaten does not change W.
    results = [(1, 0), (1, 0), (1, 0), (1, 0), (5, 5), (0, 1), (0, 1)]
    return [("me", f"opp{i}", s, t) for i, (s, t) in enumerate(results)]


def test_source_example_expected_wins_3_40() -> None:
    p = sum(dansa.expectation(1850, r) for r in SOURCE_OPPONENTS)
    assert round(p, 2) == 3.40


def test_source_example_k_24() -> None:
    assert dansa.k_factor(1850, 48) == 24


def test_source_example_new_rating_1876() -> None:
    before = {"me": DansaRating(1850, 48)}
    before.update({f"opp{i}": DansaRating(r, 100) for i, r in enumerate(SOURCE_OPPONENTS)})
    after = rate_event(before, source_example_rows())
    assert after["me"] == DansaRating(1876, 55)


@pytest.mark.parametrize(("difference", "expected"), [(72, 0.6), (148, 0.7), (239, 0.8), (362, 0.9)])
def test_source_expectation_checks(difference: int, expected: float) -> None:
    assert dansa.expectation(1500 + difference, 1500) == pytest.approx(expected, abs=0.005)
    assert dansa.expectation(1500, 1500 + difference) == pytest.approx(1 - expected, abs=0.005)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 3000), st.integers(0, 3000))
def test_expectation_is_the_normal_cdf_of_the_source(r: int, opponent: int) -> None:
    assert dansa.expectation(r, opponent) == pytest.approx(phi_expectation(r, opponent), abs=1e-12)
    assert dansa.expectation(r, opponent) + dansa.expectation(opponent, r) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    ("rating", "games", "k"),
    [
        (1200, 0, 30),
        (1799, 49, 30),
        (1799, 50, 20),
        (1800, 49, 24),
        (1800, 50, 16),
        (1999, 49, 24),
        (1999, 50, 16),
        (2000, 49, 15),
        (2000, 50, 10),
        (2400, 0, 15),
        (2400, 500, 10),
    ],
)
def test_k_table(rating: int, games: int, k: int) -> None:
    assert dansa.k_factor(rating, games) == k


@pytest.mark.parametrize(
    ("rating", "games", "new"),
    [
        (1799, 49, 1799 + 15),  # K 30
        (1799, 50, 1799 + 10),  # K 20
        (1800, 49, 1800 + 12),  # K 24
        (1999, 50, 1999 + 8),  # K 16
        (2000, 0, 2008),  # K 15: 2007.5, half away from zero
        (2000, 50, 2005),  # K 10
    ],
)
def test_k_is_applied_in_an_event(rating: int, games: int, new: int) -> None:
    # One win against an equal opponent: expectation ½, change K/2.
    before = {"p": DansaRating(rating, games), "q": DansaRating(rating, 200)}
    after = rate_event(before, [("p", "q", 420, 380)])
    assert after["p"] == DansaRating(new, games + 1)


def test_no_split_at_band_boundaries() -> None:
    # 1790 with K = 30 wins three games against 1790s: 1790 + 30·(3 − 1.5) = 1835, all at K 30
    # even though the rating crosses 1800 within the event.
    before = {"p": DansaRating(1790, 0), "q": DansaRating(1790, 0)}
    after = rate_event(before, [("p", "q", 1, 0)] * 3)
    assert after["p"].rating == 1835


def test_games_counted_before_event() -> None:
    # 48 games before: K stays 24 for the whole 7-game event although it ends at 55.
    before = {"p": DansaRating(1900, 48), "q": DansaRating(1900, 300)}
    after = rate_event(before, [("p", "q", 1, 0)] * 7)
    assert after["p"] == DansaRating(1900 + 24 * 7 // 2, 55)


def test_new_players_start_at_1500() -> None:
    after = rate_event({}, [("a", "b", 300, 299)])
    assert after == {"a": DansaRating(1515, 1), "b": DansaRating(1485, 1)}


def test_draw_counts_half() -> None:
    before = {"a": DansaRating(1600, 60), "b": DansaRating(1600, 60)}
    assert rate_event(before, [("a", "b", 300, 300)])["a"].rating == 1600


def literal_dansa(before: dict[str, DansaRating], rows: list[Row]) -> dict[str, float]:
    out: dict[str, float] = {}
    players = {p for a, b, _, _ in rows for p in (a, b)}
    for p in players:
        r = before.get(p, DansaRating()).rating
        games = before.get(p, DansaRating()).games
        expected = 0.0
        wins = 0.0
        for a, b, sa, sb in rows:
            if p not in (a, b):
                continue
            own, other, opp = (sa, sb, b) if p == a else (sb, sa, a)
            expected += phi_expectation(r, before.get(opp, DansaRating()).rating)
            wins += 1.0 if own > other else 0.5 if own == other else 0.0
        few = games < 50
        k = (30 if few else 20) if r < 1800 else (24 if few else 16) if r < 2000 else (15 if few else 10)
        out[p] = r + k * (wins - expected)
    return out  # unrounded


@st.composite
def events(draw: st.DrawFn) -> tuple[dict[str, DansaRating], list[Row]]:
    names = draw(st.lists(st.sampled_from("abcdefg"), min_size=2, max_size=7, unique=True))
    before = {
        p: DansaRating(draw(st.integers(1000, 2600)), draw(st.integers(0, 120)))
        for p in names
        if draw(st.booleans())
    }
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        a, b = draw(st.permutations(names))[:2]
        rows.append((a, b, draw(st.integers(0, 3)), draw(st.integers(0, 3))))
    return before, rows


@settings(max_examples=50, deadline=None)
@given(events())
def test_event_agrees_with_the_formula(event: tuple[dict[str, DansaRating], list[Row]]) -> None:
    before, rows = event
    after = rate_event(before, rows)
    literal = literal_dansa(before, rows)
    assert set(after) == set(literal)
    for p, value in literal.items():
        # Rounded to a whole number: within ½ (plus float noise) of the unrounded value.
        assert abs(after[p].rating - value) <= 0.5 + 1e-9
        games_before = before.get(p, DansaRating()).games
        assert after[p].games == games_before + sum(p in (a, b) for a, b, _, _ in rows)


@settings(max_examples=50, deadline=None)
@given(events(), st.randoms(use_true_random=False))
def test_order_of_games_does_not_matter(event: tuple[dict[str, DansaRating], list[Row]],
                                       rnd: random.Random) -> None:
    before, rows = event
    shuffled = list(rows)
    rnd.shuffle(shuffled)
    assert rate_event(before, rows) == rate_event(before, shuffled)


@settings(max_examples=50, deadline=None)
@given(events())
def test_swapping_sides_mirrors_the_result(event: tuple[dict[str, DansaRating], list[Row]]) -> None:
    before, rows = event
    assert rate_event(before, rows) == rate_event(before, [(b, a, sb, sa) for a, b, sa, sb in rows])
