"""Glicko-2 (docs/RATINGS.md): Glickman's example, the idle step, properties, the expectation.

The reference is tests/kit/testkit/glicko.py, §5 written out independently; Glickman's
example checks both it and the system.
"""

from __future__ import annotations

import json
import math
from datetime import date, timedelta
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from testkit.books import LadderBook
from testkit.cli import RunRate, WriteResults
from testkit.glicko import REL, GlickoModel, grown_rd, period
from testkit.glicko import win_probability as reference_probability

from ratings_plugin.systems.glicko2 import Glicko, GlickoOptions, idle, rate, win_probability
from server.api import Game, RatedUnit, StoredStanding

DAY = date(2026, 3, 14)
# Glickman, "Example of the Glicko-2 system" (2013): the player and their three opponents.
PLAYER = (1500.0, 200.0, 0.06)
OPPONENTS = [((1400.0, 30.0, 0.06), 1.0), ((1550.0, 100.0, 0.06), 0.0),
             ((1700.0, 300.0, 0.06), 0.0)]
RATING, RD, VOLATILITY = 1464.0507, 151.5165, 0.0599960

ratings = st.floats(800, 2200)
deviations = st.floats(30, 350)
volatilities = st.floats(0.03, 0.1)


def game(a: str, b: str, score_a: int, score_b: int, day: date = DAY) -> Game:
    return Game((a,), (b,), score_a, score_b, day)


def seeded(book: LadderBook, player: str, values: tuple[float, float, float], games: int = 10,
           last_played: date | None = DAY, last_at: str | None = None) -> None:
    """A standing as the ratings table would hand it back."""
    r, rd, sigma = values
    stored = StoredStanding(r, games, None if last_played is None else last_played.isoformat(),
                            {"rd": rd, "volatility": sigma, "last_at": last_at})
    book.standings[player] = book.system.decode(book.options, player, stored)


def live_unit(book: LadderBook, g: Game, at: str) -> RatedUnit:
    book.seq += 1
    return RatedUnit("chess", book.seq, at, (g,), {}, match_id=book.seq)


def play_live(book: LadderBook, g: Game, at: str) -> dict[str, Any]:
    unit = live_unit(book, g, at)
    new = dict(book.book.compute(unit))
    book.book.accept(new, unit)
    return new


# ---- Glickman's example ------------------------------------------------------------------


def test_glickmans_example_through_the_pure_function() -> None:
    after = rate(Glicko(*PLAYER), [(Glicko(*o), s) for o, s in OPPONENTS], tau=0.5)
    assert after.rating == pytest.approx(RATING, abs=5e-5)
    assert after.rd == pytest.approx(RD, abs=5e-5)
    assert after.volatility == pytest.approx(VOLATILITY, abs=5e-8)


def test_the_paper_prints_1464_06_because_it_rounds_mu_first() -> None:
    after = rate(Glicko(*PLAYER), [(Glicko(*o), s) for o, s in OPPONENTS], tau=0.5)
    mu = (after.rating - 1500) / 173.7178
    assert round(1500 + 173.7178 * round(mu, 4), 2) == 1464.06  # μ' = -0.2069 as printed
    assert round(after.rating, 2) == 1464.05


def test_the_reference_reproduces_glickmans_example() -> None:
    r, rd, sigma = period(*PLAYER, [(o[0], o[1], s) for o, s in OPPONENTS], tau=0.5)
    assert (r, rd, sigma) == pytest.approx((RATING, RD, VOLATILITY), abs=5e-5)
    assert sigma == pytest.approx(VOLATILITY, abs=5e-8)


