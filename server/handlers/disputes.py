"""The disputes an admin has to decide: every disputed live match, its players online or not.

A ``result_disputed`` push reaches only the admins online at the moment; this listing is how
one who comes later (or whose page reloads) finds the rest. It reads the rows, not this
node's copy: a dispute made on another node a moment ago is listed too.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from server.lobby import Call, Lobby
from server.store import matches as stored


def age(since: str | None, at: datetime | None = None) -> int | None:
    """Whole seconds from ``since`` (UTC, ISO 8601) to ``at`` (now); ``None`` when unknown
    (a match disputed before the time was kept)."""
    if since is None:
        return None
    then = datetime.fromisoformat(since.replace("Z", "+00:00"))
    return max(0, int(((at or datetime.now(UTC)) - then).total_seconds()))


async def disputes(call: Call) -> Any:
    listed = []
    for row in await stored.disputed_all(call.lobby.db):
        m = Lobby.live_from_row(row)
        if m.claimed_by is None:
            continue
        listed.append({**m.summary(), "claimant": m.claimed_by, "by": m.opponent(m.claimed_by),
                       "scores": list(m.claim_scores) if m.claim_scores else None,
                       "since": m.disputed_at, "age": age(m.disputed_at)})
    return {"disputes": listed}


HANDLERS = {"disputes": disputes}
