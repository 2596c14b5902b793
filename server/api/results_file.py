"""The results file: parsing and validation with file:line messages.

One format serves the lobby's ``event import``, ``matchlobby rate`` and the tests; whether
a row suits a ladder is its rating system's to say.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from server.api.records import Game, valid_name
from server.api.spreadsheet import unescape
from server.api.text import EVENT_NAME_MAX, REASON_MAX, clean_text

REQUIRED = ("event", "date", "side_a", "side_b", "score_a", "score_b")
OPTIONAL = ("length", "rated")
MAX_SIDE = 2
MAX_LENGTH = 1000  # no backgammon match is longer; a larger number is a typing error
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


class ResultsError(ValueError):
    """A problem in a results file; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class ResultRow:
    line: int
    event: str
    game: Game


def _fail(source: str, line: int | None, problem: str) -> ResultsError:
    where = f"{source}:{line}" if line is not None else source
    return ResultsError(f"{where}: {problem}")


def parse_side(text: str) -> tuple[str, ...]:
    """A side is ``name`` or ``name1+name2``; raises ``ValueError`` with the problem."""
    names = tuple(n.strip() for n in text.split("+"))
    if len(names) > MAX_SIDE:
        raise ValueError(f"a side has at most {MAX_SIDE} players: {text!r}")
    for n in names:
        if not n:
            raise ValueError(f"empty player name in side {text!r}")
        if not valid_name(n):
            raise ValueError(f"invalid player name {n!r} (1–20 of A-Z a-z 0-9 _ -)")
    if len({n.casefold() for n in names}) != len(names):
        raise ValueError(f"a player appears twice in side {text!r}")
    return names


def parse_score(text: str, column: str) -> int:
    t = text.strip()
    if not t.isascii() or not t.isdigit():
        if t.startswith("-") and t[1:].isdigit():
            raise ValueError(f"{column} is negative: {text!r}")
        raise ValueError(f"{column} is not a whole number: {text!r}")
    return int(t)


def parse_length(text: str) -> int | None:
    t = text.strip()
    if t == "":
        return 1
    if t.lower() == "unlimited":
        return None
    try:
        value = int(t)
    except ValueError:
        raise ValueError(f"length is not a whole number or 'unlimited': {text!r}") from None
    if value < 1:
        raise ValueError(f"length must be positive: {text!r}")
    if value > MAX_LENGTH:
        raise ValueError(f"length must be at most {MAX_LENGTH}: {text!r}")
    return value


def parse_rated(text: str) -> str | None:
    """Empty means rated; ``no:REASON`` gives the reason it is not (the rule of free text)."""
    t = text.strip()
    if t == "":
        return None
    if t.startswith("no:") and t[3:].strip():
        return clean_text(text.lstrip()[3:], "the reason in rated", REASON_MAX)
    raise ValueError(f"rated must be empty or 'no:REASON': {text[:40]!r}")


def parse_date(text: str) -> date:
    # date.fromisoformat alone also takes "20260314" and "2026-W11-6" (Python 3.11+).
    try:
        if DATE_RE.fullmatch(text.strip()) is None:
            raise ValueError(text)
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"date is not a YYYY-MM-DD date: {text!r}") from None


DELIMITERS = (",", ";", "\t")
"""Commas, or what spreadsheets write where the comma is the decimal sign (Czech, Hungarian:
semicolons) or for "text, tab separated"."""


def delimiter_of(text: str) -> str:
    """The delimiter whose split of the header line names the most known columns (a comma
    when none does: the error then names the columns it read)."""
    header = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
    known = set(REQUIRED + OPTIONAL)

    def named(d: str) -> int:
        return sum(h.strip().strip('"').lower() in known for h in header.split(d))

    return max(DELIMITERS, key=lambda d: (named(d), d == ","))