def test_glickmans_example_through_a_book() -> None:
    """One event is one period: the three games rated together from the values before it."""
    book = LadderBook("glicko2")
    seeded(book, "me", PLAYER)
    for k, (values, _) in enumerate(OPPONENTS):
        seeded(book, f"o{k}", values)
    games = [game("me", f"o{k}", 1, 0) if won else game("me", f"o{k}", 0, 1)
             for k, (_, won) in enumerate(OPPONENTS)]
    new = book.apply(games)
    me = new["me"]
    assert me.rating == pytest.approx(RATING, abs=5e-5)
    assert me.rd == pytest.approx(RD, abs=5e-5)
    assert me.volatility == pytest.approx(VOLATILITY, abs=5e-8)
    assert me.games == 13 and me.last_played == DAY
    # each opponent's one game, against the player as they were before the event
    for k, (values, won) in enumerate(OPPONENTS):
        expected = period(*values, [(PLAYER[0], PLAYER[1], 1 - won)])
        o = new[f"o{k}"]
        assert (o.rating, o.rd, o.volatility) == pytest.approx(expected, rel=REL)
    row = book.rows(DAY)[[r["player"] for r in book.rows(DAY)].index("me")]
    assert row["rating"] == me.rating and row["rd"] == me.rd and row["games"] == 13
    assert row["provisional"] is True  # RD 151.5 is above the default 110


# ---- the idle step -----------------------------------------------------------------------


def test_time_between_live_matches_is_elapsed_days() -> None:
    book = LadderBook("glicko2")
    play_live(book, game("ann", "bo", 1, 0), "2026-03-14T10:00:00Z")
    ann = book.standings["ann"]
    # 36 hours later: 1.5 days of growth before the next period
    play_live(book, game("cy", "ann", 1, 0), "2026-03-15T22:00:00Z")
    grown = grown_rd(ann.rd, ann.volatility, 1.5 * 0.21436)
    assert grown > ann.rd
    expected = period(ann.rating, grown, ann.volatility, [(1500.0, 350.0, 0.0)])
    after = book.standings["ann"]
    assert (after.rating, after.rd, after.volatility) == pytest.approx(expected, rel=REL)
    # against nothing grown, the result would differ
    assert after.rd != pytest.approx(period(ann.rating, ann.rd, ann.volatility,
                                            [(1500.0, 350.0, 0.0)])[1], rel=REL)


def test_opponents_play_with_their_grown_rd() -> None:
    book = LadderBook("glicko2")
    seeded(book, "ann", (1600.0, 60.0, 0.06), last_played=DAY - timedelta(days=400),
           last_at="2025-02-07T12:00:00Z")
    seeded(book, "bo", (1500.0, 60.0, 0.06), last_played=DAY)
    # An event: whole calendar days between dates (400 for ann, 0 for bo).
    new = book.apply([game("ann", "bo", 0, 1)])
    ann_rd = grown_rd(60.0, 0.06, 400 * 0.21436)
    assert new["bo"].rating == pytest.approx(
        period(1500.0, 60.0, 0.06, [(1600.0, ann_rd, 1.0)])[0], rel=REL)
    assert new["ann"].rating == pytest.approx(
        period(1600.0, ann_rd, 0.06, [(1500.0, 60.0, 0.0)])[0], rel=REL)


def test_an_event_counts_whole_days_even_after_a_live_match() -> None:
    model = GlickoModel()
    book = LadderBook("glicko2")
    play_live(book, game("ann", "bo", 1, 0), "2026-03-14T23:59:00Z")
    model.live("ann", "bo", "2026-03-14T23:59:00Z", DAY)
    later = DAY + timedelta(days=3)
    book.apply([game("ann", "bo", 2, 2, later)])
    model.event(later, [("ann", "bo", 0.5)])
    for name in ("ann", "bo"):
        s, p = book.standings[name], model.players[name]
        assert (s.rating, s.rd, s.volatility) == pytest.approx(
            (p.rating, p.rd, p.volatility), rel=REL)


