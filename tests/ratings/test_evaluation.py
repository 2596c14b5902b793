"""``ratings_plugin.evaluation``: scoring rules, the replay's timing and generated data where
the true strengths are known."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from datetime import date, timedelta
from typing import Any, cast

import pytest

from ratings_plugin.evaluation import accuracy, brier, evaluate, log_loss
from ratings_plugin.evaluation.predictors import SystemPredictor
from ratings_plugin.evaluation.scores import report
from server.api import Game, LadderConfig, RatedUnit, RatingSystem
from server.api.registry import rating_systems

DAY = date(2026, 1, 1)


def game(a: str, b: str, sa: int, sb: int, length: int | None = 1, day: int = 0,
         unrated: str | None = None) -> Game:
    return Game((a,), (b,), sa, sb, DAY + timedelta(days=day), length, unrated)


def units(games: list[Game], per_unit: int = 1) -> list[RatedUnit]:
    return [RatedUnit("test", i // per_unit + 1, "2026-01-01T00:00:00Z",
                      tuple(games[i:i + per_unit]), {}, event_id=i // per_unit + 1)
            for i in range(0, len(games), per_unit)]


def ladder(system: str, **options: Any) -> LadderConfig:
    found = rating_systems()[system]
    return LadderConfig("test", found, found.parse_options(options))


class TruthBook:
    """Predicts with the latent strengths the games were drawn from (a test-only book)."""

    def __init__(self, strengths: Mapping[str, float]) -> None:
        self.strengths = strengths
        self.standings: dict[str, Any] = {}

    def predict(self, g: Game) -> float:
        return win_chance(self.strengths[g.side_a[0]], self.strengths[g.side_b[0]])

    def compute(self, unit: RatedUnit) -> dict[str, Any]:
        return {}

    def accept(self, new: Mapping[str, Any], unit: RatedUnit) -> None:
        pass


class Truth:
    """A rating system that knows the truth: enough of one for ``evaluate``."""

    name = "truth"
    rates_each_result = True

    def __init__(self, strengths: Mapping[str, float]) -> None:
        self.strengths = strengths

    def new_book(self, options: Any) -> TruthBook:
        return TruthBook(self.strengths)

    def counts(self, options: Any, g: Game) -> bool:
        return g.unrated_reason is None and g.length is not None


def truth_ladder(strengths: Mapping[str, float]) -> LadderConfig:
    return LadderConfig("test", cast(RatingSystem, Truth(strengths)), None)


def win_chance(a: float, b: float) -> float:
    """The generating model: FIBS's 5-point match formula on the latent ratings."""
    return 1.0 / (1.0 + math.pow(10.0, (b - a) * math.sqrt(5) / 2000.0))


