"""A PostgreSQL cluster of a bench's own, with PostgreSQL's default durability (fsync on):
the test kit's (``tests/kit/testkit/postgres.py``) started ``durable``. Not a bench itself."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "tests" / "kit"
if str(KIT) not in sys.path:
    sys.path.insert(0, str(KIT))

from testkit import postgres  # noqa: E402
from testkit.postgres import Cluster, new_database  # noqa: E402

__all__ = ["Cluster", "cluster", "new_database", "postmaster"]


def cluster() -> Cluster | None:
    """A durable cluster for this bench (``None``: PostgreSQL is not installed)."""
    return postgres.private_cluster(durable=True)


def postmaster(cluster: Cluster) -> int:
    """The process id of ``cluster``'s postmaster (the parent of its backends)."""
    return int((cluster.data / "postmaster.pid").read_text().split()[0])
