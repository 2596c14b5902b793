"""The ``matchlobby`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="matchlobby",
        description="An online match server with live ratings (FIBS, P4P Elo, the ČAS ladder).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    rate = sub.add_parser(
        "rate",
        help="compute a ladder offline from a results file",
        description="Rate a results file (DESIGN.md format) and print the ladder. "
        "Exit status 2 on bad input, with the file, line and problem on standard error.",
    )
    rate.add_argument("system", metavar="SYSTEM", help="fibs, p4p or cas")
    rate.add_argument("results", metavar="RESULTS.csv", help="the results file")
    rate.add_argument("--as-of", metavar="DATE",
                      help="date activity is judged at (default: the latest date in the file)")
    rate.add_argument("--format", choices=("table", "json", "csv"), default="table",
                      help="output format (default: table)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "rate":
        from ratings_plugin.rate_command import run

        return run(args.system, args.results, args.as_of, args.format)
    return 2


if __name__ == "__main__":
    sys.exit(main())
