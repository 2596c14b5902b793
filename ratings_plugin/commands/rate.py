"""``matchlobby rate``: a ladder from a results file, with no server."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ratings_plugin.book import ranked_rows
from ratings_plugin.commands.offline import Option, OptionError, file_ladder, file_units
from server.api.registry import rating_systems
from server.api.results_file import ResultsError, parse_date, read_results
from server.api.spreadsheet import escape


def rate_file(system: str, path: str, as_of: str | None = None,
              table: Mapping[str, Any] | None = None, given: Sequence[Option] = ()
              ) -> dict[str, Any]:
    """The ladder object printed by ``--format json``; raises ``ResultsError`` (or
    ``OptionError`` for an option).

    Each event of the file (its rows grouped by ``event``, in the order of
    their first row) is one unit, as an event closed in the lobby. ``table``
    is a configured ladder's options (by default the file's shape decides
    singles or doubles), ``given`` the options of ``--option`` applied on top.
    """
    systems = rating_systems()
    found = systems.get(system)
    if found is None:
        raise ResultsError(f"unknown system {system!r}: choose one of "
                           f"{', '.join(sorted(systems))}")
    rows = read_results(path)
    ladder = file_ladder(rows, found, path, table, given)
    if as_of is None:
        judged = max(r.game.played_on for r in rows)
    else:
        try:
            judged = parse_date(as_of)
        except ValueError as e:
            raise ResultsError(f"--as-of: {e}") from None
    book = found.new_book(ladder.options)
    try:
        for unit in file_units(rows, system):
            book.accept(book.compute(unit), unit)
    except (ArithmeticError, ValueError) as e:  # options it takes but cannot compute with
        raise ResultsError(f"{path}: {system} cannot rate it with these options: {e}") from None
    return {"system": system, "as_of": judged.isoformat(),
            "columns": [c.as_dict() for c in found.columns(ladder.options)],
            "players": ranked_rows(ladder, book.standings.values(), judged)}


def columns(ladder: dict[str, Any], with_of: bool = False) -> list[str]:
    """Output columns: the fixed ones, then the system's (as its columns describe them), then
    any other field of its rows; CSV carries ``of`` too, so it has exactly the JSON fields."""
    head = ["rank", "of"] if with_of else ["rank"]
    fixed = [*head, "player", "rating", "games", "active"]
    extra = [c["key"] for c in ladder["columns"] if c["key"] not in fixed]
    players = ladder["players"]
    extra += [k for k in (players[0] if players else {}) if k not in fixed and k not in extra
              and k != "of"]
    return fixed + extra


def _decimals(ladder: dict[str, Any]) -> dict[str, int]:
    return {c["key"]: c["decimals"] for c in ladder["columns"] if "decimals" in c}


def _cell(value: Any, human: bool, decimals: int | None = None, declared: bool = True) -> str:
    """A value as text; in the human table, a real the system does not declare as a column
    (Glicko-2's volatility) shows six significant digits rather than every one."""
    if isinstance(value, bool):
        return ("yes" if value else "no") if human else ("true" if value else "false")
    if isinstance(value, float):
        if human and decimals is not None:
            return f"{value:.{decimals}f}"
        return f"{value:.6g}" if human and not declared else repr(value)
    return str(value)


def format_table(ladder: dict[str, Any], name: str | None = None) -> str:
    """The human table; ``name`` heads it as the configured ladder's (``rate --ladder``)."""
    cols = columns(ladder)
    places = _decimals(ladder)
    declared = {c["key"] for c in ladder["columns"]}
    body = [[_cell(row[c], True, places.get(c), c in declared) for c in cols]
            for row in ladder["players"]]
    widths = [max([len(c), *(len(r[i]) for r in body)]) for i, c in enumerate(cols)]
    first = ladder["players"][0] if ladder["players"] else {}
    numeric = {c for c in cols if isinstance(first.get(c), int | float)
               and not isinstance(first.get(c), bool)}

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.rjust(w) if name in numeric else c.ljust(w)
            for c, w, name in zip(cells, widths, cols, strict=True)
        ).rstrip()

    found = rating_systems().get(ladder["system"])
    what = f"{ladder['system']} ladder" if name is None else (
        f"{name} ({found.title if found else ladder['system']})")
    title = f"{what} as of {ladder['as_of']}: {len(body)} players"
    return "\n".join([title, line(cols), *(line(r) for r in body)]) + "\n"


def spreadsheet_safe(value: Any, cell: str) -> str:
    """A text cell a spreadsheet would run as a formula, made inert with a leading ``'``
    (:mod:`server.api.spreadsheet`). Only text is escaped: numbers (a negative rating) are
    written as they are and stay numbers; a player named ``-2`` is text and is escaped like
    any other name starting with ``-``.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        return cell
    return escape(cell)


def format_csv(ladder: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    cols = columns(ladder, with_of=True)
    writer.writerow(cols)
    for row in ladder["players"]:
        writer.writerow([spreadsheet_safe(row[c], _cell(row[c], False)) for c in cols])
    return out.getvalue()


def run(system: str, path: str, as_of: str | None, fmt: str,
        out: TextIO = sys.stdout, err: TextIO = sys.stderr,
        table: Mapping[str, Any] | None = None, given: Sequence[Option] = (),
        name: str | None = None) -> int:
    """The command's body: 0 on success, 2 with a message on standard error; ``name`` is the
    configured ladder's (``--ladder``), which heads the table."""
    try:
        ladder = rate_file(system, path, as_of, table, given)
    except (ResultsError, OptionError) as e:
        print(f"matchlobby rate: {e}", file=err)
        return 2
    if fmt == "json":
        out.write(json.dumps(ladder, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        out.write(format_csv(ladder))
    else:
        out.write(format_table(ladder, name))
    return 0


