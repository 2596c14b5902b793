"""FIBS (RATINGS.md §1): the source's check figures and an independent re-derivation."""

from __future__ import annotations

import math
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.books import LadderBook

from ratings_plugin.stakes import changes_by_book
from ratings_plugin.systems import fibs
from ratings_plugin.systems.fibs import FibsOptions, FibsRating, rate_match
from ratings_plugin.systems.fibs.standing import FibsStanding
from server.api import BookBase, Game, LadderConfig, RatedUnit
from server.api.registry import rating_systems
from server.api.systems import live_outcomes

# (rating difference, match length, favourite's win probability in % as printed in RATINGS.md)
SOURCE_CHECKS = [
    (100, 1, 52.9),
    (100, 13, 60.2),
    (300, 1, 58.5),
    (300, 3, 64.5),
    (300, 5, 68.4),
    (300, 7, 71.4),
    (300, 9, 73.8),
    (300, 11, 75.9),
    (300, 13, 77.6),
]


@pytest.mark.parametrize(("difference", "length", "percent"), SOURCE_CHECKS)
def test_favourite_probability_matches_source_table(difference: int, length: int, percent: float) -> None:
    f = fibs.favourite_probability(difference, length)
    assert abs(100 * f - percent) <= 0.05
    assert fibs.underdog_probability(difference, length) == pytest.approx(1 - f, abs=1e-15)


@pytest.mark.parametrize(("difference", "length", "percent"), SOURCE_CHECKS)
def test_win_probability_per_side_matches_source_table(difference: int, length: int, percent: float) -> None:
    high, low = 1500.0 + difference, 1500.0
    assert abs(100 * fibs.win_probability(high, low, length) - percent) <= 0.05
    assert abs(100 * fibs.win_probability(low, high, length) - (100 - percent)) <= 0.05


@pytest.mark.parametrize(("difference", "length", "percent"), SOURCE_CHECKS)
def test_ratings_change_by_source_probability(difference: int, length: int, percent: float) -> None:
    # Experienced players (factor 1): the favourite winning gains 4·√n·(1 − F).
    fav = FibsRating(1600.0 + difference, 1000)
    dog = FibsRating(1600.0, 1000)
    new_fav, new_dog = rate_match(fav, dog, length)
    expected_gain = 4 * math.sqrt(length) * (1 - percent / 100)
    assert new_fav.rating - fav.rating == pytest.approx(expected_gain, abs=4 * math.sqrt(length) * 0.0005)
    assert new_dog.rating - dog.rating == pytest.approx(-expected_gain, abs=4 * math.sqrt(length) * 0.0005)


def test_equal_experienced_players_one_point_match_plus_minus_2() -> None:
    winner, loser = rate_match(FibsRating(1723.4, 400), FibsRating(1723.4, 400), 1)
    assert f"{winner.rating - 1723.4:+.2f}" == "+2.00"
    assert f"{loser.rating - 1723.4:+.2f}" == "-2.00"
    assert winner.rating - 1723.4 == pytest.approx(2.0, abs=1e-9)
    assert loser.rating - 1723.4 == pytest.approx(-2.0, abs=1e-9)
    assert (winner.experience, loser.experience) == (401, 401)


@pytest.mark.parametrize("experience", [399, 400, 450, 5000])
def test_experienced_means_factor_one(experience: int) -> None:
    # With the match added (E + 1 ≥ 400) the factor is max(1, 5 − 4.00…) = 1.
    assert fibs.experience_factor(experience, 1) == 1.0


def test_new_players_one_point_match_factor_4_99_plus_minus_9_98() -> None:
    assert fibs.experience_factor(0, 1) == pytest.approx(4.99, abs=1e-12)
    winner, loser = rate_match(FibsRating(), FibsRating(), 1)
    assert f"{winner.rating - 1500:+.2f}" == "+9.98"
    assert f"{loser.rating - 1500:+.2f}" == "-9.98"
    assert winner.rating == pytest.approx(1509.98, abs=1e-9)
    assert loser.rating == pytest.approx(1490.02, abs=1e-9)
    assert (winner.experience, loser.experience) == (1, 1)


def test_new_player_start_values() -> None:
    assert FibsRating() == FibsRating(1500.0, 0)


def test_experience_option_off_uses_experience_alone() -> None:
    # New players: factor 5 − 0/100 = 5, so the 1-point change is 4·5·½ = 10.
    options = FibsOptions(experience_includes_match=False)
    assert fibs.experience_factor(0, 1, includes_match=False) == 5.0
    winner, loser = rate_match(FibsRating(), FibsRating(), 1, options)
    assert winner.rating == pytest.approx(1510.0, abs=1e-12)
    assert loser.rating == pytest.approx(1490.0, abs=1e-12)
    assert (winner.experience, loser.experience) == (1, 1)


