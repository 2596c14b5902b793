"""The ``matchlobby`` command line."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import logging
import sys
from collections.abc import Sequence

from server.config import Config, ConfigError, load_config


def _db_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="TOML configuration file")
    p.add_argument("--db", metavar="FILE", help="SQLite database (overrides the config's)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="matchlobby",
        description="An online match server with live ratings (FIBS, P4P Elo, the ČAS ladder).",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the lobby server",
                           description="Run the WebSocket lobby (ws://HOST:PORT/ws).")
    _db_options(serve)
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765)")

    user = sub.add_parser("user", help="manage accounts offline")
    user_sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    add = user_sub.add_parser("add", help="create an account (password from standard input)",
                              description="Create an account, or set the password of an "
                              "existing one. The password is read from standard input "
                              "(prompted twice on a terminal).")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--admin", action="store_true", help="give the account the admin role")
    _db_options(add)

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

    replay = sub.add_parser("replay", help="recompute every ladder from the match log",
                            description="Rewrite ratings and history from the match log "
                            "(stop the server first), or with --check compare them and exit 1 "
                            "on any difference.")
    replay.add_argument("--check", action="store_true",
                        help="only compare; safe while the server runs")
    _db_options(replay)

    client = sub.add_parser("client", help="the interactive terminal client",
                            description="Connect to a lobby. Interactive on a terminal; with "
                            "--batch (or piped input) runs one command per line and exits "
                            "(status 1 if any command was refused, 2 if the server is unreachable).")
    client.add_argument("url", nargs="?", metavar="URL",
                        help="server address (default ws://127.0.0.1:8765/ws)")
    client.add_argument("--json", action="store_true", help="print raw JSON replies")
    client.add_argument("--batch", action="store_true",
                        help="read commands from standard input and exit at its end")
    client.add_argument("--pushes", action="store_true",
                        help="in batch mode, also print pushes as they arrive")
    return parser


def _config(args: argparse.Namespace) -> Config:
    config = load_config(args.config)
    if args.db:
        config = dataclasses.replace(config, database=args.db)
    return config


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Again: "):
            raise SystemExit("matchlobby user add: the passwords differ")
        return first
    return sys.stdin.readline().rstrip("\r\n")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet = args.command in ("client", "rate")
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "client":
        from clients.terminal import main as client_main

        return client_main(args.url, args.json, args.batch, args.pushes)
    if args.command == "rate":
        from ratings_plugin.rate_command import run

        return run(args.system, args.results, args.as_of, args.format)
    try:
        config = _config(args)
    except ConfigError as e:
        print(f"matchlobby: {e}", file=sys.stderr)
        return 2
    from server.dbcheck import DatabaseProblem

    what = "replay --check" if getattr(args, "check", False) else args.command
    if args.command == "user":
        what += f" {args.user_command}"
    try:
        return _database_command(args, config)
    except DatabaseProblem as e:
        print(f"matchlobby {what}: {e}", file=sys.stderr)
        return 2


def _database_command(args: argparse.Namespace, config: Config) -> int:
    """``serve``, ``replay`` or ``user add``: a database it cannot use raises ``DatabaseProblem``."""
    if args.command == "serve":
        from server.app import CannotListen, serve_forever

        try:
            return asyncio.run(serve_forever(config, args.host, args.port))
        except CannotListen as e:
            print(f"matchlobby serve: cannot listen: {e}", file=sys.stderr)
            return 2
    if args.command == "replay":
        from server.replay import run as replay

        return asyncio.run(replay(config, args.check))
    if args.command == "user":
        from server.users import add_user

        return asyncio.run(add_user(config, args.name, _read_password(), args.admin))
    return 2


if __name__ == "__main__":
    sys.exit(main())
