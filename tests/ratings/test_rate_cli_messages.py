"""``matchlobby rate`` names the real problem: an unterminated quote (on the line it opens) and
sides of different sizes (the results-file rules, which ``event import`` shares)."""

from __future__ import annotations

from pathlib import Path

import pytest
from testkit.cli import run_cli
from testkit.results import HEADER

from server.api.results_file import ResultsError, parse_results

GOOD = [f"Cup,2026-03-14,pa{i}+pb{i},ra{i}+rb{i},10,{i},," for i in range(3)]


@pytest.mark.parametrize(("system", "rows", "where", "problem"), [
    # the quote opened on line 2 swallows every line after it
    ("p4p", ['Cup,2026-03-14,"ann+bob,cid+dan,10,3,,', *GOOD], 2,
     "unterminated quote: a field opened with '\"' is never closed"),
    # ... also when it is the last line, and in any column
    ("cas", ["Open,2026-03-14,ann,bob,400,380,,", 'Open,2026-03-14,cid,dan,400,"380,,'], 3,
     "unterminated quote: a field opened with '\"' is never closed"),
    ("cas", ['"Open,2026-03-14,ann,bob,400,380,,'], 2,
     "unterminated quote: a field opened with '\"' is never closed"),
    ("p4p", [*GOOD, "Cup,2026-03-14,ann+bob,cid,10,3,,"], 5,
     "the sides differ in size: 'ann+bob' against 'cid'"),
    ("p4p", ["Cup,2026-03-14,ann,cid+dan,10,3,,", *GOOD], 2,
     "the sides differ in size: 'ann' against 'cid+dan'"),
    ("fibs", ["Night,2026-03-14,ann+bob,cid,3,1,3,"], 2,
     "the sides differ in size: 'ann+bob' against 'cid'"),
])
def test_the_message_names_the_problem_and_its_line(tmp_path: Path, system: str,
                                                    rows: list[str], where: int,
                                                    problem: str) -> None:
    (tmp_path / "results.csv").write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    done = run_cli(["rate", system, "results.csv"], tmp_path)
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert done.stderr.strip() == f"matchlobby rate: results.csv:{where}: {problem}"


def test_a_quoted_cell_closed_on_a_later_line_is_judged_by_its_content() -> None:
    """A quote that is closed is no unterminated quote: the cell's line break is what is
    wrong (free text holds no control characters)."""
    text = f'{HEADER}\n"Brno\nOpen",2026-03-14,ann,bob,400,380,,\n'
    with pytest.raises(ResultsError, match=r"^results.csv:3: event contains a control character"):
        parse_results(text)
    # and quoting that is closed on its line is read as ever
    (row,) = parse_results(f'{HEADER}\n"Brno, Open",2026-03-14,"ann","bob",400,380,,\n')
    assert (row.line, row.event, row.game.side_a) == (2, "Brno, Open", ("ann",))


@pytest.mark.parametrize("delimiter", [";", "\t"])
def test_a_spreadsheets_semicolon_or_tab_separated_file_reads_as_the_comma_one(
        delimiter: str) -> None:
    """A spreadsheet where the comma is the decimal sign (Czech, Hungarian) saves CSV with
    semicolons; "text, tab separated" with tabs: both read as the comma file does, commas
    inside a field (an event's name) staying text."""
    rows = [["event", "date", "side_a", "side_b", "score_a", "score_b", "length", "rated"],
            ["Brno, Open", "2026-03-14", "ann", "Bob", "400", "380", "", ""],
            ["Brno, Open", "2026-03-14", "bob", "cid", "3", "1", "", ""]]

    def text(d: str) -> str:
        return "".join(d.join(f'"{c}"' if d in c or "," in c else c for c in row) + "\n"
                       for row in rows)

    assert parse_results(text(delimiter)) == parse_results(text(","))
    (first, second) = parse_results(text(delimiter))
    assert first.event == "Brno, Open" and second.game.side_a == ("Bob",)


def test_a_header_no_delimiter_splits_says_how_to_separate_the_columns() -> None:
    with pytest.raises(ResultsError, match="separate the columns with commas"):
        parse_results("event|date|side_a|side_b|score_a|score_b\nCup|2026-03-14|a|b|1|0\n")
