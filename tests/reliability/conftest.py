"""Fixtures for the reliability tests, and the figures they report.

The admin accounts are made once in a template database: the first with the
real ``matchlobby user add --admin`` command, the others with the function
behind it; each test gets its own copy of the file (``db_path``, from
tests/kit/sharedkit.py). Each test fills a ``figures`` dict; they are printed at
the end of the session and written to ``reliability-figures.json`` in pytest's
base temporary directory.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliakit import ADMIN_PASSWORD, ADMINS, config_text
from sharedkit import admin_template

from server.config import load_config
from server.users import add_user

FIGURES: dict[str, dict[str, Any]] = {}


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    first, *others = ADMINS
    db, config = admin_template(tmp_path_factory.mktemp("reliability-template"), config_text(),
                                admin=first)
    settings = dataclasses.replace(load_config(config), database=str(db))
    for name in others:
        assert asyncio.run(add_user(settings, name, ADMIN_PASSWORD, True)) == 0
    return db


@pytest.fixture
def figures(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, Any]]:
    """The test's measured figures: printed in the session summary, kept as JSON."""
    figs: dict[str, Any] = {}
    FIGURES[request.node.nodeid] = figs
    yield figs
    path = tmp_path_factory.getbasetemp() / "reliability-figures.json"
    path.write_text(json.dumps(FIGURES, indent=2, sort_keys=True), encoding="utf-8")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for node, figs in FIGURES.items():
        terminalreporter.write_line(f"{node}: {json.dumps(figs, sort_keys=True)}")
