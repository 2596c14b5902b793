"""Automatch: seek, unseek, and the pool's listing. The pairing itself is the pool's
(:mod:`server.lobby.seeking`): a seek is answered at once, and the match starts when a pass
finds an opponent (``match_started`` to both)."""

from __future__ import annotations

from typing import Any

from server.handlers.matches import _length, _playing
from server.lobby import Call, fail
from server.lobby.presence import NOT_READY
from server.store import seeks as stored
from server.store.handle import WriteTx


def _shown(length: int | None) -> int | str:
    return "unlimited" if length is None else length


async def seek(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    ladder = lobby.ladder(call.args["ladder"])
    if not ladder.system.live_matches:
        raise fail("bad_request", f"Ladder {ladder.name!r} ({ladder.system.title}) is rated when "
                                  "its events close, not by live matches: nobody can be "
                                  "matched on it. 'ladders' shows the live ones.")
    length = _length(call)
    points = call.args.get("range", lobby.config.seek_range)
    if await _playing(call, me):
        raise fail("conflict", "You are already playing a match.")
    if lobby.presence.status(me.name) == NOT_READY:
        raise fail("conflict", "You are not ready (ready off); say 'ready on' first.")
    since = stored.stamp()
    data: dict[str, Any] = {"ladder": ladder.name, "length": _shown(length), "range": points,
                            "since": since}

    async def job(tx: WriteTx) -> None:
        old = await stored.put(tx, me.id, ladder.name, length, points, since,
                               lobby.seeking.node)
        if await stored.playing(tx, [me.id]):  # a pass (on any node) paired you a moment ago
            raise fail("conflict", "You started a match a moment ago.")
        data["replaced"] = None if old is None else {"ladder": old["ladder"],
                                                     "length": _shown(old["length"])}
        await call.remember(tx, data)

    await call.write(job)
    lobby.seeking.added(me)
    return data


async def unseek(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    data: dict[str, Any] = {}

    async def job(tx: WriteTx) -> None:
        old = await stored.withdraw(tx, me.id)
        if old is None:
            raise fail("not_found", "You are not looking for a match.")
        data.update(ladder=old["ladder"], length=_shown(old["length"]))
        await call.remember(tx, data)

    await call.write(job)
    lobby.seeking.here.discard(me.id)
    return data


async def seeks(call: Call) -> Any:
    lobby = call.lobby
    only = call.args.get("ladder")
    name = None if only is None else lobby.ladder(only).name
    rows = [r for r in await stored.pool(lobby.db) if name is None or r["ladder"] == name]
    return {"seeks": [{"player": r["name"], "ladder": r["ladder"], "length": _shown(r["length"]),
                       "range": r["points"], "since": r["since"],
                       "rating": lobby.seeking.rating(r["ladder"], r["name"])}
                      for r in rows]}


HANDLERS = {"seek": seek, "unseek": unseek, "seeks": seeks}
