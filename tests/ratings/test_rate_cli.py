"""``matchlobby rate`` run as a real process on results files (DESIGN.md "Results file")."""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
from datetime import date, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit.cli import Completed, RunRate, WriteResults, run_many
from testkit.results import results_text

from ratings_plugin.commands.rate import rate_file
from server.cli import build_parser, plugin_cli_commands

BASE_COLUMNS = ["rank", "player", "rating", "games", "active"]
EXTRA = {"fibs": ["experience"], "p4p": ["class"], "cas": ["paluba", "dansa", "peklo"]}


def ladder_json(result: Completed) -> dict[str, Any]:
    return result.json()


def in_process(system: str, path: Path, as_of: str | None = None) -> dict[str, Any]:
    """The same ladder object without a process (for the finer points of the file format)."""
    return rate_file(system, str(path), as_of)


def by_player(ladder: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["player"]: row for row in ladder["players"]}


# --- ranks, activity, as-of -----------------------------------------------------------


def test_equal_ratings_share_a_rank(write_results: WriteResults, run_rate: RunRate) -> None:
    # All new (250, K 80, GW ½ from pre-tournament points): each win +40, each loss −40.
    path = write_results([
        "Cup,2026-03-01,a,b,10,5,,",
        "Cup,2026-03-01,a,c,10,5,,",
        "Cup,2026-03-01,b,d,10,5,,",
        "Cup,2026-03-01,c,d,10,5,,",
    ])
    ladder = ladder_json(run_rate("p4p", path, "--format", "json"))
    rows = ladder["players"]
    assert [r["player"] for r in rows] == ["a", "b", "c", "d"]
    assert [r["rating"] for r in rows] == [330, 250, 250, 170]
    assert [r["rank"] for r in rows] == [1, 2, 2, 4]
    assert all(r["of"] == 4 for r in rows)


def test_fibs_ties_share_a_rank(write_results: WriteResults) -> None:
    # Two separate pairs of new players: both winners +9.98, both losers −9.98.
    path = write_results(["Night,2026-03-01,a,b,1,0,1,", "Night,2026-03-01,c,d,0,1,1,"])
    rows = in_process("fibs", path)["players"]
    assert [(r["player"], r["rank"]) for r in rows] == [("a", 1), ("d", 1), ("b", 3), ("c", 3)]


def inactivity_file(write_results: WriteResults) -> Path:
    return write_results([
        "Old Cup,2024-01-01,old1,old2,10,5,,",
        "New Cup,2026-03-01,a,b,10,5,,",
    ])


def test_inactive_players_come_after_active_ones(write_results: WriteResults, run_rate: RunRate) -> None:
    ladder = ladder_json(run_rate("p4p", inactivity_file(write_results), "--format", "json"))
    assert ladder["as_of"] == "2026-03-01"  # the latest date in the file
    rows = ladder["players"]
    assert [(r["player"], r["rating"], r["active"], r["rank"]) for r in rows] == [
        ("a", 290, True, 1),
        ("b", 210, True, 2),
        ("old1", 290, False, 3),  # as strong as a, but inactive: after every active player
        ("old2", 210, False, 4),
    ]


def test_as_of_option_changes_only_the_order(write_results: WriteResults, run_rate: RunRate) -> None:
    ladder = ladder_json(run_rate("p4p", inactivity_file(write_results), "--format", "json",
                                  "--as-of", "2024-12-01"))
    assert ladder["as_of"] == "2024-12-01"
    rows = ladder["players"]
    assert all(r["active"] for r in rows)
    assert [(r["player"], r["rating"], r["rank"]) for r in rows] == [
        ("a", 290, 1), ("old1", 290, 1), ("b", 210, 3), ("old2", 210, 3),
    ]


@pytest.mark.parametrize(("days", "active"), [(1, True), (364, True), (366, False), (1000, False)])
def test_inactivity_is_365_days(write_results: WriteResults, days: int, active: bool) -> None:
    as_of = date(2026, 3, 1)
    last = (as_of - timedelta(days=days)).isoformat()
    path = write_results([f"Early,{last},x,y,10,5,,", "Late,2026-03-01,a,b,10,5,,"])
    rows = by_player(in_process("p4p", path))
    assert rows["x"]["active"] is active
    assert rows["a"]["active"] is True


