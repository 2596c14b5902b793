"""Fixtures for the tests of the plugins in this folder: the template database of the shared
``db_path`` (the admin only, made by the real ``matchlobby user add --admin``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sharedkit import admin_template


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db, _ = admin_template(tmp_path_factory.mktemp("template"))
    return db
