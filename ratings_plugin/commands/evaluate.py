"""``matchlobby evaluate``: which rating system predicts a ladder's results best.

The games come from a ladder's log (``--ladder``) or a results file (``--file``, grouped into
units as ``rate`` groups them); :func:`ratings_plugin.evaluation.evaluate` replays them and
scores each system's predictions; this module reads the input, builds the rows asked for and
prints the report.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ratings_plugin import evaluation_chart
from ratings_plugin.commands.offline import (
    Option,
    OptionError,
    file_ladder,
    file_units,
    options_of,
    parse_option,
    variant,
    variant_text,
)
from ratings_plugin.commands.rate import spreadsheet_safe
from ratings_plugin.evaluation import evaluate
from ratings_plugin.log_evaluation import evaluation
from server.api import LadderConfig, RatingSystem, Store, Tx
from server.api.registry import rating_systems
from server.api.results_file import ResultRow, ResultsError, read_results

Entry = tuple[dict[str, Any], LadderConfig]
Step = tuple[str, str]
"""One ``--system NAME`` or ``--option K=V`` as given, in order."""


class Refused(ValueError):
    """A bad argument: one line, exit status 2."""


def _system(name: str) -> RatingSystem:
    systems = rating_systems()
    found = systems.get(name)
    if found is None:
        raise Refused(f"unknown system {name!r}: choose one of {', '.join(sorted(systems))}")
    return found


def _groups(plan: Sequence[Step]) -> tuple[list[Option], list[tuple[str, list[Option]]]]:
    """The options given before any ``--system``, then each ``--system`` with its options."""
    lead: list[Option] = []
    groups: list[tuple[str, list[Option]]] = []
    for kind, value in plan:
        if kind == "system":
            groups.append((value, []))
        else:
            (groups[-1][1] if groups else lead).append(parse_option(value))
    return lead, groups


def file_entries(rows: Sequence[ResultRow], source: str, plan: Sequence[Step],
                 skipped: list[str] | None = None) -> list[Entry]:
    """The rows asked for on a results file: each ``--system`` with its options, or every
    installed system that can rate the file's shape (each one that refuses it is added to
    ``skipped`` as ``NAME skipped: why``, so the user sees why a row is missing)."""
    lead, groups = _groups(plan)
    if lead:
        raise OptionError(f"--option {lead[0].text}: name the --system it applies to before it")
    if groups:
        return [(variant(given), file_ladder(rows, _system(name), source, None, given))
                for name, given in groups]
    entries: list[Entry] = []
    refused: list[tuple[str, ResultsError]] = []
    for _name, system in sorted(rating_systems().items()):
        try:
            entries.append(({}, file_ladder(rows, system, source)))
        except ResultsError as e:
            refused.append((system.name, e))
    if not entries:
        raise ResultsError(f"{source}: no installed system can rate this file: "
                           + "; ".join(f"{name}: {e}" for name, e in refused))
    if skipped is not None:
        skipped += [f"{name} skipped: {e}" for name, e in refused]
    return entries


def ladder_entries(ladder: LadderConfig, plan: Sequence[Step]
                   ) -> list[Entry]:
    """The ladder as configured, then a row for the options given before any ``--system``
    (on top of the ladder's), then one for each ``--system`` (the ladder's options when it is
    the ladder's system, else that system's own defaults) with its options."""
    lead, groups = _groups(plan)
    table = ladder.table
    entries: list[Entry] = [({}, ladder)]
    if lead:
        entries.append((variant(lead), LadderConfig(
            ladder.name, ladder.system, options_of(ladder.system, table, lead))))
    for name, given in groups:
        system = _system(name)
        base = table if system.name == ladder.system.name else (
            {"format": "doubles"} if ladder.format == "doubles" else {})
        try:
            system.parse_options(base)
        except (TypeError, ValueError) as e:
            raise Refused(f"--system {name}: cannot rate ladder {ladder.name!r}: {e}") from None
        entries.append((variant(given), LadderConfig(ladder.name, system,
                                                     options_of(system, base, given))))
    return entries


CANNOT_RATE = "a system cannot rate it with these options"


def evaluate_file(path: str, plan: Sequence[Step],
                  skipped: list[str] | None = None) -> dict[str, Any]:
    """The report of ``--file``; raises ``ResultsError``, ``OptionError`` or :class:`Refused`.
    With no ``--system``, the systems that refuse the file are added to ``skipped``."""
    rows = read_results(path)
    entries = file_entries(rows, path, plan, skipped)
    try:
        return evaluate(entries, file_units(rows, "file"))
    except (ArithmeticError, ValueError) as e:
        raise Refused(f"{path}: {CANNOT_RATE}: {e}") from None


async def evaluate_ladder(db: Store, ladders: Sequence[LadderConfig], name: str,
                          plan: Sequence[Step]) -> dict[str, Any]:
    """The report of ``--ladder`` on the lobby's log, read in one snapshot on either backend
    (:func:`ratings_plugin.log_evaluation.evaluation`: the log's plain rows a page at a time
    where the systems allow, else its units through the books)."""
    ladder = next((x for x in ladders if x.name == name), None)
    if ladder is None:
        raise Refused(f"unknown ladder {name!r}: choose one of "
                      f"{', '.join(x.name for x in ladders)}")
    entries = ladder_entries(ladder, plan)

    async def read(tx: Tx) -> dict[str, Any]:
        return (await evaluation(tx, name, entries, _free)).report()

    try:
        report: dict[str, Any] = await db.snapshot(read)
    except (ArithmeticError, ValueError) as e:
        raise Refused(f"ladder {name!r}: {CANNOT_RATE}: {e}") from None
    return report


def _free(rows: int) -> None:
    """The command line reads on no one's budget."""