def test_default_as_of_is_latest_date_in_file_not_last_row(write_results: WriteResults) -> None:
    path = write_results([
        "B,2026-05-02,a,b,3,1,,",
        "A,2026-04-01,c,d,3,1,,",
    ])
    assert in_process("cas", path)["as_of"] == "2026-05-02"
    # "The latest date in the file" includes a row that is not rated.
    later = write_results(["B,2026-05-02,a,b,3,1,,", "C,2026-06-01,c,d,3,1,,no:void"], name="later.csv")
    assert in_process("cas", later)["as_of"] == "2026-06-01"


def test_unrated_game_never_counts_for_activity(write_results: WriteResults) -> None:
    # x's only recent game is unrated, so x is still inactive (no *rated* game in 365 days).
    path = write_results([
        "Old,2024-01-01,x,y,10,5,,",
        "New,2026-03-01,a,b,10,5,,",
        "New,2026-03-01,x,a,10,5,,no:forfeit",
    ])
    rows = by_player(in_process("p4p", path))
    assert rows["x"]["active"] is False
    assert rows["x"]["games"] == 1


# --- what is and is not rated ----------------------------------------------------------


def test_rows_marked_no_reason_rate_nothing(write_results: WriteResults, run_rate: RunRate) -> None:
    path = write_results([
        "Cup,2026-03-01,a,b,10,5,,",
        "Cup,2026-03-01,c,d,10,5,,no:forfeit",
        "Cup,2026-03-01,a,b,10,5,,no:agreed result",
        "Cup,2026-03-01,b,a,10,5,,no:split prize",
    ])
    rows = by_player(ladder_json(run_rate("p4p", path, "--format", "json")))
    assert set(rows) == {"a", "b"}  # c and d have no rated game
    assert (rows["a"]["rating"], rows["a"]["games"]) == (290, 1)
    assert (rows["b"]["rating"], rows["b"]["games"]) == (210, 1)


def test_unrated_draw_is_accepted_in_fibs(write_results: WriteResults) -> None:
    path = write_results(["Night,2026-03-01,a,b,1,0,1,", "Night,2026-03-01,a,b,0,0,1,no:aborted"])
    rows = by_player(in_process("fibs", path))
    assert rows["a"]["experience"] == 1


def test_unlimited_fibs_match_is_not_rated(write_results: WriteResults, run_rate: RunRate) -> None:
    path = write_results([
        "Night,2026-03-01,alice,bob,9,4,unlimited,",
        "Night,2026-03-01,carol,dave,1,0,,",  # empty length = 1
        "Night,2026-03-01,alice,carol,0,3,UNLIMITED,",
    ])
    rows = by_player(ladder_json(run_rate("fibs", path, "--format", "json")))
    assert set(rows) == {"carol", "dave"}
    assert rows["carol"]["rating"] == pytest.approx(1509.98, abs=1e-9)
    assert rows["dave"]["rating"] == pytest.approx(1490.02, abs=1e-9)
    assert rows["carol"]["experience"] == 1
    assert rows["carol"]["games"] == 1


def test_p4p_with_plus_sides_is_a_doubles_ladder(write_results: WriteResults, run_rate: RunRate) -> None:
    # Event 1: a+b beat c+d (all 250): a, b 290; c, d 210.
    # Event 2: a+c (mean 250) beat b+d (mean 250): GW ½, ±40: a 330, c 250, b 250, d 170.
    path = write_results([
        "Doubles 1,2026-03-01,a+b,c+d,10,6,,",
        "Doubles 2,2026-03-08,a+c,b+d,10,8,,",
    ])
    ladder = ladder_json(run_rate("p4p", path, "--format", "json"))
    rows = ladder["players"]
    assert [(r["player"], r["rating"], r["rank"], r["games"]) for r in rows] == [
        ("a", 330, 1, 2), ("b", 250, 2, 2), ("c", 250, 2, 2), ("d", 170, 4, 2),
    ]
    assert {r["class"] for r in rows} == {"Newcomer"}


