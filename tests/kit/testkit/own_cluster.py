"""A lobby's database on a PostgreSQL cluster of the test's own: one it may stop and start
again (stopping the shared cluster would stop every other test's database)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from testkit import postgres
from testkit.cli import add_user
from testkit.constants import ADMIN, ADMIN_PASSWORD
from testkit.postgres import Cluster, PgDb


@contextlib.asynccontextmanager
async def database_on_its_own_cluster(tmp_path: Path, config: Path
                                      ) -> AsyncIterator[tuple[Cluster, PgDb]]:
    """The cluster and a new database on it with the admin account; the cluster is stopped
    at the end. Skips the test when PostgreSQL is not installed."""
    cluster = postgres.private_cluster()
    if cluster is None:
        pytest.skip(postgres.MISSING)
    try:
        db = PgDb(postgres.new_database(cluster.url), tmp_path)
        add_user(db, config, ADMIN, ADMIN_PASSWORD, admin=True)  # type: ignore[arg-type]
        yield cluster, db
    finally:
        await asyncio.to_thread(cluster.stop)