# --- output ---------------------------------------------------------------------------------

SCORES = ("log_loss", "brier", "accuracy")
HEADS = ("system", "variant", "games", "log-loss", "Brier", "accuracy", "games 20+",
         "log-loss 20+", "Brier 20+", "accuracy 20+")
CSV_HEADS = ("system", "variant", "games", "log_loss", "brier", "accuracy", "after_20_games",
             "after_20_log_loss", "after_20_brier", "after_20_accuracy")


def _cells(row: dict[str, Any], human: bool) -> list[Any]:
    seasoned = row["after_20"]
    scores = [row["games"], *(row[k] for k in SCORES), seasoned["games"],
              *(seasoned[k] for k in SCORES)]
    if not human:
        return [row["system"], variant_text(row["variant"]), *scores]

    def number(v: Any) -> str:
        return "-" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)

    return [row["system"], variant_text(row["variant"]) or "-", *(number(v) for v in scores)]


def format_table(report: dict[str, Any]) -> str:
    body = [_cells(row, True) for row in report["systems"]]
    widths = [max([len(h), *(len(r[i]) for r in body)]) for i, h in enumerate(HEADS)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return "\n".join([line(HEADS), *(line(r) for r in body)]) + "\n"


def format_csv(report: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADS)
    for row in report["systems"]:
        cells = _cells(row, False)
        writer.writerow([spreadsheet_safe(c, "" if c is None else repr(c)
                                          if isinstance(c, float) else str(c)) for c in cells])
    return out.getvalue()


def write(report: dict[str, Any], fmt: str, out: TextIO, chart: str | None = None,
          err: TextIO = sys.stderr) -> None:
    """The report on ``out``; the chart, when asked for, drawn and said so on ``err``."""
    if chart is not None:
        evaluation_chart.draw(report, chart)
        print(f"Chart written to {chart}", file=err)
    if fmt == "json":
        out.write(json.dumps(report, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        out.write(format_csv(report))
    else:
        out.write(format_table(report))


def run_file(path: str, plan: Sequence[Step], fmt: str, out: TextIO = sys.stdout,
             err: TextIO = sys.stderr, chart: str | None = None) -> int:
    """``--file``: 0 on success, 2 with a message on standard error; a line on standard error
    for each system skipped because it refuses the file."""
    skipped: list[str] = []
    try:
        report = evaluate_file(path, plan, skipped)
    except (ResultsError, OptionError, Refused) as e:
        print(f"matchlobby evaluate: {e}", file=err)
        return 2
    for line in skipped:
        print(f"matchlobby evaluate: {line}", file=err)
    write(report, fmt, out, chart, err)
    return 0


async def run_ladder(db: Store, ladders: Sequence[LadderConfig], name: str,
                     plan: Sequence[Step], fmt: str, out: TextIO = sys.stdout,
                     err: TextIO = sys.stderr, chart: str | None = None) -> int:
    """``--ladder``: 0 on success, 2 with a message on standard error."""
    try:
        report = await evaluate_ladder(db, ladders, name, plan)
    except (OptionError, Refused) as e:
        print(f"matchlobby evaluate: {e}", file=err)
        return 2
    write(report, fmt, out, chart, err)
    return 0
