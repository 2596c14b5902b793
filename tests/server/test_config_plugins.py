"""A ``[plugins.NAME]`` table that names no installed plugin: every ``matchlobby`` sub-command
that reads the configuration refuses it in one line with exit status 2, before doing anything.

The sub-commands are those of the real parser (the lobby's and the installed plugins'), so a new
one that reads ``--config`` is checked here with no edit.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from testkit.cli import run_many

from server.api.registry import plugin_factories
from server.cli import build_parser, plugin_cli_commands


def leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every runnable sub-command: its words and its parser."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for action in subs:
        for name, sub in action.choices.items():
            yield from leaves(sub, (*path, name))


def with_config(config: Path, folder: Path) -> list[list[str]]:
    """Each sub-command taking ``--config``, its required arguments given something."""
    runs = []
    for words, parser in leaves(build_parser(plugin_cli_commands())):
        options = {s for a in parser._actions for s in a.option_strings}
        if "--config" not in options:
            continue
        argv = list(words)
        # one of each required group of alternatives (evaluate's --ladder | --file)
        chosen = [g._group_actions[0] for g in parser._mutually_exclusive_groups if g.required]
        for action in parser._actions:
            if action.required or action in chosen or (
                    not action.option_strings and action.nargs is None):
                value = str(next(iter(action.choices))) if action.choices else str(folder / "x")
                argv += [action.option_strings[0], value] if action.option_strings else [value]
        argv += ["--config", str(config)]
        if "--db" in options:
            argv += ["--db", str(folder / "lobby.db")]
        runs.append(argv)
    return runs


def test_an_unknown_plugin_table_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "matchlobby.toml"
    config.write_text('[plugins.streak]\nlength = 3\n\n[plugins.streaks]\n', encoding="utf-8")
    runs = with_config(config, tmp_path)
    assert {r[0] for r in runs} >= {"serve", "migrate", "replay", "user", "check", "backup",
                                    "restore", "copy", "rate", "evaluate"}
    assert ["user", "list"] in [r[:2] for r in runs]
    for argv, done in zip(runs, run_many(runs, tmp_path), strict=True):
        assert done.returncode == 2, (argv, done.stderr)
        [line] = done.stderr.splitlines()
        assert line.endswith(f"{config}: [plugins.streak] names no installed plugin; installed: "
                             f"{', '.join(plugin_factories())}"), (argv, line)
    assert not (tmp_path / "lobby.db").exists()
