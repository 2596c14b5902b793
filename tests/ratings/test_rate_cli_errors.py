"""Bad input to ``matchlobby rate``: one test per problem.

Every case must exit with status 2, print nothing on standard output, and print one line
on standard error that names the file, the line (where there is one) and the problem, in
the form ``results.csv:7: score_a is not a whole number: 'abc'``. Files are given by a
relative name, so the location at the start of the message can be checked exactly.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from testkit.cli import Completed, run_many
from testkit.results import HEADER

from ratings_plugin.commands.rate import run

GOOD_SINGLES = [f"Open,2026-03-14,player{i},rival{i},{400 + i},{380 + i},," for i in range(5)]
GOOD_DOUBLES = [f"Cup,2026-03-14,pa{i}+pb{i},ra{i}+rb{i},10,{i},," for i in range(5)]


def body(bad_row: str, good: list[str] = GOOD_SINGLES, header: str = HEADER) -> bytes:
    """A file whose line 7 is ``bad_row`` (line 1 header, lines 2–6 good rows)."""
    return ("\n".join([header, *good, bad_row]) + "\n").encode("utf-8")


@dataclass(frozen=True)
class Case:
    system: str
    content: bytes | None  # None: no file is written
    where: str  # "results.csv:7", "results.csv" or "" for problems outside the file
    problem: str  # a fragment of the message after the location
    args: tuple[str, ...] = field(default=())
    name: str = "results.csv"


CASES: dict[str, Case] = {
    "missing column": Case(
        "cas",
        body("Open,2026-03-14,a,b,400,,", header="event,date,side_a,side_b,score_a,length,rated",
             good=[f"Open,2026-03-14,p{i},q{i},{i},," for i in range(5)]),
        "results.csv:1", "missing column(s): score_b",
    ),
    "unknown column": Case(
        "cas",
        body("Open,2026-03-14,a,b,400,300,,,red", header=HEADER + ",colour",
             good=[r + ",blue" for r in GOOD_SINGLES]),
        "results.csv:1", "unknown column(s): 'colour'",
    ),
    "empty name": Case("cas", body("Open,2026-03-14,,bob,400,300,,"), "results.csv:7", "empty player name"),
    "invalid name": Case(
        "cas", body("Open,2026-03-14,bob smith,ann,400,300,,"), "results.csv:7",
        "invalid player name 'bob smith'",
    ),
    "player on both sides": Case(
        "cas", body("Open,2026-03-14,ann,Ann,400,300,,"), "results.csv:7", "a player is on both sides",
    ),
    "doubles side of three": Case(
        "p4p", body("Cup,2026-03-14,ann+bob+cid,dan+eve,10,3,,", good=GOOD_DOUBLES),
        "results.csv:7", "a side has at most 2 players: 'ann+bob+cid'",
    ),
    "negative score": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,-3,,"), "results.csv:7", "score_b is negative: '-3'",
    ),
    "non-integer score": Case(
        "cas", body("Open,2026-03-14,ann,bob,abc,300,,"), "results.csv:7",
        "score_a is not a whole number: 'abc'",
    ),
    "draw in fibs": Case(
        "fibs", body("Night,2026-03-14,ann,bob,3,3,5,"), "results.csv:7", "fibs has no draws",
    ),
    "draw in p4p": Case("p4p", body("Cup,2026-03-14,ann,bob,7,7,,"), "results.csv:7", "p4p has no draws"),
    "bad date": Case(
        "cas", body("Open,2026-02-30,ann,bob,400,300,,"), "results.csv:7",
        "date is not a YYYY-MM-DD date: '2026-02-30'",
    ),
    "zero length": Case(
        "fibs", body("Night,2026-03-14,ann,bob,3,1,0,"), "results.csv:7", "length must be positive: '0'",
    ),
    "unknown system": Case("chess", body("Open,2026-03-14,ann,bob,400,300,,"), "", "unknown system 'chess'"),
    "empty file": Case("cas", b"", "results.csv", "the file is empty"),
    "not utf-8": Case(
        "cas", body("EVENT,2026-03-14,ann,bob,400,300,,").replace(b"EVENT", "Jérôme".encode("latin-1")),
        "results.csv:7", "not UTF-8",
    ),
    "singles and doubles mixed in p4p": Case(
        "p4p", body("Cup,2026-03-14,ann,bob,10,3,,", good=GOOD_DOUBLES),
        "results.csv:7", "singles and doubles are mixed",
    ),
    # free text (server/api/text.py), through the real command
    "event name with a right-to-left override": Case(
        "cas", body("Open\u202e,2026-03-14,ann,bob,400,300,,"), "results.csv:7",
        "event contains an invisible formatting character (U+202E)",
    ),
    "reason of 60 KB": Case(
        "cas", body(f"Open,2026-03-14,ann,bob,400,300,,no:{'r' * 60_000}"), "results.csv:7",
        "the reason in rated is longer than 200 characters",
    ),
    "reason with a left-to-right isolate": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,,no:void\u2066ed"), "results.csv:7",
        "the reason in rated contains an invisible formatting character (U+2066)",
    ),    "event name with a combining grapheme joiner": Case(
        "cas", body("Op\u034fen,2026-03-14,ann,bob,400,300,,"), "results.csv:7",
        "event contains an invisible character (U+034F)",
    ),
    "reason that is a Hangul filler": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,,no:\u3164"), "results.csv:7",
        "the reason in rated contains an invisible character (U+3164)",
    ),
}

# Further problems beyond the list, checked in-process through the command's body
# (ratings_plugin.commands.rate.run) to keep the suite fast; same status, output and message.
MORE_CASES: dict[str, Case] = {
    "ISO week date": Case(
        "cas", body("Open,2026-W11-6,ann,bob,400,300,,"), "results.csv:7",
        "date is not a YYYY-MM-DD date: '2026-W11-6'",
    ),
    "date in basic ISO format": Case(
        "cas", body("Open,20260314,ann,bob,400,300,,"), "results.csv:7",
        "date is not a YYYY-MM-DD date: '20260314'",
    ),
    "negative length": Case(
        "fibs", body("Night,2026-03-14,ann,bob,3,1,-5,"), "results.csv:7", "length must be positive: '-5'",
    ),
    "date in another format": Case(
        "cas", body("Open,14.3.2026,ann,bob,400,300,,"), "results.csv:7",
        "date is not a YYYY-MM-DD date: '14.3.2026'",
    ),
    "draw in p4p doubles": Case(
        "p4p", body("Cup,2026-03-14,ann+bob,cid+dan,7,7,,", good=GOOD_DOUBLES),
        "results.csv:7", "p4p has no draws",
    ),
    "fractional score": Case(
        "p4p", body("Cup,2026-03-14,ann,bob,4.5,3,,"), "results.csv:7",
        "score_a is not a whole number: '4.5'",
    ),
    "player on both sides in doubles": Case(
        "p4p", body("Cup,2026-03-14,ann+bob,bob+cid,10,3,,", good=GOOD_DOUBLES),
        "results.csv:7", "a player is on both sides",
    ),
    "name longer than 20": Case(
        "cas", body(f"Open,2026-03-14,{'x' * 21},ann,400,300,,"), "results.csv:7",
        f"invalid player name '{'x' * 21}'",
    ),
    "empty name in a doubles side": Case(
        "p4p", body("Cup,2026-03-14,ann+,bob+cid,10,3,,", good=GOOD_DOUBLES),
        "results.csv:7", "empty player name in side 'ann+'",
    ),
    "doubles in fibs": Case(
        "fibs", body("Night,2026-03-14,ann+bob,cid+dan,3,1,1,"), "results.csv:7", "fibs has no doubles",
    ),
    "doubles in cas": Case(
        "cas", body("Open,2026-03-14,ann+bob,cid+dan,400,300,,"), "results.csv:7", "cas has no doubles",
    ),
    "header only": Case("cas", (HEADER + "\n").encode(), "results.csv", "the file has no results"),
    "missing file": Case("cas", None, "results.csv", "cannot read the file"),
    "wrong number of fields": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,"), "results.csv:7", "expected 8 fields, found 7",
    ),
    "bad rated value": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,,maybe"), "results.csv:7",
        "rated must be empty or 'no:REASON': 'maybe'",
    ),
    "empty event": Case("cas", body(",2026-03-14,ann,bob,400,300,,"), "results.csv:7", "event is empty"),
    # free text (server/api/text.py), more cases
    "event name with a zero-width space": Case(
        "cas", body("Op\u200ben,2026-03-14,ann,bob,400,300,,"), "results.csv:7",
        "event contains an invisible formatting character (U+200B)",
    ),
    "event name with an escape sequence": Case(
        "cas", body("Open\x1b[2J,2026-03-14,ann,bob,400,300,,"), "results.csv:7",
        "event contains a control character (U+001B)",
    ),
    "event name longer than 100": Case(
        "cas", body(f"{'E' * 101},2026-03-14,ann,bob,400,300,,"), "results.csv:7",
        "event is longer than 100 characters",
    ),
    "reason longer than 200": Case(
        "cas", body(f"Open,2026-03-14,ann,bob,400,300,,no:{'r' * 201}"), "results.csv:7",
        "the reason in rated is longer than 200 characters",
    ),
    "reason with a byte-order mark": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,,no:\ufeffvoid"), "results.csv:7",
        "the reason in rated contains an invisible formatting character (U+FEFF)",
    ),
    "reason with a tab": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,,no:void\ted"), "results.csv:7",
        "the reason in rated contains a control character (U+0009)",
    ),
    "bad length": Case(
        "fibs", body("Night,2026-03-14,ann,bob,3,1,long,"), "results.csv:7",
        "length is not a whole number or 'unlimited': 'long'",
    ),
    "bad --as-of": Case(
        "cas", body("Open,2026-03-14,ann,bob,400,300,,"), "--as-of", "date is not a YYYY-MM-DD date: 'soon'",
        args=("--as-of", "soon"),
    ),
}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Completed]:
    """Run every case once, concurrently, each in its own directory as ``results.csv``."""
    root = tmp_path_factory.mktemp("bad_input")
    commands: list[list[str]] = []
    for number, case in enumerate(CASES.values()):
        directory = root / f"case{number}"
        directory.mkdir()
        if case.content is not None:
            (directory / case.name).write_bytes(case.content)
        commands.append(["rate", case.system, str(Path(f"case{number}") / case.name),
                         "--format", "json", *case.args])
    results = run_many(commands, root)
    return dict(zip(CASES, results, strict=True))


def expected_prefix(case: Case, number: int) -> str:
    """The message's start; the file is named as given on the command line."""
    if not case.where:
        return "matchlobby rate: "
    where = case.where.replace("results.csv", str(Path(f"case{number}") / case.name))
    return f"matchlobby rate: {where}: "


