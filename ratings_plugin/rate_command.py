"""``matchlobby rate``: a ladder from a results file, with no server."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ratings_plugin.ladder import LadderBook, LadderOptions
from ratings_plugin.results_file import (
    ResultsError,
    check_for_system,
    group_events,
    parse_date,
    read_results,
)

SYSTEMS = ("fibs", "p4p", "cas")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
EXTRA_COLUMNS = {
    "fibs": ["experience"],
    "p4p": ["class"],
    "cas": ["paluba", "dansa", "peklo"],
}


def rate_file(system: str, path: str, as_of: str | None = None) -> dict[str, Any]:
    """The ladder object printed by ``--format json``; raises ``ResultsError``."""
    if system not in SYSTEMS:
        raise ResultsError(f"unknown system {system!r}: choose one of {', '.join(SYSTEMS)}")
    rows = read_results(path)
    doubles = check_for_system(rows, system, path)
    if as_of is None:
        judged = max(r.game.played_on for r in rows)
    else:
        try:
            judged = parse_date(as_of)
        except ValueError as e:
            raise ResultsError(f"--as-of: {e}") from None
    book = LadderBook(LadderOptions(system=system, doubles=doubles))
    for _event, games in group_events(rows):
        book.apply(games)
    return {"system": system, "as_of": judged.isoformat(), "players": book.rows(judged)}


def columns(system: str, with_of: bool = False) -> list[str]:
    """Output columns; CSV carries ``of`` too, so it has exactly the JSON fields."""
    head = ["rank", "of"] if with_of else ["rank"]
    return [*head, "player", "rating", "games", "active", *EXTRA_COLUMNS[system]]


def _cell(system: str, column: str, value: Any, human: bool) -> str:
    if isinstance(value, bool):
        return ("yes" if value else "no") if human else ("true" if value else "false")
    if human and isinstance(value, float):
        if column == "rating" and system == "fibs":
            return f"{value:.2f}"
        if column == "peklo":
            return f"{value:.1f}"
    return str(value) if not isinstance(value, float) else repr(value)


def format_table(ladder: dict[str, Any]) -> str:
    system = ladder["system"]
    cols = columns(system)
    body = [[_cell(system, c, row[c], True) for c in cols] for row in ladder["players"]]
    widths = [max([len(c), *(len(r[i]) for r in body)]) for i, c in enumerate(cols)]
    numeric = {"rank", "rating", "games", "paluba", "dansa", "peklo", "experience"}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if name in numeric else c.ljust(w)
            for c, w, name in zip(cells, widths, cols, strict=True)
        ).rstrip()

    title = f"{system} ladder as of {ladder['as_of']}: {len(body)} players"
    return "\n".join([title, line(cols), *(line(r) for r in body)]) + "\n"


def spreadsheet_safe(value: Any, cell: str) -> str:
    """A text cell a spreadsheet would run as a formula, made inert with a leading ``'``.

    OWASP's advice on CSV injection: a cell starting with ``=``, ``+``, ``-``, ``@``, tab
    or carriage return (after spaces, which some spreadsheets skip). Only text is escaped:
    numbers (a negative rating) are written as they are and stay numbers; a player named
    ``-2`` is text and is escaped like any other name starting with ``-``.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return cell
    if cell.lstrip(" ").startswith(FORMULA_START):
        return "'" + cell
    return cell


def format_csv(ladder: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    cols = columns(ladder["system"], with_of=True)
    writer.writerow(cols)
    for row in ladder["players"]:
        writer.writerow([spreadsheet_safe(row[c], _cell(ladder["system"], c, row[c], False))
                         for c in cols])
    return out.getvalue()


def run(system: str, path: str, as_of: str | None, fmt: str,
        out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """The command's body: 0 on success, 2 with a message on standard error."""
    try:
        ladder = rate_file(system, path, as_of)
    except ResultsError as e:
        print(f"matchlobby rate: {e}", file=err)
        return 2
    if fmt == "json":
        out.write(json.dumps(ladder, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        out.write(format_csv(ladder))
    else:
        out.write(format_table(ladder))
    return 0