def test_a_live_match_after_an_event_counts_whole_days() -> None:
    """23 hours after an event's day began, but on the same day: no idle step; between the two
    live matches that follow, the elapsed time."""
    model = GlickoModel()
    book = LadderBook("glicko2")
    book.apply([game("ann", "bo", 1, 0)])
    model.event(DAY, [("ann", "bo", 1.0)])
    play_live(book, game("bo", "ann", 1, 0), "2026-03-14T23:00:00Z")
    model.live("bo", "ann", "2026-03-14T23:00:00Z", DAY)
    play_live(book, game("ann", "bo", 1, 0, DAY + timedelta(days=1)), "2026-03-15T11:00:00Z")
    model.live("ann", "bo", "2026-03-15T11:00:00Z", DAY + timedelta(days=1))
    for name in ("ann", "bo"):
        s, p = book.standings[name], model.players[name]
        assert (s.rating, s.rd, s.volatility) == pytest.approx(
            (p.rating, p.rd, p.volatility), rel=REL)
    assert book.standings["ann"].last_at == "2026-03-15T11:00:00Z"


@settings(max_examples=200, deadline=None)
@given(deviations, volatilities, st.floats(0, 100_000), st.floats(0, 100_000))
def test_idle_growth_is_monotone_and_capped_at_the_start_rd(rd: float, sigma: float, d1: float,
                                                            d2: float) -> None:
    options = GlickoOptions()
    short, long = sorted((d1, d2))
    a = idle(Glicko(1500.0, rd, sigma), short, options)
    b = idle(Glicko(1500.0, rd, sigma), long, options)
    assert rd <= a.rd * (1 + 1e-15) and a.rd <= b.rd * (1 + 1e-15)
    assert b.rd <= 350.0 * (1 + 1e-15)
    assert a.rating == b.rating == 1500.0 and a.volatility == b.volatility == sigma


def test_a_long_absence_returns_the_start_rd_and_keeps_the_rating() -> None:
    book = LadderBook("glicko2")
    seeded(book, "ann", (1800.0, 40.0, 0.06), last_played=DAY - timedelta(days=20 * 365))
    seeded(book, "bo", (1500.0, 40.0, 0.06), last_played=DAY)
    new = book.apply([game("ann", "bo", 1, 0)])
    expected = period(1800.0, 350.0, 0.06, [(1500.0, 40.0, 1.0)])
    assert (new["ann"].rating, new["ann"].rd) == pytest.approx(expected[:2], rel=REL)
    assert idle(Glicko(1800.0, 40.0, 0.06), 20 * 365, GlickoOptions()).rd == pytest.approx(350.0)


def test_no_periods_per_day_means_no_growth_at_all() -> None:
    """Half a year between two live matches: bit for bit the period from the stored values with
    ``periods_per_day = 0``, grown values with the default."""
    for periods_per_day, grows in ((0, False), (0.21436, True)):
        book = LadderBook("glicko2", periods_per_day=periods_per_day)
        seeded(book, "ann", (1600.0, 50.01, 0.06), last_at="2026-03-14T10:00:00Z")
        seeded(book, "bo", (1500.0, 50.03, 0.06), last_at="2026-03-14T10:00:00Z")
        ann, bo = book.standings["ann"], book.standings["bo"]
        play_live(book, game("ann", "bo", 1, 0), "2026-09-14T10:00:00Z")
        same = book.standings["ann"].values == rate(ann.values, [(bo.values, 1.0)], 0.5)
        assert same is not grows


# ---- properties ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(ratings, deviations, volatilities)
def test_a_draw_between_equals_leaves_them_equal(r: float, rd: float, sigma: float) -> None:
    book = LadderBook("glicko2")
    seeded(book, "ann", (r, rd, sigma))
    seeded(book, "bo", (r, rd, sigma))
    new = book.apply([game("ann", "bo", 3, 3)])
    a, b = new["ann"], new["bo"]
    assert (a.rating, a.rd, a.volatility) == (b.rating, b.rd, b.volatility)
    assert a.rating == pytest.approx(r, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 600), deviations, volatilities, st.booleans())
