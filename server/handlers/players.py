"""Removing a player entered by mistake (a misspelt name in a result): an admin's repair."""

from __future__ import annotations

from typing import Any

from server.lobby import Call, fail
from server.store import players as stored
from server.store.handle import WriteTx


async def player_remove(call: Call) -> Any:
    """Delete a password-less ladder entry that no result names any more (its mistaken
    results voided first). Decided in one transaction on the player's held row, so a result
    naming it on another server either comes first (and the removal is refused) or finds
    the name gone (and makes a new entry)."""
    lobby, name = call.lobby, call.args["name"]

    async def job(tx: WriteTx) -> dict[str, Any]:
        removed = await stored.remove_entry(tx, name)
        if removed == "":
            raise fail("not_found", f"No player named {name!r}.")
        if isinstance(removed, str):
            raise fail("conflict", removed)
        data = {"player": removed[1], "removed": True}
        await call.remember(tx, data)
        return data

    data = await call.write(job)
    known = lobby.players.get(data["player"].casefold())
    if known is not None and known.password_hash is None:
        del lobby.players[known.key]
    return data


HANDLERS = {"player remove": player_remove}