@pytest.mark.parametrize("case_id", list(CASES))
def test_bad_input(outcomes: dict[str, Completed], case_id: str) -> None:
    case = CASES[case_id]
    result = outcomes[case_id]
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr  # one message, no traceback
    message = lines[0]
    assert message.startswith(expected_prefix(case, list(CASES).index(case_id))), message
    assert case.problem in message


@pytest.mark.parametrize("case_id", list(MORE_CASES))
def test_more_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case_id: str) -> None:
    case = MORE_CASES[case_id]
    if case.content is not None:
        (tmp_path / case.name).write_bytes(case.content)
    monkeypatch.chdir(tmp_path)
    as_of = case.args[1] if case.args[:1] == ("--as-of",) else None
    out, err = io.StringIO(), io.StringIO()
    assert run(case.system, case.name, as_of, "json", out, err) == 2
    assert out.getvalue() == ""
    lines = err.getvalue().splitlines()
    assert len(lines) == 1
    prefix = f"matchlobby rate: {case.where}: " if case.where else "matchlobby rate: "
    assert lines[0].startswith(prefix), lines[0]
    assert case.problem in lines[0]


def test_message_format_matches_design_example(tmp_path: Path) -> None:
    """The exact form of the issue's example, with the file given by its plain name."""
    rows = [f"Open,2026-03-14,p{i},q{i},{400 + i},{380 + i},," for i in range(5)]
    (tmp_path / "results.csv").write_bytes(body("Open,2026-03-14,ann,bob,abc,300,,", good=rows))
    (result,) = run_many([["rate", "cas", "results.csv"]], tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "matchlobby rate: results.csv:7: score_a is not a whole number: 'abc'\n"


def test_good_file_of_the_same_shape_is_accepted(tmp_path: Path) -> None:
    """The cases' good rows really are good: the failures come from line 7 alone."""
    (tmp_path / "singles.csv").write_bytes(body(GOOD_SINGLES[0]))
    (tmp_path / "doubles.csv").write_bytes(body(GOOD_DOUBLES[0], good=GOOD_DOUBLES))
    results = run_many(
        [["rate", system, "singles.csv"] for system in ("fibs", "p4p", "cas")]
        + [["rate", "p4p", "doubles.csv"]],
        tmp_path,
    )
    for result in results:
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert result.stdout
