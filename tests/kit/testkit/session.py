"""The test run as a whole, alone or spread over pytest-xdist's workers.

- One PostgreSQL cluster for the whole run: a run with workers (``-n``) starts it in the
  controller before the workers start and names it to them in ``MATCHLOBBY_TEST_POSTGRES``;
  each worker makes its own databases in it (named after the worker's process). A run
  without workers starts it when a test first needs it (:func:`testkit.postgres.server_url`).
- Nothing outlives a stopped run: the cluster is stopped and its folder removed by a reaper
  (:mod:`testkit.reaper`) should the run die, and a run that does not finish (Ctrl-C, a
  timeout's SIGTERM, SIGKILL) has its base temporary folder removed too; a finished run's is
  kept, as pytest keeps the last few, for a failure to be looked into.
- The figures the tests measured (:mod:`testkit.figures`) travel from the workers to the
  controller, which reports them after the results and keeps them as ``figures.json`` in the
  run's base temporary folder.
- The long suites (:data:`SLOW`) are marked ``slow`` (``-m "not slow"`` is the fast subset)
  and run first: spread over the workers while the short tests fill in behind them, the run
  does not end waiting for one long test that started last.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from server import eventloop
from testkit import figures, postgres, reaper

SLOW = (
    "tests/reliability/",
    "tests/web/",
    "tests/kit/test_stopped_runs.py",
    "tests/server/test_lobby_random_walk.py",
    "tests/server/test_backends_cli.py",
    "tests/server/test_cmdline.py",
    "tests/hardening/test_fuzz.py",
    "tests/hardening/test_memory.py",
    "tests/hardening/test_costly_lines.py",
    "tests/hardening/test_damaged_db.py",
)
"""The test files (and folders) of the long suites: each takes several seconds a test."""

_basetemp_order: int | None = None


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _distributed(config: pytest.Config) -> bool:
    """The controller of a run with workers (``-n`` more than 0)."""
    return (not is_worker(config) and getattr(config.option, "dist", "no") != "no"
            and bool(getattr(config.option, "tx", None)))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the long suites ``slow`` and put them first (the order is the same in every
    worker: pytest-xdist requires it)."""
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        if where.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if (_distributed(config) and not config.option.collectonly
            and not os.environ.get(postgres.ENV)):
        url = postgres.server_url()  # this process's cluster, stopped when the run ends
        if url is not None:
            os.environ[postgres.ENV] = url  # the workers inherit it


def pytest_sessionstart(session: pytest.Session) -> None:
    global _basetemp_order
    if not is_worker(session.config):
        factory: pytest.TempPathFactory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        _basetemp_order = reaper.remove_folder(factory.getbasetemp())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if is_worker(config):
        config.workeroutput["figures"] = figures.export()  # type: ignore[attr-defined]
        return
    factory: pytest.TempPathFactory = config._tmp_path_factory  # type: ignore[attr-defined]
    figures.save(factory.getbasetemp() / "figures.json")
    if _basetemp_order is not None and exitstatus != pytest.ExitCode.INTERRUPTED:
        reaper.withdraw(_basetemp_order)


@pytest.hookimpl(optionalhook=True)
def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> Mapping[
        str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test runs on the loop `matchlobby serve` runs on (uvloop's where installed):
    most tests serve from their own loop (``testkit.server_loop``). A test marked
    ``both_loops`` (what the server does with its sockets) runs on asyncio's own loop too,
    which ``serve --loop asyncio`` chooses."""
    kinds = [eventloop.default_kind()]
    if item.get_closest_marker("both_loops") and "asyncio" not in kinds:
        kinds.append("asyncio")
    return {kind: eventloop.loop_factory(kind) for kind in kinds}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """A worker's figures, added to the controller's."""
    figures.merge(getattr(node, "workeroutput", {}).get("figures", {}))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    figures.report(terminalreporter.section, terminalreporter.write_line)
