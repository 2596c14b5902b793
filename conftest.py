"""The fixtures every test folder shares: ``tests/kit/testkit/fixtures.py`` as a plugin.

pyproject.toml's ``pythonpath = ["tests/kit"]`` puts the kit on ``sys.path`` before this
file is read; a folder's ``conftest.py`` adds only what is that folder's own.

The lobby plugins and rating systems in ``tests/plugins/`` are installed apart
from the project, in the environment's ``test-plugins`` folder (the Makefile's
``.venv`` target), so that only the tests load them. Here that folder goes on
the path of the tests and, through ``PYTHONPATH``, of the ``matchlobby``
processes they start: its metadata declares their entry points. Each plugin's
source folder goes first, so an edit to a plugin needs no reinstall.

Bytecode is cached even where ``PYTHONDONTWRITEBYTECODE`` is set: the suite starts hundreds of
Python processes (its workers, ``matchlobby serve``, the command line), and each would
otherwise compile the project's modules again, a tenth of the run's CPU. The caches go where
Python keeps them by default, ``__pycache__`` folders, which git ignores.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from server.api.registry import plugin_factories, rating_systems

TEST_SITE = Path(sys.prefix) / "test-plugins"
TEST_PLUGINS = {name: Path(__file__).resolve().parent / "tests" / "plugins" / name
                for name in ("headtohead", "streaks")}
TEST_SYSTEMS = {"elo": Path(__file__).resolve().parent / "tests" / "plugins" / "elo"}

pytest_plugins = ["testkit.session", "testkit.fixtures"]

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_paths = [str(p) for p in (*TEST_PLUGINS.values(), *TEST_SYSTEMS.values(), TEST_SITE)]
sys.path[:0] = _paths
os.environ["PYTHONPATH"] = os.pathsep.join(
    [*_paths, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])

_missing = sorted(set(TEST_PLUGINS) - set(plugin_factories())) + sorted(
    set(TEST_SYSTEMS) - set(rating_systems()))
if _missing:
    pytest.exit(f"the test plugins {_missing} are not installed in {TEST_SITE}: "
                f"run `make .venv/.installed` (or `make test`)", returncode=4)
