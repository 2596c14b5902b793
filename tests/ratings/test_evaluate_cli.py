"""``matchlobby evaluate --file`` and ``rate``'s offline options, run as real processes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from testkit.cli import Completed, run_many
from testkit.results import results_text

from ratings_plugin.commands.offline import parse_value


def report(done: Completed) -> dict[str, Any]:
    return done.json()


def rows(done: Completed) -> dict[str, dict[str, Any]]:
    return {r["system"] + json.dumps(r["variant"]): r for r in report(done)["systems"]}


# FIBS by hand (RATINGS.md §1), apart from the code under test: the probability that a player
# rated r beats one rated s in an n-point match, and the change after it.
def fibs_p(r: float, s: float, n: int) -> float:
    return 1.0 / (1.0 + math.pow(10.0, (s - r) * math.sqrt(n) / 2000.0))


def fibs_change(r: float, s: float, n: int, experience: int, won: bool) -> float:
    factor = max(1.0, 5.0 - (experience + n) / 100.0)
    return 4.0 * factor * math.sqrt(n) * ((1.0 if won else 0.0) - fibs_p(r, s, n))


SMALL = [
    "m1,2026-03-01,ann,bob,3,0,3,",
    "m2,2026-03-02,cid,ann,1,0,1,",
    "m3,2026-03-03,ann,cid,1,0,1,no:friendly",
    "m4,2026-03-03,ann,bob,4,0,unlimited,",
    "m5,2026-03-04,bob,cid,5,2,5,",
]


def test_scores_equal_a_computation_done_apart(tmp_path: Path) -> None:
    """Three scored games (the unrated and the unlimited one are not), computed by hand."""
    path = tmp_path / "small.csv"
    path.write_text(results_text(SMALL), encoding="utf-8")
    done, table, csv_out = run_many([
        ["evaluate", "--file", str(path), "--system", "fibs", "--format", "json"],
        ["evaluate", "--file", str(path), "--system", "fibs"],
        ["evaluate", "--file", str(path), "--system", "fibs", "--format", "csv"],
    ], tmp_path)
    ann = bob = cid = 1500.0
    p1 = fibs_p(ann, bob, 3)  # ann beats bob, 3 points, both new
    ann, bob = ann + fibs_change(ann, bob, 3, 0, True), bob + fibs_change(bob, ann, 3, 0, False)
    p2 = fibs_p(cid, ann, 1)  # cid (side A) beats ann
    cid, ann = cid + fibs_change(cid, ann, 1, 0, True), ann + fibs_change(ann, cid, 1, 3, False)
    p3 = fibs_p(bob, cid, 5)  # bob beats cid
    assert p1 == 0.5 and p2 < 0.5 and p3 < 0.5
    predicted = [p1, p2, p3]  # side A won all three
    log_loss = sum(-math.log(p) for p in predicted) / 3
    brier = sum((1 - p) ** 2 for p in predicted) / 3
    got = rows(done)
    fibs = got["fibs{}"]
    assert fibs["games"] == 3
    assert abs(fibs["log_loss"] - log_loss) < 1e-9
    assert abs(fibs["brier"] - brier) < 1e-9
    assert fibs["accuracy"] == 0.5 / 3  # half for p = 0.5, wrong twice
    assert fibs["after_20"]["games"] == 0
    bins = [b["games"] for b in fibs["calibration"]]
    assert bins[5] == 1 and sum(bins) == 3
    # the win rates so far, (wins + 1) / (games + 2): 1/2 v 1/2, 1/2 v 2/3, 1/3 v 2/3
    wins = [0.5, 0.5 / (0.5 + 2 / 3), (1 / 3) / (1 / 3 + 2 / 3)]
    assert abs(got["win_rate{}"]["log_loss"] - sum(-math.log(p) for p in wins) / 3) < 1e-9
    assert abs(got["win_rate{}"]["brier"] - sum((1 - p) ** 2 for p in wins) / 3) < 1e-9
    assert got["baseline{}"]["log_loss"] == math.log(2)
    assert got["baseline{}"]["accuracy"] == 0.5
    # the table and the CSV carry the same rows
    assert table.returncode == 0, table.stderr
    head, *lines = table.stdout.splitlines()
    assert head.split()[:6] == ["system", "variant", "games", "log-loss", "Brier", "accuracy"]
    assert [line.split()[0] for line in lines] == ["fibs", "baseline", "win_rate"]
    assert lines[0].split()[3] == f"{log_loss:.4f}"
    assert csv_out.returncode == 0, csv_out.stderr
    first = csv_out.stdout.splitlines()[1].split(",")
    assert first[:3] == ["fibs", "", "3"] and float(first[3]) == fibs["log_loss"]


def test_every_system_that_can_rate_the_file_and_variants(tmp_path: Path) -> None:
    path = tmp_path / "small.csv"
    path.write_text(results_text(SMALL), encoding="utf-8")
    draws = tmp_path / "draws.csv"  # FIBS and P4P refuse draws
    draws.write_text(results_text(["e1,2026-03-01,ann,bob,1,1,,", "e1,2026-03-01,ann,cid,2,0,,"]),
                     encoding="utf-8")
    every, with_draws, draws_table, variants = run_many([
        ["evaluate", "--file", str(path), "--format", "json"],
        ["evaluate", "--file", str(draws), "--format", "json"],
        ["evaluate", "--file", str(draws)],
        ["evaluate", "--file", str(path), "--format", "json", "--system", "fibs",
         "--system", "fibs", "--option", "experience_includes_match=false",
         "--system", "p4p", "--option", "k_values=16,16,16"],
    ], tmp_path)
    assert [r["system"] for r in report(every)["systems"]] == [
        "cas", "elo", "fibs", "glicko2", "p4p", "baseline", "win_rate"]
    # a system that refuses the file is named on standard error, the report alone on stdout
    assert with_draws.returncode == draws_table.returncode == 0, with_draws.stderr
    skipped = [f"matchlobby evaluate: {name} skipped: {draws}:2: {name} has no draws: "
               "the scores must differ" for name in ("fibs", "p4p")]
    for done in (with_draws, draws_table):
        lines = done.stderr.splitlines()
        assert set(skipped) <= set(lines)
        assert all(line.startswith("matchlobby evaluate: ") and " skipped: " in line
                   for line in lines)
    assert [line.split()[0] for line in draws_table.stdout.splitlines()[1:]] == [
        "cas", "glicko2", "baseline", "win_rate"]
    drawn = json.loads(with_draws.stdout)
    assert [r["system"] for r in drawn["systems"]] == ["cas", "glicko2", "baseline", "win_rate"]
    # both ČAS predictions were 0.5 (everyone new, one event); the draw is half a win
    cas = drawn["systems"][0]
    assert cas["brier"] == (0.0 + 0.25) / 2 and cas["accuracy"] == 0.5
    plain, other, p4p, *_ = report(variants)["systems"]
    assert (plain["variant"], other["variant"], p4p["variant"]) == (
        {}, {"experience_includes_match": False}, {"k_values": [16, 16, 16]})
    assert plain["games"] == other["games"] == 3
    assert plain["log_loss"] != other["log_loss"]


def test_bad_input_exits_2_with_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(results_text(["m1,2026-03-01,ann,bob,3,0,3,", "m2,2026-03-02,cid,ann,x,0,1,"]),
                   encoding="utf-8")
    good = tmp_path / "good.csv"
    good.write_text(results_text(SMALL), encoding="utf-8")
    mixed = tmp_path / "mixed.csv"  # doubles, then singles: no system takes both
    mixed.write_text(results_text(["m1,2026-03-01,ann+bob,cid+dan,3,0,,",
                                   "m2,2026-03-02,cid,ann,3,0,,"]), encoding="utf-8")
    runs = run_many([
        ["evaluate", "--file", str(bad)],
        ["evaluate", "--file", str(good), "--system", "chess"],
        ["evaluate", "--file", str(good), "--system", "fibs", "--option", "tau=0.5"],
        ["evaluate", "--file", str(good), "--system", "fibs", "--option",
         "experience_includes_match=maybe"],
        ["evaluate", "--file", str(good), "--option", "tau=0.5"],
        ["evaluate", "--file", str(good), "--system", "cas", "--option", "k"],
        ["evaluate", "--file", str(good), "--system", "fibs", "--option", "start_rating=nan"],
        ["evaluate", "--file", str(good), "--system", "p4p", "--option",
         "k_values=999999999999999999999999999999,50,30"],
        ["evaluate", "--file", str(mixed)],
    ], tmp_path)
    for done in runs:
        assert done.returncode == 2, done
        assert done.stdout == ""
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith("matchlobby evaluate: ")
    messages = [d.stderr for d in runs]
    assert f"{bad}:3: score_a is not a whole number" in messages[0]
    assert "unknown system 'chess'" in messages[1]
    assert "--option tau=0.5: fibs has no option 'tau'" in messages[2]
    assert "--option experience_includes_match=maybe: " in messages[3]
    assert "--option tau=0.5: name the --system" in messages[4]
    assert "--option k: write it as KEY=VALUE" in messages[5]
    assert "--option start_rating=nan: start_rating must be a number between" in messages[6]
    assert f"{good}: a system cannot rate it with these options: " in messages[7]
    assert f"no installed system can rate this file: cas: {mixed}:2: cas has no doubles" in \
        messages[8]
    assert f"p4p: {mixed}:3: singles and doubles are mixed" in messages[8]


def test_rate_reproduces_a_configured_ladder_offline(tmp_path: Path) -> None:
    """A P4P ladder with K = 16: through --config/--ladder and through --option alike."""
    path = tmp_path / "cup.csv"
    path.write_text(results_text(["Cup,2026-03-01,a,b,10,5,,", "Cup,2026-03-01,c,d,10,5,,"]),
                    encoding="utf-8")
    config = tmp_path / "lobby.toml"
    config.write_text('[[ladders]]\nname = "club"\nsystem = "p4p"\nk_values = [16, 16, 16]\n',
                      encoding="utf-8")
    typo = tmp_path / "typo.toml"
    typo.write_text('[[ladders]]\nname = "club"\nsystem = "p4p"\nk_value = [16, 16, 16]\n',
                    encoding="utf-8")
    laddered, optioned, plain, missing, refused, mistyped = run_many([
        ["rate", "--config", str(config), "--ladder", "club", str(path), "--format", "json"],
        ["rate", "p4p", str(path), "--option", "k_values=16,16,16", "--format", "json"],
        ["rate", "p4p", str(path), "--format", "json"],
        ["rate", "--config", str(config), "--ladder", "chess", str(path)],
        ["rate", "--config", str(config), "--ladder", "club", str(path), "--option", "k_values=0"],
        ["rate", "--config", str(typo), "--ladder", "club", str(path)],
    ], tmp_path)

    def ratings(done: Completed) -> dict[str, int]:
        return {r["player"]: r["rating"] for r in report(done)["players"]}

    assert ratings(laddered) == ratings(optioned) == {"a": 258, "c": 258, "b": 242, "d": 242}
    assert ratings(plain) == {"a": 290, "c": 290, "b": 210, "d": 210}  # K 80
    assert missing.returncode == 2 and "--ladder chess: no such ladder" in missing.stderr
    assert refused.returncode == 2 and "--option k_values=0: " in refused.stderr
    assert mistyped.returncode == 2 and mistyped.stdout == ""
    assert mistyped.stderr.startswith(f"matchlobby: {typo}: ladders[0] (club): unknown key "
                                      "'k_value' for a ladder of system 'p4p'; its keys: ")


def test_option_values_read_as_in_the_configuration() -> None:
    assert [parse_value(v) for v in ("true", "false", "16", "0.5", "40,30,20", "[40]", "[]",
                                     "Newcomer", '"12"')] == [
        True, False, 16, 0.5, [40, 30, 20], [40], [], "Newcomer", "12"]


def test_win_rates_learn_when_the_first_system_does(tmp_path: Path) -> None:
    """One event: ČAS rates it at the close, so its win rates know nothing before then either
    (0.5 every game, the baseline's scores); with FIBS first they learn game by game."""
    path = tmp_path / "cup.csv"
    path.write_text(results_text([
        "Cup,2026-03-01,ann,bob,3,0,3,", "Cup,2026-03-01,ann,cid,3,1,3,",
        "Cup,2026-03-01,ann,bob,3,2,3,", "Cup,2026-03-01,bob,cid,3,0,3,"]), encoding="utf-8")
    cas_first, fibs_first = run_many([
        ["evaluate", "--file", str(path), "--system", "cas", "--system", "fibs",
         "--format", "json"],
        ["evaluate", "--file", str(path), "--system", "fibs", "--system", "cas",
         "--format", "json"],
    ], tmp_path)
    at_close = rows(cas_first)
    assert at_close["win_rate{}"]["games"] == 4
    assert {**at_close["win_rate{}"], "system": "baseline"} == at_close["baseline{}"]
    # game by game, (wins + 1) / (games + 2): 1/2 v 1/2, 2/3 v 1/2, 3/4 v 1/3, 1/4 v 1/3
    said = [0.5, 4 / 7, 9 / 13, 3 / 7]  # side A won all four
    each = rows(fibs_first)["win_rate{}"]
    assert abs(each["log_loss"] - sum(-math.log(p) for p in said) / 4) < 1e-9
    assert abs(each["brier"] - sum((1 - p) ** 2 for p in said) / 4) < 1e-9