def test_p4p_events_use_pre_tournament_points(write_results: WriteResults) -> None:
    # One tournament, a beats b twice: both games at GW ½ from 250 → a 330, b 170.
    path = write_results(["Cup,2026-03-01,a,b,10,5,,", "Cup,2026-03-01,a,b,10,5,,"])
    rows = by_player(in_process("p4p", path))
    assert (rows["a"]["rating"], rows["b"]["rating"]) == (330, 170)


def test_events_are_closed_in_order_of_first_row(write_results: WriteResults) -> None:
    # Rows of event "One" are split by a row of "Two"; "One" is rated first as a whole
    # (a +40 twice → 330; b 170), then "Two" from those points (c 250 beats a 330).
    path = write_results([
        "One,2026-03-01,a,b,10,5,,",
        "Two,2026-03-02,c,a,10,5,,",
        "One,2026-03-01,a,b,10,5,,",
    ])
    rows = by_player(in_process("p4p", path))
    # GW(c) = 1/(10^(80/800) + 1) = 0.4427 → 0.44: c +80·0.56 = 44.8 → 45; a −80·0.56 → −45.
    assert (rows["a"]["rating"], rows["b"]["rating"], rows["c"]["rating"]) == (285, 170, 295)


def test_names_match_ignoring_case_first_spelling_kept(write_results: WriteResults) -> None:
    path = write_results(["Cup,2026-03-01,Alice,bob,10,5,,", "Cup,2026-03-01,ALICE,Bob,10,5,,"])
    rows = by_player(in_process("p4p", path))
    assert set(rows) == {"Alice", "bob"}
    assert rows["Alice"]["games"] == 2


# --- JSON shape per system --------------------------------------------------------------


def test_fibs_json_fields(write_results: WriteResults, run_rate: RunRate) -> None:
    path = write_results(["Night,2026-03-01,alice,bob,3,1,3,"])
    ladder = ladder_json(run_rate("fibs", path, "--format", "json"))
    assert set(ladder) == {"system", "as_of", "columns", "players"}
    assert (ladder["system"], ladder["as_of"]) == ("fibs", "2026-03-01")
    # the columns a client shows, besides rank, player and the active mark: every one a field
    assert [c["key"] for c in ladder["columns"]] == ["rating", "experience", "games"]
    assert ladder["columns"][0] == {"key": "rating", "label": "Rating", "type": "real",
                                    "decimals": 2}
    alice = by_player(ladder)["alice"]
    assert set(alice) == {"rank", "of", "player", "rating", "games", "active", "experience"}
    assert isinstance(alice["experience"], int) and alice["experience"] == 3
    assert isinstance(alice["rating"], float)
    # factor 5 − 3/100 = 4.97, W = ½: 1500 + 4·4.97·√3·½, stored unrounded.
    expected = 1500 + 2 * 4.97 * math.sqrt(3)
    assert alice["rating"] == pytest.approx(expected, abs=1e-9)
    assert alice["rating"] != round(alice["rating"], 2)


def test_p4p_json_fields(write_results: WriteResults, run_rate: RunRate) -> None:
    path = write_results(["Cup,2026-03-01,a,b,10,5,,"])
    ladder = ladder_json(run_rate("p4p", path, "--format", "json"))
    assert set(ladder) == {"system", "as_of", "columns", "players"}
    assert ladder["system"] == "p4p"
    a = by_player(ladder)["a"]
    assert set(a) == {"rank", "of", "player", "rating", "games", "active", "class"}
    assert a["rating"] == 290 and isinstance(a["rating"], int)
    assert a["class"] == "Newcomer"


