"""``replay_units``: a FIBS correction's tail replayed with plain numbers, as its book would.

The reference is :func:`ratings_plugin.book.replay_ladder` on the same units
from the same book: the standings (every field) and the history rows must be
the same, bit for bit (``repr``), from any point of a random log, with either
experience option and any start rating. A unit the fast path does not take
sends the whole tail through ``replay_ladder``, with the same result.
"""

from __future__ import annotations

import copy
import random
from dataclasses import replace
from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit.books import LadderBook

from ratings_plugin.book import replay_ladder
from ratings_plugin.corrections import replay_units
from ratings_plugin.systems.fibs.standing import FibsStanding
from server.api import Game, LadderConfig, RatedUnit

LADDER = "backgammon"
NAMES = ["alice", "Bob", "bob2", "Carol", "dave", "Eve", "frank", "Gina", "hal", "Ivy"]
IDS = {name: 100 + i for i, name in enumerate(NAMES)}


def random_units(rng: random.Random, count: int, odd: int | None = None) -> list[RatedUnit]:
    """Plain single-match units in seq order (the ``odd``-th one unrated, when given)."""
    units = []
    day = date(2026, 1, 1)
    for k in range(count):
        a, b = rng.sample(NAMES, 2)
        length = rng.choice([1, 1, 3, 5, 7, 9, 11, 2])
        sa, sb = (length, rng.randrange(length)) if rng.random() < 0.5 else (
            rng.randrange(length), length)
        day += timedelta(days=rng.choice([0, 0, 1, 3]))
        game = Game((a,), (b,), sa, sb, day, length,
                    "both players agreed" if k == odd else None)
        units.append(RatedUnit(LADDER, seq=k + 1, at=f"{day.isoformat()}T12:{k % 60:02d}:00Z",
                               games=(game,), player_ids={a: IDS[a], b: IDS[b]},
                               match_id=1000 + k, event_id=(7 if k % 5 == 0 else None)))
    return units


def ladder(system: str = "fibs", **options: object) -> LadderConfig:
    config = LadderBook(system, **options).ladder
    return LadderConfig(LADDER, config.system, config.options)


def both(config: LadderConfig, units: list[RatedUnit], split: int
         ) -> tuple[tuple[str, str], tuple[str, str]]:
    """(standings, history) after ``units[split:]`` from the book ``units[:split]`` left, by
    ``replay_ladder`` and by ``replay_units``, each as ``repr``."""
    before, _ = replay_ladder(config, units[:split], IDS)
    want_book, want_rows = replay_ladder(config, units[split:], IDS, copy.deepcopy(before))
    got_book, got_rows = replay_units(config, units[split:], IDS, copy.deepcopy(before))
    return ((repr(sorted(want_book.standings.items())), repr(want_rows)),
            (repr(sorted(got_book.standings.items())), repr(got_rows)))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), count=st.integers(1, 120), data=st.data(),
       includes=st.booleans(), start=st.sampled_from([1500.0, 1600.0, 1234.5]))
def test_replay_units_is_replay_ladder_bit_for_bit(seed: int, count: int, data: st.DataObject,
                                                  includes: bool, start: float) -> None:
    units = random_units(random.Random(seed), count)
    split = data.draw(st.integers(0, count - 1))
    config = ladder(experience_includes_match=includes, start_rating=start)
    want, got = both(config, units, split)
    assert got == want


@pytest.mark.parametrize("odd_at", [0, 5, 39])
def test_a_unit_the_fast_path_does_not_take_sends_the_tail_to_replay_ladder(odd_at: int) -> None:
    units = random_units(random.Random(odd_at), 40, odd=odd_at)
    want, got = both(ladder(), units, 0)
    assert got == want
    assert "both players agreed" not in want[1]  # the unrated match rated nothing


def test_a_unit_of_two_games_goes_to_replay_ladder() -> None:
    units = random_units(random.Random(3), 10)
    two = replace(units[4], games=units[4].games + units[5].games)
    units = [*units[:4], two, *units[6:]]
    assert both(ladder(), units, 2)[1] == both(ladder(), units, 2)[0]


def test_other_systems_go_to_replay_ladder() -> None:
    units = random_units(random.Random(4), 30)
    want, got = both(ladder("p4p"), units, 10)
    assert got == want


def test_seeded_players_go_on_from_their_standings() -> None:
    units = random_units(random.Random(5), 20)
    config = ladder()
    book = config.system.new_book(config.options)
    book.standings = {p: FibsStanding(p, 1700.0 + i, 50, date(2025, 12, 1), 400)
                      for i, p in enumerate(NAMES)}
    replayed, _ = replay_units(config, units, IDS, book)
    assert replayed is book
    moved = [s for s in book.standings.values() if s.games > 50]
    assert moved and all(s.experience > 400 for s in moved)
    assert all(s.last_played and s.last_played >= date(2026, 1, 1) for s in moved)
