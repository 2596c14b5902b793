"""Automatch's decision alone (server/lobby/pairing.py): pools in, pairs out, checked by
properties over generated pools and against an exhaustive search on small ones."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ratings_plugin.systems.fibs import win_probability
from server.lobby.pairing import Seeker, Widening, fits, pair, reach

NOW = 1000.0
STEP = Widening(points=50, every=10)


def fibs_chance(a: Seeker, b: Seeker) -> float:
    """FIBS's expectation, as the ladder's plugin gives it."""
    return win_probability(a.rating, b.rating, a.length or 1)


def seeker(i: int, rating: float, points: int = 100, since: float = NOW, spread: float = 0.0,
           ladder: str = "backgammon", length: int | None = 1) -> Seeker:
    return Seeker(i, f"p{i}", ladder, length, rating, spread, points, since)


seekers = st.lists(
    st.builds(lambda i, r, pts, wait, spread, where: seeker(
        i, r, pts, NOW - wait, spread, *where),
        st.integers(1, 40), st.integers(1000, 2000), st.integers(0, 300),
        st.floats(0, 60), st.sampled_from([0.0, 0.0, 30.0, 80.0]),
        st.sampled_from([("backgammon", 1), ("backgammon", 5), ("chess", None)])),
    max_size=16)


def test_reach_grows_by_the_step_and_by_twice_the_deviation() -> None:
    s = seeker(1, 1500, points=100, since=NOW - 25, spread=40)
    assert reach(s, NOW, STEP) == 100 + 2 * 40 + 2 * 50
    assert reach(s, NOW - 25, STEP) == 180  # nothing yet at the start
    assert reach(s, NOW, Widening(50, 0)) == 180  # no widening


def test_two_within_both_ranges_pair_and_one_range_is_not_enough() -> None:
    a, b = seeker(1, 1500, points=100), seeker(2, 1580, points=50)
    assert pair([a, b], NOW, STEP, fibs_chance) == []  # 80 > b's 50
    wide = seeker(2, 1580, points=80)
    assert pair([a, wide], NOW, STEP, fibs_chance) == [(a, wide)]


def test_waiting_widens_the_range_until_a_pair_fits() -> None:
    a, b = seeker(1, 1500, points=0, since=NOW), seeker(2, 1620, points=0, since=NOW)
    assert pair([a, b], NOW + 29, STEP, fibs_chance) == []
    assert pair([a, b], NOW + 30, STEP, fibs_chance) == [(a, b)]  # 3 steps of 50 ≥ 120


def test_a_glicko_deviation_widens_the_range() -> None:
    a, b = seeker(1, 1500, points=0, spread=100), seeker(2, 1700, points=0, spread=110)
    assert pair([a, b], NOW, STEP, fibs_chance) == [(a, b)]  # 200 ≤ 2·100 and ≤ 2·110
    assert pair([a, seeker(2, 1700, points=0, spread=40)], NOW, STEP, fibs_chance) == []


def test_the_closest_win_chance_is_preferred() -> None:
    """1500 could play 1540 or 1590; 1540 is the closer chance, and it is not the one that
    waited longest."""
    mid = seeker(1, 1500, points=200)
    near = seeker(2, 1540, points=200, since=NOW - 5)
    far = seeker(3, 1590, points=200, since=NOW - 9)
    assert pair([mid, far, near], NOW, Widening(0, 0), fibs_chance) == [(near, mid)]


def test_other_ladders_lengths_blocks_and_one_seek_a_player_keep_apart() -> None:
    a, b = seeker(1, 1500), seeker(2, 1500, length=3)
    c = seeker(3, 1500, ladder="chess")
    assert pair([a, b, c], NOW, STEP, fibs_chance) == []
    d = seeker(4, 1500)
    assert pair([a, d], NOW, STEP, fibs_chance, apart={frozenset((1, 4))}) == []
    twice = [a, seeker(1, 1500, since=NOW + 1)]
    assert pair(twice, NOW, STEP, fibs_chance) == []


@settings(max_examples=300, deadline=None)
@given(seekers, st.floats(0, 120))
def test_every_pair_fits_nobody_twice_and_nothing_left_that_fits(pool: list[Seeker],
                                                                later: float) -> None:
    now = NOW + later
    pairs = pair(pool, now, STEP, fibs_chance)
    used = [s.id for p in pairs for s in p]
    assert len(used) == len(set(used))
    for a, b in pairs:
        assert (a.ladder, a.length) == (b.ladder, b.length)
        gap = abs(a.rating - b.rating)
        assert gap <= reach(a, now, STEP) and gap <= reach(b, now, STEP)
    first = {}
    for s in sorted(pool, key=lambda s: (s.since, s.id)):
        first.setdefault(s.id, s)  # a player's first seek counts
    left = [s for s in first.values() if s.id not in set(used)]
    assert not any(fits(a, b, now, STEP) for a, b in itertools.combinations(left, 2))


@settings(max_examples=300, deadline=None)
@given(seekers, st.floats(0, 120))
def test_each_pair_is_the_closest_chance_among_those_still_free(pool: list[Seeker],
                                                                later: float) -> None:
    """Formed in order, each pair's chance is as close to 50 % as that of any pair that still
    fitted among the players not yet paired; the first is the closest of the whole pool
    (found by trying every pair)."""
    now = NOW + later
    pairs = pair(pool, now, STEP, fibs_chance)
    free = {}
    for s in sorted(pool, key=lambda s: (s.since, s.id)):
        free.setdefault(s.id, s)
    for a, b in pairs:
        mine = abs(fibs_chance(a, b) - 0.5)
        others = [abs(fibs_chance(x, y) - 0.5)
                  for x, y in itertools.combinations(free.values(), 2) if fits(x, y, now, STEP)]
        assert others and mine <= min(others) + 1e-12
        del free[a.id], free[b.id]