def test_cas_json_fields(write_results: WriteResults, run_rate: RunRate) -> None:
    path = write_results(["Open,2026-03-14,alice,bob,400,399,,"])
    ladder = ladder_json(run_rate("cas", path, "--format", "json"))
    assert set(ladder) == {"system", "as_of", "columns", "players"}
    assert ladder["system"] == "cas"
    rows = by_player(ladder)
    alice, bob = rows["alice"], rows["bob"]
    assert set(alice) == {"rank", "of", "player", "rating", "games", "active", "paluba", "dansa", "peklo"}
    for row in (alice, bob):
        for key in ("rating", "paluba", "dansa"):
            assert isinstance(row[key], int) and not isinstance(row[key], bool)
        assert isinstance(row["peklo"], float)
    # z = 1.00 (Paluba), Φ(0) = ½ with K 30 (Dansa); alice is the maximum of every method.
    assert (alice["paluba"], alice["dansa"], alice["rating"]) == (101, 1515, 1000)
    assert (bob["paluba"], bob["dansa"], bob["rating"]) == (99, 1485, 0)
    assert alice["peklo"] > 1500 > bob["peklo"]


def test_cas_rating_is_round_of_mean_of_normalised_components(write_results: WriteResults) -> None:
    path = write_results([
        "Open,2026-03-14,a,b,420,380,,",
        "Open,2026-03-14,c,a,390,410,,",
        "Open,2026-03-14,b,c,350,350,,",
        "League day,2026-03-21,c,b,450,300,,",
        "League day,2026-03-21,a,d,300,301,,",
    ])
    rows = in_process("cas", path)["players"]

    def norm(key: str) -> dict[str, Fraction]:
        values = {r["player"]: Fraction(r[key]) for r in rows}
        low, high = min(values.values()), max(values.values())
        return {p: 1000 * (v - low) / (high - low) for p, v in values.items()}

    n_p, n_d, n_k = norm("paluba"), norm("dansa"), norm("peklo")
    for r in rows:
        mean = (n_p[r["player"]] + n_d[r["player"]] + n_k[r["player"]]) / 3
        assert abs(r["rating"] - mean) <= Fraction(1, 2)
        assert r["rating"] == math.floor(mean + Fraction(1, 2))
    ratings = [r["rating"] for r in rows]
    assert ratings == sorted(ratings, reverse=True)


# --- formats ------------------------------------------------------------------------------


def csv_cell_matches(value: Any, cell: str) -> bool:
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    if isinstance(value, int):
        return int(cell) == value
    if isinstance(value, float):
        return float(cell) == value
    return bool(cell == value)


def assert_csv_matches_json(csv_text: str, ladder: dict[str, Any]) -> None:
    system = ladder["system"]
    reader = csv.reader(io.StringIO(csv_text))
    header, *body = list(reader)
    assert header == ["rank", "of", *BASE_COLUMNS[1:], *EXTRA[system]]
    assert len(body) == len(ladder["players"])
    for cells, row in zip(body, ladder["players"], strict=True):
        assert set(header) == set(row)
        for column, cell in zip(header, cells, strict=True):
            assert csv_cell_matches(row[column], cell), (column, cell, row[column])


@pytest.mark.parametrize("system", ["fibs", "p4p", "cas"])
def test_formats_agree(write_results: WriteResults, system: str) -> None:
    """CSV has the same rows and columns as JSON; the table (the default) lists them in order."""
    path = write_results([
        "E1,2025-01-05,a,b,5,3,3,",
        "E1,2025-01-05,c,d,2,7,5,",
        "E2,2026-03-01,a,c,1,4,1,",
        "E2,2026-03-01,b,d,9,2,1,no:forfeit",
    ])
    as_json, as_csv, table = run_many(
        [["rate", system, str(path), "--format", fmt] for fmt in ("json", "csv", "table")], path.parent
    )
    ladder = ladder_json(as_json)
    assert len(ladder["players"]) == 4
    assert as_csv.returncode == 0 and as_csv.stderr == ""
    assert_csv_matches_json(as_csv.stdout, ladder)
    assert table.returncode == 0 and table.stderr == ""
    lines = table.stdout.splitlines()
    assert system in lines[0] and ladder["as_of"] in lines[0]
    assert lines[1].split() == BASE_COLUMNS + EXTRA[system]
    assert [line.split()[1] for line in lines[2:]] == [r["player"] for r in ladder["players"]]
    if system == "fibs":
        assert lines[2].split()[2] == f"{ladder['players'][0]['rating']:.2f}"


