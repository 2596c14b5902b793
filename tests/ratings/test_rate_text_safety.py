"""Text in and out of ``matchlobby rate``: event names compared in NFC, CSV a spreadsheet
will not run.

A spreadsheet opening the CSV output treats a cell starting with ``=``, ``+``, ``-``, ``@``,
tab or carriage return as a formula; player names may start with ``-`` (``-A1`` would read
cell A1). Such text cells get a leading ``'``; numbers, negative ones included, are written
as they are and still parse as the same numbers.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from typing import Any

from testkit.cli import Completed, RunRate, WriteResults, run_many

from ratings_plugin.commands.rate import spreadsheet_safe
from server.api.results_file import read_results
from server.api.spreadsheet import escape, unescape

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
NUMERIC = {"rank", "of", "rating", "games", "experience", "paluba", "dansa", "peklo"}


def ok(result: Completed) -> str:
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def looks_like_a_formula(cell: str) -> bool:
    return cell.lstrip(" ").startswith(FORMULA_START)


def check_csv_against_json(as_csv: str, ladder: dict[str, Any]) -> tuple[int, int]:
    """Every cell: numbers parse to the JSON value; text is the JSON value, escaped when it
    would start a formula. Returns how many cells were escaped and how many were negative."""
    header, *body = list(csv.reader(io.StringIO(as_csv)))
    assert len(body) == len(ladder["players"])
    escaped = negative = 0
    for cells, row in zip(body, ladder["players"], strict=True):
        for column, cell in zip(header, cells, strict=True):
            value = row[column]
            if isinstance(value, bool):
                assert cell == ("true" if value else "false")
            elif isinstance(value, int | float):
                assert column in NUMERIC, column
                assert float(cell) == value, (column, cell, value)  # still a number
                negative += value < 0
            else:
                assert not looks_like_a_formula(cell), (column, cell)
                if looks_like_a_formula(str(value)):
                    assert cell == "'" + str(value), (column, cell)
                    escaped += 1
                else:
                    assert cell == str(value), (column, cell)
    return escaped, negative


def test_formula_looking_names_are_escaped_and_numbers_stay_numbers(write_results: WriteResults) -> None:
    """P4P: ``-A1`` loses eight games in one event from 250 points: a negative rating."""
    rows = [f"Cup,2026-03-14,{w},-A1,10,3,," for w in ("-2", "_x", "plain", "-cmd", "b-c", "-", "z", "y")]
    rows += ["Cup,2026-03-14,-2,plain,10,4,,", "Cup,2026-03-14,_x,-cmd,10,5,,"]
    path = write_results(rows)
    as_json, as_csv = run_many([["rate", "p4p", str(path), "--format", f] for f in ("json", "csv")],
                               path.parent)
    ladder = json.loads(ok(as_json))
    by_name = {r["player"]: r for r in ladder["players"]}
    assert by_name["-A1"]["rating"] < 0, by_name["-A1"]
    escaped, negative = check_csv_against_json(ok(as_csv), ladder)
    assert escaped == 4  # -2, -cmd, -, -A1 (not _x, b-c)
    assert negative >= 1
    assert f",'-A1,{by_name['-A1']['rating']}," in ok(as_csv)  # escaped name, bare number


def test_every_system_escapes_the_same_way(write_results: WriteResults) -> None:
    rows = ["E,2026-03-14,-a,b,5,3,3,", "E,2026-03-14,-b,c,2,7,5,", "E,2026-03-14,a,-a,9,2,1,"]
    path = write_results(rows)
    runs = run_many([["rate", s, str(path), "--format", f] for s in ("fibs", "p4p", "cas")
                     for f in ("json", "csv")], path.parent)
    for as_json, as_csv in zip(runs[::2], runs[1::2], strict=True):
        escaped, _ = check_csv_against_json(ok(as_csv), json.loads(ok(as_json)))
        assert escaped == 2  # -a and -b


def test_the_escaping_rule() -> None:
    """Every start OWASP names, after spaces too; text only, never a number or an inert text."""
    for text in ("=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1", " =1", "  @x", "-", "=HYPERLINK(\"x\")"):
        assert spreadsheet_safe(text, text) == "'" + text, text
    for text in ("a=1", "_x", "1-2", "Newcomer", "", " ", "'a", "b-c", "''"):
        assert spreadsheet_safe(text, text) == text, text
    # a text whose "'" a reader would take for the escape is escaped too
    for text in ("'=1", "' -x", "''@x"):
        assert spreadsheet_safe(text, text) == "'" + text, text
    assert spreadsheet_safe(-35, "-35") == "-35"
    assert spreadsheet_safe(-1.5, "-1.5") == "-1.5"
    assert spreadsheet_safe(True, "true") == "true"


def test_event_names_are_grouped_in_nfc(write_results: WriteResults, run_rate: RunRate) -> None:
    """Two spellings of one name (composed and decomposed accents) are one event: rated as the
    same file with one spelling is."""
    composed = "Café Dvořák"
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    games = [("a", "b", 10, 4), ("a", "c", 10, 6), ("b", "c", 3, 10), ("c", "d", 10, 2)]
    mixed = write_results([f"{composed if i % 2 else decomposed},2026-03-14,{x},{y},{s},{t},,"
                           for i, (x, y, s, t) in enumerate(games)], name="mixed.csv")
    single = write_results([f"{composed},2026-03-14,{x},{y},{s},{t},," for x, y, s, t in games],
                           name="single.csv")
    split = write_results([f"{composed if i < 2 else 'Other'},2026-03-14,{x},{y},{s},{t},,"
                           for i, (x, y, s, t) in enumerate(games)], name="split.csv")
    for system in ("p4p", "cas"):
        one = json.loads(ok(run_rate(system, single, "--format", "json")))
        assert json.loads(ok(run_rate(system, mixed, "--format", "json"))) == one
        # the check can tell: two events rate differently from one
        assert json.loads(ok(run_rate(system, split, "--format", "json"))) != one


READ_BACK = ["=1+1", "-A1-B1x", "'=1", "''=1", "' -x", "'a", "''", "'", "x'", " =1", "\t=1",
             "@", "-", "plain", "", "'\r'", "=HYPERLINK(\"https://x.example/\",\"x\")"]


def test_escaped_text_reads_back_exactly() -> None:
    """:func:`unescape` undoes :func:`escape`; a cell the escape did not touch reads as it is."""
    for text in READ_BACK:
        cell = escape(text)
        assert not looks_like_a_formula(cell), cell
        assert unescape(cell) == text, (text, cell)
        if cell == text:
            assert unescape(text) == text


def test_a_results_file_of_escaped_cells_is_read_as_written(write_results: WriteResults,
                                                           run_rate: RunRate) -> None:
    """What the web page exports (every text cell escaped) rates as the file without escapes."""
    rows = [("=Cup", "-a", "b", 10, 3), ("=Cup", "-2", "-a", 4, 10), ("=Cup", "b", "-2", 10, 9)]
    plain = write_results([f"{e},2026-03-14,{a},{b},{x},{y},," for e, a, b, x, y in rows],
                          name="plain.csv")
    escaped = write_results([",".join([escape(e), "2026-03-14", escape(a), escape(b), str(x),
                                       str(y), "", ""]) for e, a, b, x, y in rows],
                            name="escaped.csv")
    assert "'-2" in escaped.read_text() and "'=Cup" in escaped.read_text()
    assert [(r.event, r.game) for r in read_results(escaped)] == [
        (r.event, r.game) for r in read_results(plain)]
    for system in ("p4p", "cas"):
        assert ok(run_rate(system, escaped, "--format", "json")) == ok(
            run_rate(system, plain, "--format", "json"))