def test_changes_need_not_cancel_when_factors_differ() -> None:
    # New player (factor 4.99) beats an experienced one (factor 1), equal ratings.
    winner, loser = rate_match(FibsRating(1500.0, 0), FibsRating(1500.0, 900), 1)
    assert winner.rating - 1500 == pytest.approx(9.98, abs=1e-9)
    assert loser.rating - 1500 == pytest.approx(-2.0, abs=1e-9)


def test_length_uses_agreed_length_and_adds_to_experience() -> None:
    winner, loser = rate_match(FibsRating(1500.0, 10), FibsRating(1500.0, 20), 7)
    assert (winner.experience, loser.experience) == (17, 27)
    # factor 5 − 17/100 and 5 − 27/100; W = ½ each.
    assert winner.rating - 1500 == pytest.approx(4 * 4.83 * math.sqrt(7) * 0.5, abs=1e-9)
    assert loser.rating - 1500 == pytest.approx(-4 * 4.73 * math.sqrt(7) * 0.5, abs=1e-9)


@pytest.mark.parametrize("length", [0, -1])
def test_rate_match_refuses_non_positive_length(length: int) -> None:
    with pytest.raises(ValueError):
        rate_match(FibsRating(), FibsRating(), length)


def literal_fibs(
    p1: float, e1: int, p2: float, e2: int, n: int, player_1_won: bool, includes_match: bool
) -> tuple[float, float]:
    """RATINGS.md §1 written out as literally as possible; returns the two new ratings."""
    d = abs(p1 - p2)
    u = 1 / (10 ** (d * math.sqrt(n) / 2000) + 1)
    f = 1 - u
    if includes_match:
        pe1 = max(1, 5 - (e1 + n) / 100)
        pe2 = max(1, 5 - (e2 + n) / 100)
    else:
        pe1 = max(1, 5 - e1 / 100)
        pe2 = max(1, 5 - e2 / 100)
    if p1 > p2:
        w1, w2 = f, u
    elif p1 < p2:
        w1, w2 = u, f
    else:
        w1 = w2 = 0.5
    s1, s2 = (1, 0) if player_1_won else (0, 1)
    return p1 + 4 * pe1 * math.sqrt(n) * (s1 - w1), p2 + 4 * pe2 * math.sqrt(n) * (s2 - w2)


ratings = st.floats(min_value=800, max_value=2400, allow_nan=False, allow_infinity=False)
experiences = st.integers(min_value=0, max_value=1000)
lengths = st.integers(min_value=1, max_value=25)


@settings(max_examples=200, deadline=None)
@given(ratings, experiences, ratings, experiences, lengths, st.booleans(), st.booleans())
def test_rate_match_agrees_with_literal_formula(
    p1: float, e1: int, p2: float, e2: int, n: int, player_1_won: bool, includes_match: bool
) -> None:
    expected_1, expected_2 = literal_fibs(p1, e1, p2, e2, n, player_1_won, includes_match)
    options = FibsOptions(experience_includes_match=includes_match)
    one, two = FibsRating(p1, e1), FibsRating(p2, e2)
    if player_1_won:
        new_1, new_2 = rate_match(one, two, n, options)
    else:
        new_2, new_1 = rate_match(two, one, n, options)
    assert new_1.rating == pytest.approx(expected_1, rel=0, abs=1e-9)
    assert new_2.rating == pytest.approx(expected_2, rel=0, abs=1e-9)
    assert (new_1.experience, new_2.experience) == (e1 + n, e2 + n)


@settings(max_examples=50, deadline=None)
@given(ratings, ratings, experiences, lengths, st.booleans())
def test_zero_sum_when_factors_equal(
    p1: float, p2: float, experience: int, n: int, includes_match: bool
) -> None:
    options = FibsOptions(experience_includes_match=includes_match)
    a, b = FibsRating(p1, experience), FibsRating(p2, experience)
    new_a, new_b = rate_match(a, b, n, options)
    assert (new_a.rating - p1) + (new_b.rating - p2) == pytest.approx(0.0, abs=1e-9)
    assert new_a.rating > p1 and new_b.rating < p2  # a win always gains something


@settings(max_examples=50, deadline=None)
@given(ratings, ratings, lengths)
def test_zero_sum_for_experienced_players_with_different_experience(p1: float, p2: float, n: int) -> None:
    # Both factors are 1 once E + n ≥ 400, whatever the experiences are.
    new_a, new_b = rate_match(FibsRating(p1, 400), FibsRating(p2, 2000), n)
    assert (new_a.rating - p1) + (new_b.rating - p2) == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(st.floats(min_value=0, max_value=1500), st.floats(min_value=0, max_value=1500), lengths)
def test_probability_monotone_in_difference_and_length(d1: float, d2: float, n: int) -> None:
    lo, hi = sorted((d1, d2))
    assert fibs.favourite_probability(lo, n) <= fibs.favourite_probability(hi, n)
    assert 0.5 <= fibs.favourite_probability(hi, n) < 1.0
    # A longer match favours the favourite more.
    assert fibs.favourite_probability(hi, n) <= fibs.favourite_probability(hi, n + 1)


