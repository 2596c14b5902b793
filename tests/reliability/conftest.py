"""The reliability tests start from several directors (races and crashes have them act at
once): the first made with the real ``matchlobby user add --admin`` command, the others with
the function behind it. Each test gets its own copy (``db_path``)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from testkit.cli import admin_template
from testkit.constants import ADMIN_PASSWORD, ADMINS, open_config

from server.config import load_config
from server.users import add_user


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    first, *others = ADMINS
    db, config = admin_template(tmp_path_factory.mktemp("reliability-template"), open_config(),
                                admin=first)
    settings = dataclasses.replace(load_config(config), database=str(db))
    for name in others:
        assert asyncio.run(add_user(settings, name, ADMIN_PASSWORD, True)) == 0
    return db
