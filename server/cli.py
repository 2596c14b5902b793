"""The ``matchlobby`` command line."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import getpass
import logging
import sys
from collections.abc import Sequence
from typing import Any

from server import eventloop
from server.api import CliCommand, LadderConfig, Store
from server.config import Config, ConfigError, MetricsSettings, load_config, split_address
from server.store.schema import SCHEMA_VERSION


def _db_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="TOML configuration file")
    p.add_argument("--db", metavar="DATABASE",
                   help="an SQLite file or a postgresql:// URL (overrides the config's)")


def _user_admin_options(user_sub: Any) -> None:
    """``user passwd``, ``role``, ``ban``, ``unban``, ``list`` and ``log`` (server/users.py)."""
    passwd = user_sub.add_parser("passwd", help="set an account's password (from standard "
                                 "input); ends its sessions",
                                 description="Set an account's password, read from standard "
                                 "input (prompted twice on a terminal). Its open logins, on "
                                 "every running server, end within a second.")
    passwd.add_argument("name", metavar="NAME")
    _db_options(passwd)
    role = user_sub.add_parser("role", help="make an account an admin or a player",
                               description="Give an account the role admin or player. Its "
                               "open logins end within a second; it logs in again with the "
                               "new role.")
    role.add_argument("name", metavar="NAME")
    role.add_argument("role", metavar="ROLE", help="admin or player")
    _db_options(role)
    ban = user_sub.add_parser("ban", help="keep an account from logging in",
                              description="Ban an account until DATE (YYYY-MM-DD: as that day "
                              "begins, UTC; or a full ISO 8601 time), or with no end. Its "
                              "open connections are told and closed within a second; its "
                              "logins are refused, saying until when and why. Banning again "
                              "replaces the ban.")
    ban.add_argument("name", metavar="NAME")
    ban.add_argument("--until", metavar="DATE", help="when the ban ends (default: never)")
    ban.add_argument("--reason", metavar="TEXT", help="why (up to 200 characters), shown to "
                     "the player")
    _db_options(ban)
    unban = user_sub.add_parser("unban", help="lift an account's ban",
                                description="Lift an account's ban: it can log in again.")
    unban.add_argument("name", metavar="NAME")
    _db_options(unban)
    listing = user_sub.add_parser("list", help="the accounts, their roles and bans",
                                  description="Every account in name order: its role, when "
                                  "it was made and last logged in, and its ban in force.")
    listing.add_argument("--role", metavar="ROLE", help="only admins or only players")
    listing.add_argument("--banned", action="store_true", help="only banned accounts")
    _db_options(listing)
    log = user_sub.add_parser("log", help="what was done to the accounts, and by whom",
                              description="The latest changes to the accounts (or to NAME's), "
                              "oldest first: when, what, and who made it (an admin's name, "
                              "or cli:USER for the command line run by USER).")
    log.add_argument("name", metavar="NAME", nargs="?")
    log.add_argument("--limit", metavar="N", type=int, default=50,
                     help="how many of the latest changes (default 50)")
    _db_options(log)


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
    serve.add_argument("--log-format", choices=("text", "json"),
                       help="log lines as text or one JSON object each (default: the "
                            "configuration's [logging] format, else text)")
    serve.add_argument("--metrics-address", metavar="HOST:PORT",
                       help="serve Prometheus metrics at http://HOST:PORT/metrics (overrides "
                            "the config's [metrics] address; default: not served)")
    serve.add_argument("--loop", choices=eventloop.KINDS,
                       help="the event loop: uvloop's (in C, the default where it is "
                            "installed) or Python's own asyncio loop")

    user = sub.add_parser("user", help="manage accounts (a running lobby follows within a second)")
    user_sub = user.add_subparsers(dest="user_command", required=True, metavar="ACTION")
    add = user_sub.add_parser("add", help="create an account (password from standard input)",
                              description="Create an account, or set the password of an "
                              "existing one. The password is read from standard input "
                              "(prompted twice on a terminal).")
    add.add_argument("name", metavar="NAME")
    add.add_argument("--admin", action="store_true", help="give the account the admin role")
    _db_options(add)
    _user_admin_options(user_sub)

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

    backup = sub.add_parser("backup", help="copy the database while the server runs",
                            description="Make a consistent copy of the database while the "
                            "server runs: an SQLite file, or a pg_dump custom-format file "
                            "(PostgreSQL's pg_dump must be installed).")
    backup.add_argument("file", metavar="FILE", help="the backup file to write")
    backup.add_argument("--force", action="store_true", help="replace FILE if it exists")
    _db_options(backup)
    restore = sub.add_parser("restore", help="restore a backup into the database",
                             description="Check a backup made by `matchlobby backup` and "
                             "restore it into the database (stop the server first), then "
                             "check the result as `matchlobby check` does.")
    restore.add_argument("file", metavar="FILE", help="the backup file")
    restore.add_argument("--force", action="store_true",
                         help="replace a database that already holds a lobby")
    _db_options(restore)
    check = sub.add_parser("check", help="check the database and its ratings",
                           description="Run the database's integrity check and `replay "
                           "--check`; print each problem and exit 1, or one ok line. Safe "
                           "while the server runs.")
    _db_options(check)

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
    return _command_line(args, load_config(args.config))


def _command_line(args: argparse.Namespace, config: Config) -> Config:
    """``config`` with what the command line sets instead of the file (``--db``,
    ``--metrics-address``): at start, and again at each SIGHUP's reading of the file."""
    if getattr(args, "db", None):
        config = dataclasses.replace(config, database=args.db)
    if getattr(args, "metrics_address", None):
        try:
            split_address(args.metrics_address)
        except ValueError as e:
            raise ConfigError(f"--metrics-address: {e}") from None
        config = dataclasses.replace(config, metrics=MetricsSettings(args.metrics_address))
    return config


