"""The ``matchlobby`` sub-commands the ratings plugin adds: ``rate`` and ``replay``."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ratings_plugin.commands import rate, replay
from server.api import CliCommand, CliEnvironment


def _rate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("system", metavar="SYSTEM",
                   help="the rating system: any installed one (fibs, p4p, cas, glicko2, …)")
    p.add_argument("results", metavar="RESULTS.csv", help="the results file")
    p.add_argument("--as-of", metavar="DATE",
                   help="date activity is judged at (default: the latest date in the file)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="output format (default: table)")


def _rate(args: argparse.Namespace, env: CliEnvironment) -> int:
    return rate.run(args.system, args.results, args.as_of, args.format)


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
    ]
