"""The ``matchlobby`` command line."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import logging
import sys
from collections.abc import Sequence

from server.api import CliCommand, LadderConfig, Store
from server.config import Config, ConfigError, MetricsSettings, load_config, split_address
from server.store.schema import SCHEMA_VERSION


def _db_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="TOML configuration file")
    p.add_argument("--db", metavar="DATABASE",
                   help="an SQLite file or a postgresql:// URL (overrides the config's)")


def build_parser(commands: Sequence[CliCommand] = ()) -> argparse.ArgumentParser:
    """The parser of the lobby's own sub-commands and of ``commands``, the plugins'."""
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
    serve.add_argument("--metrics-address", metavar="HOST:PORT",
                       help="serve Prometheus metrics at http://HOST:PORT/metrics (overrides "
                            "the config's [metrics] address; default: not served)")

    user = sub.add_parser("user", help="manage accounts offline")
    user_sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    add = user_sub.add_parser("add", help="create an account (password from standard input)",
                              description="Create an account, or set the password of an "
                              "existing one. The password is read from standard input "
                              "(prompted twice on a terminal).")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--admin", action="store_true", help="give the account the admin role")
    _db_options(add)

    migrate = sub.add_parser("migrate", help="bring the database's tables up to date",
                             description="Create the database's tables, or bring them up to "
                             "date for this version of matchlobby and its plugins (the server "
                             "does the same when it starts). A database newer than this "
                             "version is refused.")
    _db_options(migrate)

    copy = sub.add_parser("copy", help="copy a whole lobby into another, empty database",
                          description="Copy every table of one database into another, new "
                          "one: between SQLite files and PostgreSQL in either direction "
                          "(sqlite:///FILE or a file's path; postgresql://…). Stop the "
                          "server first. Check the copy with `matchlobby replay --check "
                          "--db DESTINATION`.")
    copy.add_argument("--from", dest="source", required=True, metavar="DATABASE")
    copy.add_argument("--to", dest="destination", required=True, metavar="DATABASE")
    copy.add_argument("--config", metavar="FILE", help="TOML configuration file (its ladders "
                      "and plugins)")

    for command in commands:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        command.configure(p)
        if command.needs_config:
            _db_options(p)

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
    client.add_argument("--no-bell", action="store_true",
                        help="do not ring the terminal's bell on an invitation (also: set "
                             "MATCHLOBBY_NO_BELL=1)")
    return parser


def _config(args: argparse.Namespace) -> Config:
    config = load_config(args.config)
    if getattr(args, "db", None):
        config = dataclasses.replace(config, database=args.db)
    if getattr(args, "metrics_address", None):
        try:
            split_address(args.metrics_address)
        except ValueError as e:
            raise ConfigError(f"--metrics-address: {e}") from None
        config = dataclasses.replace(config, metrics=MetricsSettings(args.metrics_address))
    return config


def _read_password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Again: "):
            raise SystemExit("matchlobby user add: the passwords differ")
        return first
    return sys.stdin.readline().rstrip("\r\n")


class Environment:
    """The plugin API's environment of a ``matchlobby`` sub-command: the configuration's
    database and ladders."""

    def __init__(self, config: Config, writable: bool) -> None:
        self.config = config
        self.writable = writable

    @property
    def database(self) -> str:
        return self.config.database

    @property
    def ladders(self) -> Sequence[LadderConfig]:
        return self.config.ladders

    async def open(self) -> Store:
        from server.plugins import open_database
        from server.store.backends import is_postgres
        from server.store.dbcheck import check_database

        if not is_postgres(self.database):
            await check_database(self.database, quick_check=False, writable=self.writable)
        return await open_database(self.config)


def plugin_cli_commands() -> list[CliCommand]:
    """Every installed plugin's sub-commands (the plugins made for the default configuration:
    the real one is read only once the arguments are)."""
    from server.plugins import load_plugins

    return [c for plugin in load_plugins(Config()) for c in plugin.cli_commands()]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        commands = {c.name: c for c in plugin_cli_commands()}
    except ConfigError as e:
        print(f"matchlobby: {e}", file=sys.stderr)
        return 2
    args = build_parser(list(commands.values())).parse_args(argv)
    plugin_command = commands.get(args.command)
    quiet = args.command == "client" or (plugin_command is not None
                                         and not plugin_command.needs_config)
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "client":
        from clients.terminal import main as client_main

        return client_main(args.url, args.json, args.batch, args.pushes, not args.no_bell)
    if plugin_command is not None and not plugin_command.needs_config:
        return plugin_command.run(args, Environment(Config(), writable=False))
    try:
        config = _config(args)
    except ConfigError as e:
        print(f"matchlobby: {e}", file=sys.stderr)
        return 2
    from server.store.dbcheck import DatabaseProblem

    what = "replay --check" if getattr(args, "check", False) else args.command
    if args.command == "user":
        what += f" {args.user_command}"
    try:
        if plugin_command is not None:
            return _plugin_command(plugin_command, args, config)
        return _database_command(args, config)
    except DatabaseProblem as e:
        print(f"matchlobby {what}: {e}", file=sys.stderr)
        return 2
    except Exception as e:
        problem = _postgres_problem(config, e)
        if problem is None:
            raise
        print(f"matchlobby {what}: {problem}", file=sys.stderr)
        return 2


def _postgres_problem(config: Config, error: Exception) -> Exception | None:
    """A PostgreSQL database that could not be used, as one line (``None``: another error)."""
    from server.store.backends import is_postgres
    from server.store.dbcheck import pg_problem

    return pg_problem(config.database, error) if is_postgres(config.database) else None


def _plugin_command(command: CliCommand, args: argparse.Namespace, config: Config) -> int:
    """A plugin's sub-command on the configured database: SQLite's errors (a damaged page it
    reads, a lock held too long) become one line."""
    import sqlite3

    from server.store.dbcheck import problem

    try:
        return command.run(args, Environment(config, writable=not getattr(args, "check", False)))
    except sqlite3.Error as e:
        raise problem(config.database, e, f"running {command.name}") from None


async def _copy(config: Config, source: str, destination: str) -> int:
    from server.plugins import load_plugins
    from server.store.backends import is_postgres
    from server.store.copy import CopyRefused, copy_database, database_of, describe
    from server.store.dbcheck import check_database

    source, destination = database_of(source), database_of(destination)
    if not is_postgres(source):
        from pathlib import Path

        if not Path(source).is_file():
            print(f"matchlobby copy: {source}: no such database file", file=sys.stderr)
            return 2
        await check_database(source, quick_check=True, writable=False)
    if not is_postgres(destination):
        await check_database(destination, quick_check=False)
    config = dataclasses.replace(config, database=destination)
    try:
        counted = await copy_database(source, destination,
                                      [plugin.schema for plugin in load_plugins(config)])
    except CopyRefused as e:
        print(f"matchlobby copy: {describe(destination)}: {e}", file=sys.stderr)
        return 2
    rows = ", ".join(f"{n} {table}" for table, n in counted.items() if n)
    print(f"copied {describe(source)} to {describe(destination)}: {rows or 'no rows'}")
    return 0


async def _migrate(config: Config) -> int:
    from server.plugins import open_database
    from server.store.backends import is_postgres, shown
    from server.store.dbcheck import check_database

    if not is_postgres(config.database):
        await check_database(config.database, quick_check=False)
    store = await open_database(config)
    try:
        rows = await store.fetchall("SELECT name, version FROM plugin_schemas ORDER BY name")
    finally:
        await store.close()
    plugins = ", ".join(f"{row[0]} {row[1]}" for row in rows) or "none"
    print(f"{shown(config.database)} is up to date (lobby schema {SCHEMA_VERSION}; "
          f"plugins: {plugins})")
    return 0


def _database_command(args: argparse.Namespace, config: Config) -> int:
    """``serve``, ``migrate`` or ``user add``: a database it cannot use raises
    ``DatabaseProblem``."""
    if args.command == "serve":
        from server import logfilter
        from server.app import CannotListen, serve_forever

        logfilter.install()  # what clients make the server log, they can make it log often
        try:
            return asyncio.run(serve_forever(config, args.host, args.port))
        except CannotListen as e:
            print(f"matchlobby serve: cannot listen: {e}", file=sys.stderr)
            return 2
    if args.command == "migrate":
        return asyncio.run(_migrate(config))
    if args.command == "copy":
        return asyncio.run(_copy(config, args.source, args.destination))
    if args.command == "user":
        from server.users import add_user

        return asyncio.run(add_user(config, args.name, _read_password(), args.admin))
    return 2


if __name__ == "__main__":
    sys.exit(main())