def drawn(seed: int, players: int = 30, count: int = 2000) -> tuple[dict[str, float],
                                                                    list[Game]]:
    rng = random.Random(seed)
    strengths = {f"p{i}": rng.gauss(1500.0, 300.0) for i in range(players)}
    names = sorted(strengths)
    games = []
    for i in range(count):
        a, b = rng.sample(names, 2)
        won = rng.random() < win_chance(strengths[a], strengths[b])
        games.append(game(a, b, 5 if won else 2, 2 if won else 5, 5, i // 50))
    return strengths, games


def by_system(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["system"]: row for row in report["systems"]}


# --- the scores ------------------------------------------------------------------------


def test_scores_of_one_prediction() -> None:
    assert log_loss(0.8, 1.0) == pytest.approx(-math.log(0.8), abs=1e-15)
    assert log_loss(0.8, 0.0) == pytest.approx(-math.log(0.2), abs=1e-15)
    assert log_loss(0.8, 0.5) == pytest.approx(-(math.log(0.8) + math.log(0.2)) / 2, abs=1e-15)
    assert log_loss(1.0, 0.0) == pytest.approx(-math.log(1e-15), rel=1e-3)  # clamped
    assert brier(0.8, 0.0) == pytest.approx(0.64)
    assert brier(0.8, 0.5) == pytest.approx(0.09)
    assert [accuracy(0.5, 1.0), accuracy(0.5, 0.0), accuracy(0.7, 1.0), accuracy(0.7, 0.0),
            accuracy(0.3, 0.0), accuracy(0.7, 0.5)] == [0.5, 0.5, 1.0, 0.0, 1.0, 0.5]


def test_the_baseline_scores_ln2_and_half_right() -> None:
    _, games = drawn(1, count=300)
    row = by_system(evaluate([], units(games)))["baseline"]
    assert row["variant"] == {}
    assert row["games"] == 300
    assert row["log_loss"] == pytest.approx(math.log(2), abs=1e-12)
    assert row["brier"] == pytest.approx(0.25, abs=1e-12)
    assert row["accuracy"] == 0.5
    assert [b["games"] for b in row["calibration"]] == [0] * 5 + [300] + [0] * 4
    assert row["calibration"][0] == {"bin": [0.0, 0.1], "games": 0, "predicted": None,
                                     "observed": None}


def test_draws_count_as_half_a_win() -> None:
    """ČAS has draws: y = 0.5 in log-loss and Brier, half right in accuracy."""
    games = [game("a", "b", 1, 1), game("a", "b", 2, 0)]
    rows = by_system(evaluate([({}, ladder("cas"))], units(games)))
    cas = rows["cas"]
    assert cas["games"] == 2
    p = cas["calibration"]  # both predicted before anything: Peklo's equal starts, 0.5
    assert [b["games"] for b in p][5] == 2
    assert cas["log_loss"] == pytest.approx(math.log(2), abs=1e-12)
    assert cas["brier"] == pytest.approx(0.25 / 2)
    assert cas["accuracy"] == 0.5
    # win_rate: first 1/(1+1) = 0.5 on the draw; then a and b both (0.5+1)/(1+2) = 0.5 again
    assert rows["win_rate"]["brier"] == pytest.approx(0.125)


def test_unrated_and_unlimited_games_are_not_scored() -> None:
    games = [game("a", "b", 3, 1, 3), game("a", "b", 3, 1, None),
             game("a", "b", 3, 1, 3, unrated="practice")]
    rows = by_system(evaluate([({}, ladder("fibs"))], units(games)))
    assert [rows[s]["games"] for s in ("fibs", "baseline", "win_rate")] == [1, 1, 1]


def test_cas_predicts_by_peklo_or_by_dansa_as_its_option_says() -> None:
    """Two events: the second's games predicted from the standings the first left, by Peklo's
    Bradley–Terry strength or (``prediction = "dansa"``) by Dansa's expected score, each
    computed here from the standings of a book rated apart."""
    first = [game("a", "b", 400, 300), game("b", "c", 350, 360), game("a", "c", 420, 380)]
    second = [game("a", "b", 300, 410), game("c", "a", 390, 370)]
    plain, dansa_row = evaluate([({}, ladder("cas")), ({"prediction": "dansa"},
                                 ladder("cas", prediction="dansa"))],
                                units(first, 3) + units(second, 2))["systems"][:2]
    book = ladder("cas").system.new_book(ladder("cas").options)
    unit = units(first, 3)[0]
    book.accept(book.compute(unit), unit)
    s = book.standings

    def loss(chances: list[float]) -> float:  # six games: the first event's three at 0.5
        return (3 * math.log(2) - sum(map(math.log, chances))) / 5

    peklo = [1 / (1 + 2 ** ((s["a"].peklo - s["b"].peklo) / 200)),  # b won
             1 / (1 + 2 ** ((s["a"].peklo - s["c"].peklo) / 200))]  # c won
    by_dansa = [1 - 0.5 * (1 + math.erf((s["a"].dansa - s["b"].dansa) / 400)),
                0.5 * (1 + math.erf((s["c"].dansa - s["a"].dansa) / 400))]
    assert plain["variant"] == {} and dansa_row["variant"] == {"prediction": "dansa"}
    assert plain["log_loss"] == pytest.approx(loss(peklo), abs=1e-12)
    assert dansa_row["log_loss"] == pytest.approx(loss(by_dansa), abs=1e-12)
    assert plain["log_loss"] != dansa_row["log_loss"]
    with pytest.raises(ValueError, match="prediction must be 'peklo' or 'dansa'"):
        ladder("cas", prediction="paluba")


def test_every_row_is_scored_on_the_games_all_its_systems_count() -> None:
    """ČAS rates a game with no length, FIBS does not: side by side both score only the
    games both count; alone, ČAS scores its own."""
    games = [game("a", "b", 3, 1, 3), game("b", "c", 2, 1, None), game("a", "c", 3, 0, 3)]
    both = by_system(evaluate([({}, ladder("cas")), ({}, ladder("fibs"))], units(games)))
    assert {s: row["games"] for s, row in both.items()} == {
        "cas": 2, "fibs": 2, "baseline": 2, "win_rate": 2}
    alone = by_system(evaluate([({}, ladder("cas"))], units(games)))
    assert alone["cas"]["games"] == alone["baseline"]["games"] == 3


def test_after_20_counts_only_seasoned_players() -> None:
    games = [game("a", "b", 1, 0) for _ in range(25)] + [game("a", "c", 1, 0)]
    rows = by_system(evaluate([({}, ladder("fibs"))], units(games)))
    for row in rows.values():
        assert row["games"] == 26
        assert row["after_20"]["games"] == 5  # a and b's 21st to 25th; c is new
        assert set(row["after_20"]) == {"games", "log_loss", "brier", "accuracy", "calibration"}


def test_no_game_scores_null() -> None:
    row = evaluate([({}, ladder("fibs"))], [])["systems"][0]
    assert row["games"] == 0 and row["log_loss"] is None and row["after_20"]["brier"] is None


# --- when each system predicts ------------------------------------------------------------


def test_a_system_rated_after_each_result_predicts_each_game_after_the_one_before() -> None:
    unit = units([game("a", "b", 1, 0), game("a", "b", 1, 0)], per_unit=2)[0]
    fibs = [p for _, p in SystemPredictor(ladder("fibs")).feed(unit)]
    assert fibs[0] == 0.5 and fibs[1] > 0.5
    one_by_one = evaluate([({}, ladder("fibs"))], units(list(unit.games)), baselines=False)
    together = evaluate([({}, ladder("fibs"))], [unit], baselines=False)
    assert one_by_one == together


def test_a_system_rated_at_a_close_predicts_an_event_from_before_it() -> None:
    event = units([game("a", "b", 1, 0), game("a", "b", 1, 0)], per_unit=2)
    predictor = SystemPredictor(ladder("p4p"))
    assert [p for _, p in predictor.feed(event[0])] == [0.5, 0.5]
    later = units([game("a", "b", 1, 0)])[0]
    assert predictor.feed(later)[0][1] > 0.5


# --- generated data: the truth is known ---------------------------------------------------


def test_the_truth_and_fibs_beat_the_baseline() -> None:
    strengths, games = drawn(7)
    report = evaluate([({}, truth_ladder(strengths)), ({}, ladder("fibs"))], units(games))
    rows = by_system(report)
    assert [r["system"] for r in report["systems"]] == ["truth", "fibs", "baseline", "win_rate"]
    base = rows["baseline"]
    for name in ("truth", "fibs", "win_rate"):
        assert rows[name]["log_loss"] < base["log_loss"], name
        assert rows[name]["brier"] < base["brier"], name
        assert rows[name]["accuracy"] > base["accuracy"], name
    assert rows["truth"]["log_loss"] < rows["fibs"]["log_loss"]
    truth = rows["truth"]
    for b in truth["calibration"]:  # the truth is calibrated where there are games to tell
        if b["games"] >= 100:
            assert abs(b["predicted"] - b["observed"]) < 0.1, b


def test_variants_are_rows_of_their_own() -> None:
    _, games = drawn(3, count=400)
    plain: dict[str, Any] = {}
    variant: dict[str, Any] = {"experience_includes_match": False}
    report = evaluate([(plain, ladder("fibs")),
                       (variant, ladder("fibs", experience_includes_match=False))],
                      units(games), baselines=False)
    first, second = report["systems"]
    assert (first["variant"], second["variant"]) == (plain, variant)
    assert first["games"] == second["games"] == 400
    assert first["log_loss"] != second["log_loss"]


def test_the_report_sums_the_scores_of_each_prediction() -> None:
    rng = random.Random(2)
    ps = [rng.choice([0.0, 0.5, 1.0, 0.1, 0.95, rng.random()]) for _ in range(500)]
    ys = [rng.choice([0.0, 0.5, 1.0]) for _ in ps]
    got = report(ps, ys)
    assert got["games"] == 500
    assert got["log_loss"] == pytest.approx(sum(map(log_loss, ps, ys)) / 500, abs=1e-12)
    assert got["brier"] == pytest.approx(sum(map(brier, ps, ys)) / 500, abs=1e-12)
    assert got["accuracy"] == pytest.approx(sum(map(accuracy, ps, ys)) / 500, abs=1e-12)
    for i, b in enumerate(got["calibration"]):
        inside = [(p, y) for p, y in zip(ps, ys, strict=True)
                  if i / 10 <= p < (i + 1) / 10 or (i == 9 and p == 1.0)]
        assert b["games"] == len(inside)
        if inside:
            assert b["predicted"] == pytest.approx(sum(p for p, _ in inside) / len(inside))
            assert b["observed"] == pytest.approx(sum(y for _, y in inside) / len(inside))