def test_table_rounds_undeclared_reals_and_names_the_ladder(write_results: WriteResults) -> None:
    """Glicko-2's volatility (no column of its own) shows six significant digits in the table
    and every digit in JSON; with --ladder the table is headed by the ladder's name."""
    path = write_results(["E1,2026-03-01,ann,bob,3,1,,", "E1,2026-03-01,ann,cid,2,0,,"])
    config = path.parent / "lobby.toml"
    config.write_text('[[ladders]]\nname = "club"\nsystem = "glicko2"\n', encoding="utf-8")
    as_json, table, laddered = run_many([
        ["rate", "glicko2", str(path), "--format", "json"],
        ["rate", "glicko2", str(path)],
        ["rate", "--config", str(config), "--ladder", "club", str(path)],
    ], path.parent)
    ladder = ladder_json(as_json)
    first = ladder["players"][0]
    assert len(repr(first["volatility"])) > 12
    lines = table.stdout.splitlines()
    assert lines[0] == f"glicko2 ladder as of {ladder['as_of']}: 3 players"
    head, row = lines[1].split(), lines[2].split()
    assert row[head.index("volatility")] == f"{first['volatility']:.6g}"
    assert laddered.returncode == 0, laddered.stderr
    assert laddered.stdout.splitlines()[0] == f"club (Glicko-2) as of {ladder['as_of']}: 3 players"
    assert laddered.stdout.splitlines()[1:] == lines[1:]


def test_table_is_the_default_format() -> None:
    args = build_parser(plugin_cli_commands()).parse_args(["rate", "fibs", "results.csv"])
    assert (args.system, args.results, args.format, args.as_of) == ("fibs", "results.csv", "table", None)


# --- JSON/CSV round trip on generated files -----------------------------------------------

NAMES = ["ann", "Bob", "cid", "dee", "eve", "fay"]


@st.composite
def results_files(draw: st.DrawFn) -> tuple[str, list[str]]:
    system = draw(st.sampled_from(["fibs", "p4p", "cas"]))
    doubles = system == "p4p" and draw(st.booleans())
    width = 2 if doubles else 1
    start = date(2024, 1, 1)
    rows = []
    for e in range(draw(st.integers(1, 3))):
        day = start + timedelta(days=draw(st.integers(0, 900)))
        for _ in range(draw(st.integers(1, 5))):
            chosen = draw(st.permutations(NAMES))[: 2 * width]
            side_a, side_b = "+".join(chosen[:width]), "+".join(chosen[width:])
            score_a = draw(st.integers(0, 500))
            unrated = draw(st.integers(0, 5)) == 0
            if system == "cas" or unrated:
                score_b = draw(st.integers(0, 500))
            else:
                delta = draw(st.integers(1, 300))
                score_b = score_a - delta if score_a >= delta and draw(st.booleans()) else score_a + delta
            length = draw(st.sampled_from(["", "1", "3", "7", "unlimited"])) if system == "fibs" else ""
            rated = "no:void" if unrated else ""
            rows.append(f"Event {e},{day.isoformat()},{side_a},{side_b},{score_a},{score_b},{length},{rated}")
    return system, rows


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results_files())
def test_json_and_csv_round_trip(generated: tuple[str, list[str]]) -> None:
    system, rows = generated
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        path = directory / "results.csv"
        path.write_text(results_text(rows), encoding="utf-8")
        expected = rate_file(system, str(path))
        as_json, as_csv = run_many(
            [["rate", system, str(path), "--format", fmt] for fmt in ("json", "csv")], directory
        )
        assert as_json.returncode == 0, as_json.stderr
        assert json.loads(as_json.stdout) == expected
        assert as_csv.returncode == 0, as_csv.stderr
        assert_csv_matches_json(as_csv.stdout, expected)
