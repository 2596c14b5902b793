"""Fixtures for the rating tests: results files in ``tmp_path`` and ``matchlobby rate`` runs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from testkit.cli import Completed, RunRate, WriteResults, run_cli
from testkit.results import HEADER, results_text


@pytest.fixture
def run_rate(tmp_path: Path) -> RunRate:
    """``run_rate(system, file, *options)`` runs ``matchlobby rate`` in ``tmp_path``."""

    def run(system: str, results: str | Path, *options: str) -> Completed:
        return run_cli(["rate", system, str(results), *options], tmp_path)

    return run


@pytest.fixture
def write_results(tmp_path: Path) -> WriteResults:
    """``write_results(rows, name=..., header=...)`` writes a results file into ``tmp_path``."""

    def write(rows: Iterable[str], name: str = "results.csv", header: str = HEADER) -> Path:
        path = tmp_path / name
        path.write_text(results_text(rows, header), encoding="utf-8")
        return path

    return write