@example(80.5, 222.0, 0.03, False)  # σ′ of winner and loser 5e-11 apart
def test_symmetric_results_mirror(d: float, rd: float, sigma: float, high_wins: bool) -> None:
    """Reflected about 1500 with the result swapped, every change is reflected; with equal RD
    and volatility the winner gains what the loser loses."""
    def one(ra: float, rb: float, a_wins: bool) -> tuple[Any, Any]:
        book = LadderBook("glicko2")
        seeded(book, "a", (ra, rd, sigma))
        seeded(book, "b", (rb, rd, sigma))
        new = book.apply([game("a", "b", 1, 0) if a_wins else game("a", "b", 0, 1)])
        return new["a"], new["b"]

    a, b = one(1500 + d, 1500 - d, high_wins)
    ma, mb = one(1500 - d, 1500 + d, not high_wins)
    # Equal in exact arithmetic, computed along different roundings: the volatility's iteration
    # stops anywhere within ε = 1e-6 of ln σ′², which moves σ′ by up to 5e-7 (relative) and the
    # rest accordingly.
    assert 3000 - ma.rating == pytest.approx(a.rating, abs=1e-4)
    assert 3000 - mb.rating == pytest.approx(b.rating, abs=1e-4)
    assert (ma.rd, ma.volatility) == pytest.approx((a.rd, a.volatility), rel=1e-6)
    assert a.rating - (1500 + d) == pytest.approx(-(b.rating - (1500 - d)), abs=1e-4)
    assert (a.rd, a.volatility) == pytest.approx((b.rd, b.volatility), rel=1e-6)


# ---- the expectation -------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(ratings, deviations, ratings, deviations)
def test_expectation_is_section_5s_formula(ra: float, rda: float, rb: float, rdb: float) -> None:
    book = LadderBook("glicko2")
    seeded(book, "a", (ra, rda, 0.06))
    seeded(book, "b", (rb, rdb, 0.06))
    a, b = book.standings["a"], book.standings["b"]
    p = book.system.expectation(book.options, a, b, None)
    assert p == pytest.approx(reference_probability(ra, rda, rb, rdb), rel=1e-12)
    assert p + book.system.expectation(book.options, b, a, 7) == pytest.approx(1.0, abs=1e-12)


def test_expectation_values() -> None:
    assert win_probability(Glicko(1700, 30), Glicko(1500, 30)) == pytest.approx(0.7579, abs=1e-4)
    # the same gap says less when the ratings are uncertain
    assert win_probability(Glicko(1700, 350), Glicko(1500, 350)) == pytest.approx(0.6498,
                                                                                  abs=1e-4)
    assert win_probability(Glicko(1500, 80), Glicko(1500, 300)) == 0.5


# ---- options, rows, games ----------------------------------------------------------------------


