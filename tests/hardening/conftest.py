"""Fixtures for the hardening suites: a template database holding the admin account.

The admin is created with the same code as ``matchlobby user add --admin``
(``server.users.add_user``); each server gets its own copy of that file
(``db_path``, from tests/kit/sharedkit.py).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hardkit import ADMIN, ADMIN_PASSWORD, FAST_HASHING

from server.config import Config
from server.users import add_user


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("hardening-template") / "lobby.db"
    config = Config(database=str(db), password=FAST_HASHING)
    assert asyncio.run(add_user(config, ADMIN, ADMIN_PASSWORD, admin=True)) == 0
    return db


@pytest.fixture(scope="module", autouse=True)
def short_thread_switches() -> Iterator[None]:
    """The server runs in a thread of this process: let the two threads take turns quickly.

    With Python's default 5 ms switch interval, every reply waits for the other thread's
    time slice; these suites measure the server, not the interpreter's scheduling.
    """
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    try:
        yield
    finally:
        sys.setswitchinterval(old)