def fibs_game(a: str, b: str, score_a: int, score_b: int, length: int | None = 1) -> Game:
    return Game((a,), (b,), score_a, score_b, date(2026, 1, 1), length)


match_lists = st.lists(
    st.tuples(
        st.sampled_from("abcde"), st.sampled_from("abcde"), st.booleans(), st.integers(1, 11)
    ).filter(lambda m: m[0] != m[1]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=30, deadline=None)
@given(match_lists)
def test_ladder_book_applies_matches_one_by_one_literally(matches: list[tuple[str, str, bool, int]]) -> None:
    book = LadderBook("fibs")
    state: dict[str, tuple[float, int]] = {}
    for a, b, a_won, n in matches:
        book.apply([fibs_game(a, b, 3 if a_won else 1, 1 if a_won else 3, n)])
        pa, ea = state.get(a, (1500.0, 0))
        pb, eb = state.get(b, (1500.0, 0))
        na, nb = literal_fibs(pa, ea, pb, eb, n, a_won, True)
        state[a], state[b] = (na, ea + n), (nb, eb + n)
    assert set(book.standings) == set(state)
    for p, (rating, experience) in state.items():
        assert book.standings[p].rating == pytest.approx(rating, abs=1e-9)
        assert book.standings[p].experience == experience


@settings(max_examples=30, deadline=None)
@given(match_lists)
def test_swapping_sides_mirrors_the_result(matches: list[tuple[str, str, bool, int]]) -> None:
    plain = LadderBook("fibs")
    mirrored = LadderBook("fibs")
    for a, b, a_won, n in matches:
        sa, sb = (5, 2) if a_won else (2, 5)
        plain.apply([fibs_game(a, b, sa, sb, n)])
        mirrored.apply([fibs_game(b, a, sb, sa, n)])
    assert plain.standings == mirrored.standings


def test_unlimited_and_unrated_matches_change_nothing() -> None:
    book = LadderBook("fibs")
    assert book.apply([fibs_game("a", "b", 5, 2, None)]) == {}
    unrated = Game(("a",), ("b",), 5, 2, date(2026, 1, 1), 5, "forfeit")
    assert book.apply([unrated]) == {}
    assert book.standings == {}


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.just(1500.0), st.floats(0, 4000)), experiences, st.floats(0, 4000),
       st.integers(0, 3000), st.one_of(lengths, st.integers(1, 1000)), st.booleans(),
       st.floats(1000, 2000))
def test_a_stakes_closed_form_outcomes_are_the_books_bit_for_bit(
    p1: float, e1: int, p2: float, e2: int, n: int, includes_match: bool, start: float
) -> None:
    """The stake's fast path (``outcomes``) gives exactly what rating the match both ways
    through the book gives, newcomers (the ladder's start rating) too."""
    system = rating_systems()["fibs"]
    options = system.parse_options({"experience_includes_match": includes_match,
                                    "start_rating": start})
    ladder = LadderConfig("backgammon", system, options)
    day = date(2026, 5, 4)
    a = FibsStanding("ann", p1, e1 // 3, date(2026, 1, 2), e1)
    for b in (FibsStanding("ben", p2, 7, None, e2), system.new_book(options).new_standing("ben")):
        closed = live_outcomes(system)
        assert closed is not None
        by_book = changes_by_book(ladder, system.new_book(options), a, b, n,
                                  "2026-05-04T10:00:00Z", day)
        assert closed.outcomes(options, a, b, n, day) == by_book
        assert by_book[0] >= 0 >= by_book[1] and by_book[2] >= 0 >= by_book[3]


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 4000), experiences, st.integers(0, 50), st.floats(0, 4000), experiences,
       st.one_of(lengths, st.none()), st.booleans(), st.booleans(), st.booleans())
def test_a_units_one_match_is_rated_as_the_default_rates_it(
    p1: float, e1: int, games: int, p2: float, e2: int, n: int | None, a_won: bool,
    includes_match: bool, newcomer: bool
) -> None:
    """FIBS rates a unit of one match in one step: the same standings, bit for bit, as the
    default compute (rate_game, then the match and its day counted), unlimited ones too."""
    system = rating_systems()["fibs"]
    book = system.new_book(system.parse_options({"experience_includes_match": includes_match}))
    book.standings["ann"] = FibsStanding("ann", p1, games, date(2026, 1, 2), e1)
    if not newcomer:
        book.standings["ben"] = FibsStanding("ben", p2, 3, None, e2)
    game = Game(("ann",), ("ben",), *((3, 1) if a_won else (1, 3)), date(2026, 5, 4), n)
    unit = RatedUnit("backgammon", 1, "2026-05-04T10:00:00Z", (game,), {})
    assert book.compute(unit) == BookBase.compute(book, unit)
