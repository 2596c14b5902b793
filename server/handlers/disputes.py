"""The disputes an admin has to decide: every disputed live match, its players online or not.

A ``result_disputed`` push reaches only the admins online at the moment; this listing is how
one who comes later (or whose page reloads) finds the rest.
"""

from __future__ import annotations

from typing import Any

from server.lobby import Call


async def disputes(call: Call) -> Any:
    listed = []
    for m in sorted(call.lobby.matches.values(), key=lambda m: m.id):
        if m.status != "disputed" or m.claimed_by is None:
            continue
        listed.append({**m.summary(), "claimant": m.claimed_by, "by": m.opponent(m.claimed_by),
                       "scores": list(m.claim_scores) if m.claim_scores else None})
    return {"disputes": listed}


HANDLERS = {"disputes": disputes}
