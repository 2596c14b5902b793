"""Peklo (RATINGS.md §3.4): an independent plain-Python solver, closed forms and properties."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ratings_plugin.systems.cas import PekloHistory, solve_peklo
from ratings_plugin.systems.cas.peklo import aggregate

Row = tuple[str, str, int, int]
IndexGame = tuple[int, int, float]  # (player, opponent, player's points)

CLAMP = 1e-6


def literal_peklo(n: int, games: list[IndexGame]) -> list[float]:
    """RATINGS.md §3.4 word for word: a dense b matrix with the virtual player 0 at index 0."""
    size = n + 1
    b = [[0.0] * size for _ in range(size)]
    r = [0] * size
    for i, j, points in games:
        b[i + 1][j + 1] += points
        b[j + 1][i + 1] += 1 - points
        r[i + 1] += 1
        r[j + 1] += 1
    for i in range(1, size):
        b[i][0] = b[0][i] = max(0, 20 - r[i]) / 2
    x = [0.5] * size  # x[0] = x0 = ½ stays fixed
    for _ in range(10_000):
        y = [0.0] * size
        for i in range(1, size):
            num = sum(b[i][j] * x[j] for j in range(size) if j != i)
            den = sum(b[i][j] * x[j] + b[j][i] * (1 - x[j]) for j in range(size) if j != i)
            y[i] = num / den
        total = sum(y[1:])
        new = [0.5] + [min(max(y[i] * (n / 2) / total, CLAMP), 1 - CLAMP) for i in range(1, size)]
        delta = max(abs(new[i] - x[i]) for i in range(1, size))
        x = new
        if delta < 1e-12:
            break
    return x[1:]


def elo(x: float) -> float:
    return 1500 + 200 * math.log2(x / (1 - x))


def solve_rows(rows: list[Row]) -> dict[str, float]:
    history = PekloHistory()
    history.add(rows)
    return history.solve()


def two_player_closed_form(u: float, v: float, games: int) -> float:
    """x_A for A scoring u and B scoring v points against each other in ``games`` games.

    With x_B = 1 − x_A (Σx = n/2 = 1) the two y share one denominator, so x_A = y_A and the
    fixed point is (v − u)a² + (2u + P)a − (u + P/2) = 0 with P = max(0, 20 − games)/2.
    """
    pad = max(0, 20 - games) / 2
    qa, qb, qc = v - u, 2 * u + pad, -(u + pad / 2)
    if qa == 0:
        return -qc / qb
    disc = math.sqrt(qb * qb - 4 * qa * qc)
    roots = [(-qb + disc) / (2 * qa), (-qb - disc) / (2 * qa)]
    inside = [a for a in roots if 0 < a < 1]
    assert len(inside) == 1
    return inside[0]


def test_two_players_three_wins_one_loss_by_hand() -> None:
    # 4 games each, padded with 16 draws (b[i][0] = 8): 2a² − 14a + 7 = 0, a = (7 − √35)/2.
    a = (7 - math.sqrt(35)) / 2
    rows: list[Row] = [("A", "B", 1, 0)] * 3 + [("B", "A", 1, 0)]
    result = solve_rows(rows)
    assert result["A"] == pytest.approx(elo(a), abs=1e-7)
    assert result["B"] == pytest.approx(elo(1 - a), abs=1e-7)
    assert result["A"] + result["B"] == pytest.approx(3000, abs=1e-7)


def test_single_game_between_two_new_players() -> None:
    # 1 game each, b[i][0] = 9.5: −a² + 11.5a − 5.75 = 0.
    a = (11.5 - math.sqrt(11.5**2 - 4 * 5.75)) / 2
    result = solve_rows([("A", "B", 400, 399)])
    assert result["A"] == pytest.approx(elo(a), abs=1e-7)
    assert result["B"] == pytest.approx(elo(1 - a), abs=1e-7)


def test_single_draw_leaves_both_at_1500() -> None:
    result = solve_rows([("A", "B", 350, 350)])
    assert result["A"] == pytest.approx(1500, abs=1e-9)
    assert result["B"] == pytest.approx(1500, abs=1e-9)


@st.composite
def padded_two_player_records(draw: st.DrawFn) -> tuple[int, int, int]:
    """(A's wins, B's wins, draws) with 1–19 games, so both players are padded."""
    games = draw(st.integers(1, 19))
    wins_a = draw(st.integers(0, games))
    wins_b = draw(st.integers(0, games - wins_a))
    return wins_a, wins_b, games - wins_a - wins_b


def two_player_rows(wins_a: int, wins_b: int, draws: int) -> list[Row]:
    return [("A", "B", 2, 1)] * wins_a + [("B", "A", 2, 1)] * wins_b + [("A", "B", 1, 1)] * draws


@settings(max_examples=30, deadline=None)
@given(padded_two_player_records())
def test_two_players_match_closed_form(record: tuple[int, int, int]) -> None:
    wins_a, wins_b, draws = record
    games = wins_a + wins_b + draws
    a = two_player_closed_form(wins_a + draws / 2, wins_b + draws / 2, games)
    result = solve_rows(two_player_rows(wins_a, wins_b, draws))
    assert result["A"] == pytest.approx(elo(a), abs=1e-6)
    assert result["B"] == pytest.approx(elo(1 - a), abs=1e-6)
    if wins_a > wins_b:
        assert result["A"] > result["B"]
    elif wins_a == wins_b:
        assert result["A"] == pytest.approx(result["B"], abs=1e-6)


# Without padding and with a bipartite game graph (two players only, or a league match in
# which club X only meets club Y), RATINGS.md's simultaneous update has slope −1 at the
# fixed point and alternates for ever (x = ½ → 0.25/0.75 → ½ → …). The solver switches to
# half steps after UNDAMPED_ITERATIONS plain ones: same fixed point, and it converges.


def test_two_players_with_twenty_games_each() -> None:
    # 20 games each, no padding: A scores 5 (ten draws), B scores 15.
    # Fixed point with x_B = 1 − a: 10a² + 10a − 5 = 0, a = (√3 − 1)/2.
    a = (math.sqrt(3) - 1) / 2
    assert two_player_closed_form(5, 15, 20) == pytest.approx(a, abs=1e-12)
    first, second, points = arrays([(0, 1, 0.5)] * 10 + [(1, 0, 1.0)] * 10)
    solution = solve_peklo(first, second, points, 2)
    assert solution.elo.tolist() == pytest.approx([elo(a), elo(1 - a)], abs=1e-6)
    assert solution.converged


def test_league_match_between_two_clubs() -> None:
    # x1, x2 each play y1 and y2 ten times (20 games each, no padding) and win 7 of 10.
    rows: list[Row] = []
    for x in ("x1", "x2"):
        for y in ("y1", "y2"):
            rows += [(x, y, 2, 1)] * 7 + [(y, x, 2, 1)] * 3
    result = solve_rows(rows)
    # By symmetry x_X = a, x_Y = 1 − a with 14 points against 6: 8a² + 28a − 14 = 0.
    a = two_player_closed_form(14, 6, 20)
    assert result["x1"] == pytest.approx(elo(a), abs=1e-6)
    assert result["y1"] == pytest.approx(elo(1 - a), abs=1e-6)
    assert result["x1"] > result["y1"]


def test_connected_histories_never_reach_the_damped_phase() -> None:
    """The damping is a fallback: an ordinary history converges on plain steps alone."""
    from ratings_plugin.systems.cas.peklo import UNDAMPED_ITERATIONS

    rng = random.Random(5)
    games: list[IndexGame] = [(i, (i + 1 + rng.randrange(29)) % 30, rng.choice((0.0, 0.5, 1.0)))
                              for i in range(30) for _ in range(8)]
    solution = solve_peklo(*arrays(games), 30)
    assert solution.converged and solution.iterations < UNDAMPED_ITERATIONS


def test_dense_history_without_padding_matches_literal_solver() -> None:
    # A triangle (odd cycle) where everyone has 24 games: no padding, converges.
    games: list[IndexGame] = []
    for i, j, wins_i in ((0, 1, 8), (1, 2, 7), (0, 2, 9)):
        games += [(i, j, 1.0)] * wins_i + [(i, j, 0.0)] * (12 - wins_i)
    solution = solve_peklo(*arrays(games), 3)
    assert solution.converged
    assert solution.x.tolist() == pytest.approx(literal_peklo(3, games), abs=1e-8)
    assert float(solution.x.sum()) == pytest.approx(1.5, abs=1e-9)
    assert solution.elo[0] > solution.elo[1] > solution.elo[2]


@st.composite
def histories(draw: st.DrawFn, max_games: int = 19) -> tuple[int, list[IndexGame]]:
    n = draw(st.integers(2, 6))
    games = []
    for _ in range(draw(st.integers(1, max_games))):
        i, j = draw(st.permutations(range(n)))[:2]
        games.append((i, j, draw(st.sampled_from([0.0, 0.5, 1.0]))))
    return n, games


def arrays(games: list[IndexGame]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (
        np.array([g[0] for g in games], dtype=np.int64),
        np.array([g[1] for g in games], dtype=np.int64),
        np.array([g[2] for g in games], dtype=np.float64),
    )


@settings(max_examples=30, deadline=None)
@given(histories(max_games=19))
def test_agrees_with_literal_solver(history: tuple[int, list[IndexGame]]) -> None:
    n, games = history
    solution = solve_peklo(*arrays(games), n)
    expected = literal_peklo(n, games)
    assert solution.converged
    assert solution.x.tolist() == pytest.approx(expected, abs=1e-8)


@settings(max_examples=30, deadline=None)
@given(histories(max_games=19))
def test_normalisation_holds_at_the_solution_when_no_clamp_is_active(
    history: tuple[int, list[IndexGame]],
) -> None:
    # Fewer than 20 games in total: everyone is padded, so nobody can hit the clamp.
    n, games = history
    solution = solve_peklo(*arrays(games), n)
    x = solution.x
    assert solution.converged
    assert np.all((x > CLAMP) & (x < 1 - CLAMP))
    assert float(x.sum()) == pytest.approx(n / 2, abs=1e-9)
    # Elo = 1500 + 200·log2(x / (1 − x)), element by element.
    assert solution.elo.tolist() == pytest.approx([elo(v) for v in x.tolist()], abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(histories(max_games=19), st.randoms(use_true_random=False))
def test_order_of_games_does_not_matter(history: tuple[int, list[IndexGame]], rnd: random.Random) -> None:
    n, games = history
    shuffled = list(games)
    rnd.shuffle(shuffled)
    # Also swap the two sides of some games: (i, j, p) is the same game as (j, i, 1 − p).
    swapped = [(j, i, 1 - p) if rnd.random() < 0.5 else (i, j, p) for i, j, p in shuffled]
    first = solve_peklo(*arrays(games), n)
    second = solve_peklo(*arrays(swapped), n)
    assert second.elo.tolist() == pytest.approx(first.elo.tolist(), abs=1e-9)


@settings(max_examples=30, deadline=None)
@given(histories(max_games=19))
def test_swapping_the_sides_of_every_game_changes_nothing(history: tuple[int, list[IndexGame]]) -> None:
    n, games = history
    names = [f"p{i}" for i in range(n)]

    def rows(mirror: bool) -> list[Row]:
        out: list[Row] = []
        for i, j, p in games:
            sa, sb = {1.0: (3, 1), 0.5: (2, 2), 0.0: (1, 3)}[p]
            out.append((names[j], names[i], sb, sa) if mirror else (names[i], names[j], sa, sb))
        return out

    plain, mirrored = solve_rows(rows(False)), solve_rows(rows(True))
    assert set(plain) == set(mirrored)
    for p, value in plain.items():
        assert mirrored[p] == pytest.approx(value, abs=1e-9)


@st.composite
def dominance(draw: st.DrawFn) -> list[Row]:
    """A and B face the same opponents equally often; A's score is pointwise ≥ B's, once >."""
    pool = [f"o{k}" for k in range(draw(st.integers(1, 3)))]
    rows: list[Row] = []
    strict = False
    for opponent in pool:
        games = draw(st.integers(1, 4))
        b_points = draw(st.integers(0, 2 * games))  # in half points
        a_points = draw(st.integers(b_points, 2 * games))
        strict = strict or a_points > b_points
        for player, half_points in (("A", a_points), ("B", b_points)):
            wins, draws = divmod(half_points, 2)
            for g in range(games):
                score = (3, 1) if g < wins else (2, 2) if g < wins + draws else (1, 3)
                rows.append((player, opponent, *score))
    if not strict:
        rows.append(("A", pool[0], 3, 1))
        rows.append(("B", pool[0], 1, 3))
    for _ in range(draw(st.integers(0, 6))):
        if len(pool) > 1:
            x, y = draw(st.permutations(pool))[:2]
            rows.append((x, y, draw(st.integers(0, 3)), draw(st.integers(0, 3))))
    return rows


@settings(max_examples=30, deadline=None)
@given(dominance())
def test_player_with_better_results_against_the_same_opponents_ends_higher(rows: list[Row]) -> None:
    result = solve_rows(rows)
    assert result["A"] > result["B"]


def test_player_who_wins_more_ends_higher_in_a_round_robin() -> None:
    # Round robin of four, twice: a beats everyone, b beats c and d, c beats d.
    order = ["a", "b", "c", "d"]
    rows: list[Row] = [(p, q, 2, 1) for i, p in enumerate(order) for q in order[i + 1:]] * 2
    result = solve_rows(rows)
    assert result["a"] > result["b"] > result["c"] > result["d"]


def test_perfect_record_is_clamped_and_finite() -> None:
    # 25 games each: no padding. A wins all: x_A = 1 − 1e−6, x_B = 1e−6 after clamping.
    result = solve_rows([("A", "B", 1, 0)] * 25)
    top = 1500 + 200 * math.log2((1 - CLAMP) / CLAMP)
    assert result["A"] == pytest.approx(top, abs=1e-6)
    assert result["B"] == pytest.approx(3000 - top, abs=1e-6)
    assert math.isfinite(result["A"]) and math.isfinite(result["B"])


def test_padding_keeps_a_short_perfect_record_moderate() -> None:
    # 5 wins in 5 games: padded with 15 draws, so far from the clamp.
    result = solve_rows([("A", "B", 1, 0)] * 5)
    a = two_player_closed_form(5, 0, 5)
    assert result["A"] == pytest.approx(elo(a), abs=1e-7)
    assert result["A"] < 1800


def test_history_keeps_names_and_grows() -> None:
    history = PekloHistory()
    history.add([("A", "B", 1, 0)])
    history.add([("C", "A", 0, 1)])
    assert len(history) == 2
    assert set(history.solve()) == {"A", "B", "C"}


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 3),
                                   st.integers(0, 3)).filter(lambda g: g[0] != g[1]),
                         max_size=12), max_size=6))
def test_history_grown_in_batches_is_the_full_aggregate_bit_for_bit(
    batches: list[list[tuple[int, int, int, int]]],
) -> None:
    # The history merges each batch into its stored pair table; the table and the
    # solution must be exactly what aggregating and solving every game at once gives.
    history = PekloHistory()
    rows: list[Row] = []
    for batch in batches:
        before = history.solve()
        grown = history.extended([(f"p{a}", f"p{b}", sa, sb) for a, b, sa, sb in batch])
        assert history.solve() == before  # extended() leaves the history alone
        history.add([(f"p{a}", f"p{b}", sa, sb) for a, b, sa, sb in batch])
        rows.extend((f"p{a}", f"p{b}", sa, sb) for a, b, sa, sb in batch)
        assert grown.solve() == history.solve()
    assert len(history) == len(rows)
    index: dict[str, int] = {}
    for a, b, _, _ in rows:
        index.setdefault(a, len(index))
        index.setdefault(b, len(index))
    assert history.names == list(index)
    first = np.array([index[a] for a, _, _, _ in rows], dtype=np.int64)
    second = np.array([index[b] for _, b, _, _ in rows], dtype=np.int64)
    points = np.array([1.0 if sa > sb else 0.0 if sa < sb else 0.5 for _, _, sa, sb in rows])
    table = history.table()
    expected = aggregate(first, second, points, len(index))
    for field in ("src", "dst", "won", "lost", "games"):
        assert getattr(table, field).tolist() == getattr(expected, field).tolist(), field
    full = solve_peklo(first, second, points, len(index))
    assert history.solve() == dict(zip(index, full.elo.tolist(), strict=True))
