"""When the opponent of a player who left their live match may claim it.

The drop timeout runs from when this server saw the player leave every server, by its own
clock: the opponent's ``claim`` is answered by the server their connection is on, so the
countdown it is told is the one its claim will be judged by.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from server.lobby.lobby import Lobby


def claim_in(lobby: Lobby, name: str) -> tuple[int, int] | None:
    """``name``'s live match and the whole seconds until its opponent may claim it (0: now),
    when ``name`` has left it; ``None`` when they are connected or play no live match."""
    m = lobby.matches.get(lobby.match_of.get(name, 0))
    if m is None:
        return None
    since = m.away_since.get(name)
    if since is None:
        return None
    left = since + lobby.config.drop_timeout - time.monotonic()
    return m.id, max(0, math.ceil(left))


def own_match(lobby: Lobby, name: str) -> dict[str, Any] | None:
    """The live match ``name`` plays, as a login tells it (to take it up again): its summary,
    and ``claim_in`` (``None`` while the opponent is connected)."""
    m = lobby.matches.get(lobby.match_of.get(name, 0))
    if m is None:
        return None
    drop = claim_in(lobby, m.opponent(name))
    return {**lobby.match_summary(m), "claim_in": None if drop is None else drop[1]}