@pytest.mark.parametrize("options, problem", [
    ({"tau": 0}, "tau"), ({"tau": -0.5}, "tau"), ({"start_rd": 0}, "start_rd"),
    ({"start_volatility": -1}, "start_volatility"), ({"periods_per_day": -1}, "periods_per_day"),
    ({"provisional_rd": -1}, "provisional_rd"), ({"tau": math.nan}, "tau"),
    ({"start_rating": math.inf}, "start_rating"), ({"periods_per_day": math.nan}, "periods"),
    ({"tau": "0.5"}, "tau"), ({"provisional_rd": True}, "provisional_rd"),
    ({"format": "doubles"}, "doubles"),
    # small enough to underflow when squared: every rated game would fail
    ({"start_volatility": 1e-300}, "start_volatility must be at least 1e-06"),
    ({"tau": 1e-300}, "tau must be at least"), ({"start_rd": 1e-200}, "start_rd must be at least"),
])
def test_bad_options_are_refused_with_the_reason(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        LadderBook("glicko2", **options)


def test_doubles_games_are_refused() -> None:
    book = LadderBook("glicko2")
    with pytest.raises(ValueError, match="singles"):
        book.apply([Game(("a", "b"), ("c", "d"), 1, 0, DAY)])
    with pytest.raises(ValueError, match="both sides"):
        book.apply([game("a", "a", 1, 0)])


def test_unrated_and_unlimited_games_change_nothing() -> None:
    book = LadderBook("glicko2")
    assert book.apply([Game(("a",), ("b",), 1, 0, DAY, unrated_reason="forfeit"),
                       Game(("a",), ("b",), 1, 0, DAY, length=None)]) == {}
    assert book.standings == {}


def test_rows_show_rating_rd_games_and_the_provisional_mark() -> None:
    book = LadderBook("glicko2", provisional_rd=250)
    assert [c.key for c in book.system.columns(book.options)] == [
        "rating", "rd", "provisional", "games"]
    for _ in range(3):
        book.apply([game("ann", "bo", 1, 0)])
    book.apply([game("ann", "cy", 1, 0)])
    rows = {r["player"]: r for r in book.rows(DAY)}
    assert [r["player"] for r in book.rows(DAY)] == ["ann", "cy", "bo"]
    assert rows["ann"]["games"] == 4 and rows["cy"]["games"] == 1
    assert rows["ann"]["rd"] < 250 and rows["ann"]["provisional"] is False
    assert rows["cy"]["rd"] > 250 and rows["cy"]["provisional"] is True
    assert set(rows["ann"]) == {"rank", "of", "player", "rating", "rd", "volatility",
                                "provisional", "games", "active"}


def test_stored_state_round_trips_bit_for_bit() -> None:
    book = LadderBook("glicko2")
    play_live(book, game("ann", "bo", 1, 0), "2026-03-14T10:00:00Z")
    s = book.standings["ann"]
    stored = book.system.encode(s)
    again = book.system.decode(book.options, "ann", StoredStanding(
        stored.rating, stored.games, stored.last_played, json.loads(json.dumps(stored.state))))
    assert again == s


# ---- matchlobby rate glicko2 ----------------------------------------------------------------------


def test_rate_command_agrees_with_the_reference(write_results: WriteResults,
                                                run_rate: RunRate) -> None:
    """Events on several days: each event is one period, the days between them idle time."""
    rows = ["Open,2026-03-01,ann,bo,3,1,,", "Open,2026-03-01,ann,cy,2,2,,",
            "Open,2026-03-01,bo,cy,0,1,,", "Open,2026-03-01,dee,ann,1,0,,",
            "Club,2026-03-10,bo,ann,1,0,,", "Club,2026-03-10,cy,dee,5,5,,",
            "Club,2026-03-11,bo,dee,1,0,,no:forfeit",
            "Cup,2026-04-20,ann,cy,1,0,,", "Cup,2026-04-20,ann,dee,0,1,,"]
    done = run_rate("glicko2", write_results(rows), "--format", "json")
    assert done.returncode == 0, done.stderr
    ladder = json.loads(done.stdout)
    model = GlickoModel()
    model.event(date(2026, 3, 1), [("ann", "bo", 1.0), ("ann", "cy", 0.5), ("bo", "cy", 0.0),
                                   ("dee", "ann", 1.0)])
    model.event(date(2026, 3, 10), [("bo", "ann", 1.0), ("cy", "dee", 0.5)])
    model.event(date(2026, 4, 20), [("ann", "cy", 1.0), ("ann", "dee", 0.0)])
    assert [r["player"] for r in ladder["players"]] == model.ranking()
    for row in ladder["players"]:
        p = model.players[row["player"]]
        assert (row["rating"], row["rd"], row["volatility"]) == pytest.approx(
            (p.rating, p.rd, p.volatility), rel=REL)
        assert row["games"] == p.games and row["provisional"] == (p.rd > 110)
    assert [c["key"] for c in ladder["columns"]] == ["rating", "rd", "provisional", "games"]
    table = run_rate("glicko2", write_results(rows), "--format", "table")
    assert table.returncode == 0, table.stderr
    first = ladder["players"][0]
    assert f"{first['rating']:.2f}" in table.stdout and f"{first['rd']:.2f}" in table.stdout


def test_rate_command_refuses_doubles(write_results: WriteResults, run_rate: RunRate) -> None:
    path = write_results(["Open,2026-03-01,ann,bo,1,0,,", "Open,2026-03-01,ann+bo,cy+dee,1,0,,"])
    done = run_rate("glicko2", path)
    assert done.returncode == 2 and done.stdout == ""
    assert f"{path}:3: glicko2 has no doubles" in done.stderr