def _read_password(action: str = "add") -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("Password: ")
        if first != getpass.getpass("Again: "):
            raise SystemExit(f"matchlobby user {action}: the passwords differ")
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
    if getattr(args, "log_format", None) == "json":
        from server import logsetup

        logsetup.use_json()
    if args.command == "client":
        from clients.terminal import main as client_main

        return client_main(args.url, args.json, args.batch, args.pushes, not args.no_bell)
    if plugin_command is not None and not plugin_command.needs_config:
        try:  # such a command may still take --config for its ladders
            config = load_config(getattr(args, "config", None))
        except ConfigError as e:
            print(f"matchlobby: {e}", file=sys.stderr)
            return 2
        return plugin_command.run(args, Environment(config, writable=False))
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
    from server.refused import Refused
    from server.store.backends import is_postgres
    from server.store.copy import copy_database, database_of, describe
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
    except Refused as e:
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
        from server import logfilter, logsetup, reload
        from server.app import CannotListen, serve_forever

        try:
            new_loop = eventloop.loop_factory(args.loop)
        except eventloop.LoopUnavailable as e:
            print(f"matchlobby serve: --loop uvloop: {e}", file=sys.stderr)
            return 2
        logsetup.configure(config.logging, reload.node_shown(config))
        reload.prepare(args.config, lambda file: _command_line(args, file))
        logfilter.install()  # what clients make the server log, they can make it log often
        try:
            with asyncio.Runner(loop_factory=new_loop) as runner:
                return runner.run(serve_forever(config, args.host, args.port))
        except CannotListen as e:
            print(f"matchlobby serve: cannot listen: {e}", file=sys.stderr)
            return 2
    if args.command == "migrate":
        return asyncio.run(_migrate(config))
    if args.command in ("backup", "restore", "check"):
        return _backup_command(args, config)
    if args.command == "copy":
        return asyncio.run(_copy(config, args.source, args.destination))
    if args.command == "user":
        from server import users

        return asyncio.run(users.run(config, args.user_command, args,
                                     lambda: _read_password(args.user_command)))
    return 2


def _backup_command(args: argparse.Namespace, config: Config) -> int:
    """``backup``, ``restore`` or ``check``; a refusal is one line and status 2."""
    from server.backups import backup, restore
    from server.checking import run_check
    from server.refused import Refused

    def check() -> int:
        return run_check(config, plugin_cli_commands(), Environment(config, writable=False))

    try:
        if args.command == "backup":
            return backup(config, args.file, args.force)
        if args.command == "restore":
            return restore(config, args.file, args.force, check)
        return check()
    except Refused as e:
        print(f"matchlobby {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
