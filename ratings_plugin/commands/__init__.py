"""The ``matchlobby`` sub-commands the ratings plugin adds: ``rate``, ``replay`` and
``evaluate``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from ratings_plugin import evaluation_chart
from ratings_plugin.commands import evaluate, rate, replay
from ratings_plugin.commands.offline import OptionError, Plan, find_ladder, parse_option
from server.api import CliCommand, CliEnvironment

OPTION_HELP = ("a system option, as in a ladder's configuration table: true/false, numbers, "
               "comma-separated lists (40,30,20; [40] for a list of one), text")


def _rate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("system", metavar="SYSTEM", nargs="?",
                   help="the rating system: any installed one (fibs, p4p, cas, glicko2, …); "
                        "left out with --ladder")
    p.add_argument("results", metavar="RESULTS.csv", nargs="?", help="the results file")
    p.add_argument("--as-of", metavar="DATE",
                   help="date activity is judged at (default: the latest date in the file)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="output format (default: table)")
    p.add_argument("--config", metavar="FILE",
                   help="the lobby's TOML configuration, whose ladders --ladder names")
    p.add_argument("--ladder", metavar="NAME",
                   help="rate with this configured ladder's system and options (from --config, "
                        "else the default ladders)")
    p.add_argument("--option", metavar="K=V", action="append", default=[],
                   help=OPTION_HELP + "; applied on top of the ladder's options (repeatable)")


def _rate(args: argparse.Namespace, env: CliEnvironment) -> int:
    def refuse(problem: str) -> int:
        print(f"matchlobby rate: {problem}", file=sys.stderr)
        return 2

    try:
        given = [parse_option(o) for o in args.option]
        if args.ladder is None:
            if args.system is None or args.results is None:
                return refuse("give SYSTEM and RESULTS.csv, or --ladder NAME (with --config FILE) "
                              "and RESULTS.csv")
            return rate.run(args.system, args.results, args.as_of, args.format, given=given)
        if args.system is None or args.results is not None:
            return refuse("with --ladder give only RESULTS.csv (the ladder names its system)")
        ladder = find_ladder(env.ladders, args.ladder)
    except OptionError as e:
        return refuse(str(e))
    return rate.run(ladder.system.name, args.system, args.as_of, args.format,
                    table=ladder.table, given=given, name=ladder.name)


def _evaluate_arguments(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--ladder", metavar="NAME",
                        help="the configured ladder whose log is replayed (the lobby's "
                             "database, from --config or --db)")
    source.add_argument("--file", metavar="RESULTS.csv",
                        help="a results file in rate's format, each event one unit")
    p.add_argument("--system", metavar="SYSTEM", action=Plan,
                   help="a system to evaluate (repeatable; with --file, default every "
                        "installed system that can rate the file; with --ladder, a row "
                        "beside the ladder's own system)")
    p.add_argument("--option", metavar="K=V", action=Plan,
                   help=OPTION_HELP + "; applies to the --system just before it (with "
                        "--ladder and no --system before it: to the ladder's own options); "
                        "each --system with its options is a row")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="output format (default: table); the calibration bins are in json only")
    p.add_argument("--chart", metavar="FILE.png|FILE.svg",
                   help="also draw the calibration chart and the log-loss by system into FILE "
                        "(needs matplotlib: pip install 'matchlobby[charts]')")
    p.set_defaults(plan=[])


def _evaluate(args: argparse.Namespace, env: CliEnvironment) -> int:
    if args.chart is not None and (problem := evaluation_chart.unusable(args.chart)):
        print(f"matchlobby evaluate: {problem}", file=sys.stderr)
        return 2
    if args.file is not None:
        return evaluate.run_file(args.file, args.plan, args.format, chart=args.chart)
    if "://" not in env.database and not os.path.exists(env.database):
        # opening would make an empty lobby there: a mistyped --db would score nothing
        print(f"matchlobby evaluate: {env.database}: no such database file", file=sys.stderr)
        return 2

    async def main() -> int:
        db = await env.open()
        try:
            return await evaluate.run_ladder(db, env.ladders, args.ladder, args.plan,
                                             args.format, chart=args.chart)
        finally:
            await db.close()

    return asyncio.run(main())


def _replay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; safe while the server runs")


def _replay(args: argparse.Namespace, env: CliEnvironment) -> int:
    async def main() -> int:
        db = await env.open()
        try:
            return await replay.run(db, env.database, env.ladders, args.check, sys.stdout)
        finally:
            await db.close()

    return asyncio.run(main())


def cli_commands() -> list[CliCommand]:
    return [
        CliCommand("rate", "compute a ladder offline from a results file",
                   "Rate a results file and print the ladder. Exit status 2 on bad input, with "
                   "the file, line and problem on standard error.", _rate_arguments, _rate,
                   needs_config=False),
        CliCommand("replay", "recompute every ladder from the match log",
                   "Rewrite ratings and history from the match log (stop the server first), "
                   "or with --check compare them and exit 1 on any difference.",
                   _replay_arguments, _replay),
        CliCommand("evaluate", "score how well each rating system predicts results",
                   "Replay a ladder's log or a results file and score each system's "
                   "prediction of every rated game, made from the ratings just before it: "
                   "log-loss, Brier score, accuracy (0.5 counts as half right), over all games "
                   "and over the games where every player had 20 before (20+), beside a "
                   "baseline that always says 0.5 and the players' win rates so far (which "
                   "learn when the first system's ratings do: after each game, or for a "
                   "system rated at an event's close only after the event). Lower "
                   "log-loss and Brier are better. Exit status 2 on bad input.",
                   _evaluate_arguments, _evaluate),
    ]
