"""The lobby's nodes on one PostgreSQL database: who is there, and who stopped beating.

Each node upserts its row every :data:`HEARTBEAT` seconds on its push feed's connection
(:mod:`server.store.pg.feed`), so a node that cannot hear the others does not beat either.
Times are the database's clock, the one clock every node shares. A node whose beat is older
than :data:`DEAD_AFTER` seconds is dead (SIGKILL, a cut cable, a stall): the others notice
within ``HEARTBEAT + DEAD_AFTER`` seconds. A node stopping cleanly deletes its row; a node
starting again under the same name (``[server] node``) takes its row over.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from server.store.pg.feed import NODES_CHANGED
from server.store.pg.port import FEED_CHANNEL

HEARTBEAT = 2.0  # seconds between two beats of a node
DEAD_AFTER = 10.0  # seconds without a beat after which a node is dead
FORGET_AFTER = 3600.0  # seconds after which a dead node's row is deleted
CLOCK = "extract(epoch from clock_timestamp())"

_BEAT = f"""
WITH mine AS (
    INSERT INTO nodes (name, host, pid, started_at, beat) VALUES ($1, $2, $3, $4, {CLOCK})
    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
        started_at = excluded.started_at, beat = excluded.beat
), gone AS (
    DELETE FROM nodes WHERE beat < {CLOCK} - $5
)
SELECT name, host, pid, {CLOCK} - beat AS age FROM nodes WHERE name <> $1 ORDER BY name
"""


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    host: str
    pid: int
    age: float  # seconds since its last beat

    @property
    def dead(self) -> bool:
        """No beat for :data:`DEAD_AFTER` seconds, or a process of this host that is gone
        (a server killed and started again here need not wait for its old self to lapse)."""
        return self.age > DEAD_AFTER or (self.host == socket.gethostname()
                                         and not _running(self.pid))


def _running(pid: int) -> bool:
    """Whether process ``pid`` of this host runs (a zombie, killed but not yet reaped by its
    parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc here: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process
            return True
        return True


async def beat(conn: Any, name: str, host: str, pid: int, started_at: str) -> list[Node]:
    """Beat (registering the node the first time), and the other nodes as they stand."""
    rows = await conn.fetch(_BEAT, name, host, pid, started_at, FORGET_AFTER)
    return [Node(r["name"], r["host"], int(r["pid"]), float(r["age"])) for r in rows]


async def announce(conn: Any) -> None:
    """Have every node's feed tick now (a node came, or left): who beats is known at once."""
    await conn.execute(f"SELECT pg_notify('{FEED_CHANNEL}', '{NODES_CHANGED}')")


async def leave(tx: Any, name: str) -> None:
    """A node stopping cleanly: the others do not take it for dead."""
    await tx.execute("DELETE FROM nodes WHERE name = ?", (name,))
    await tx.execute(f"SELECT pg_notify('{FEED_CHANNEL}', '{NODES_CHANGED}')")
