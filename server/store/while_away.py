"""How a player's match ended while they were connected nowhere: written in the transaction
that ended or corrected it, taken by their next login on whichever server they come back to."""

from __future__ import annotations

from typing import Any

import orjson

from server.store.handle import WriteTx


async def note(tx: WriteTx, player_id: int, match_id: int, at: str,
               body: dict[str, Any]) -> None:
    await tx.execute("INSERT INTO while_away (player_id, match_id, at, body) VALUES (?, ?, ?, ?)",
                     (player_id, match_id, at, orjson.dumps(body).decode()))


async def take(tx: WriteTx, player_id: int) -> list[dict[str, Any]]:
    """Every note kept for the player, oldest first, deleted (told once)."""
    rows = await tx.fetchall("DELETE FROM while_away WHERE player_id = ? RETURNING id, body",
                             (player_id,))
    return [orjson.loads(row[1]) for row in sorted(rows, key=lambda row: int(row[0]))]