def parse_results(text: str, source: str = "results.csv") -> list[ResultRow]:
    """Parse the CSV text (comma, semicolon or tab separated: see :func:`delimiter_of`);
    names are matched ignoring case, first spelling kept."""
    if not text.strip():
        raise _fail(source, None, "the file is empty")
    delimiter = delimiter_of(text)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = [h.strip().lower() for h in next(reader)]
    except csv.Error as e:
        raise _fail(source, 1, f"not valid CSV: {e}") from None
    missing = [c for c in REQUIRED if c not in header]
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown and len(header) == 1:
        raise _fail(source, 1, f"unknown column {header[0]!r}: separate the columns with "
                               "commas (semicolons and tabs are read too)")
    if unknown:
        raise _fail(source, 1, f"unknown column(s): {', '.join(map(repr, unknown))}")
    if missing:
        raise _fail(source, 1, f"missing column(s): {', '.join(missing)}")
    if len(set(header)) != len(header):
        raise _fail(source, 1, "a column appears twice")
    spelling: dict[str, str] = {}
    rows: list[ResultRow] = []
    line = 1
    try:
        for record in reader:
            start, line = line + 1, reader.line_num
            if any("\n" in field or "\r" in field for field in record) and _never_closed(
                    text, start):
                raise _fail(source, start, "unterminated quote: a field opened with '\"' is "
                                           "never closed")
            if not any(field.strip() for field in record):
                continue
            if len(record) != len(header):
                raise _fail(source, line, f"expected {len(header)} fields, found {len(record)}")
            cells = {h: unescape(c) for h, c in zip(header, record, strict=True)}
            try:
                rows.append(ResultRow(line, *_parse_row(cells, spelling)))
            except ValueError as e:
                raise _fail(source, line, str(e)) from None
    except csv.Error as e:
        raise _fail(source, line, f"not valid CSV: {e}") from None
    if not rows:
        raise _fail(source, None, "the file has no results")
    return rows


def _never_closed(text: str, start: int) -> bool:
    """Whether a quote opened in the record starting on line ``start`` runs to the end of the
    text (the lenient reader then makes one record of every line after it)."""
    rest = "".join(io.StringIO(text, newline="").readlines()[start - 1:])
    try:
        next(csv.reader(io.StringIO(rest, newline=""), strict=True,
                        delimiter=delimiter_of(text)), None)
    except csv.Error as e:
        return "unexpected end of data" in str(e)
    return False


def _parse_row(cells: dict[str, str], spelling: dict[str, str]) -> tuple[str, Game]:
    if not cells["event"].strip():
        raise ValueError("event is empty")
    event = clean_text(cells["event"], "event", EVENT_NAME_MAX)
    played_on = parse_date(cells["date"])
    side_a = tuple(spelling.setdefault(n.casefold(), n) for n in parse_side(cells["side_a"]))
    side_b = tuple(spelling.setdefault(n.casefold(), n) for n in parse_side(cells["side_b"]))
    if set(side_a) & set(side_b):
        raise ValueError("a player is on both sides")
    if len(side_a) != len(side_b):
        raise ValueError(f"the sides differ in size: {cells['side_a'].strip()!r} against "
                         f"{cells['side_b'].strip()!r}")
    score_a = parse_score(cells["score_a"], "score_a")
    score_b = parse_score(cells["score_b"], "score_b")
    length = parse_length(cells.get("length", ""))
    reason = parse_rated(cells.get("rated", ""))
    return event, Game(side_a, side_b, score_a, score_b, played_on, length, reason)


def read_results(path: str | Path) -> list[ResultRow]:
    """Read and parse a results file; a file that is not UTF-8 is refused."""
    source = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ResultsError(f"{source}: cannot read the file: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise _fail(source, line, "the file is not UTF-8 text") from None
    return parse_results(text, source)


def group_events(rows: Sequence[ResultRow]) -> list[tuple[str, list[Game]]]:
    """Games grouped by event, events in the order of their first row."""
    events: dict[str, list[Game]] = {}
    for r in rows:
        events.setdefault(r.event, []).append(r.game)
    return list(events.items())
