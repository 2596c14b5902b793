"""Talk: tell one player, say to the opponent, shout to everyone; block a player; an admin's
mute.

Who blocks whom and who is muted are read from the database at each message, so a block or
a mute made on any node holds on every node at once. A blocked player's tells, says and
invitations look delivered to them and reach nobody (:func:`ignores`).
"""

from __future__ import annotations

import time
from typing import Any

from server.commands import SHOUTS_KEPT, SHOUTS_SHOWN
from server.handlers.matches import my_match
from server.lobby import Call, Player, fail
from server.lobby.audience import Audience, to_players
from server.protocol import push
from server.store import now
from server.store import talk as stored
from server.store.handle import WriteTx

EVERYONE = Audience(everyone=True)


async def ignores(call: Call, listener: Player) -> bool:
    """Whether ``listener`` blocks the caller: what the caller sends them goes nowhere, and
    the caller is not told."""
    return await stored.blocks(call.lobby.db, listener.id, call.me.id)


def _shown(stamp: str) -> str:
    """``2026-12-03T17:05:00Z`` as people read it: ``2026-12-03 17:05 UTC``."""
    return f"{stamp[:10]} {stamp[11:16]} UTC"


async def _may_talk(call: Call, shout: bool = False) -> None:
    """Refuse a muted player (saying until when) or one talking too fast."""
    me = call.me
    muted, until = await stored.muted(call.lobby.db, me.id, now())
    if muted:
        when = f"until {_shown(until)}" if until else "until an admin unmutes you"
        raise fail("forbidden", f"An admin has muted you {when}: you cannot tell, say or "
                                "shout meanwhile.")
    call.lobby.talk_limit.take(me.key, call.session.address, shout)


async def tell(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    target = lobby.player(call.args["name"])
    if target.key == me.key:
        raise fail("bad_request", "You cannot tell yourself.")
    if target.key not in lobby.online and target.key not in lobby.elsewhere:
        raise fail("not_found", f"{target.name} is not online.")
    await _may_talk(call)
    text = call.args["text"]
    if not await ignores(call, target):
        call.push(to_players(target.name), push("told", {"from": me.name, "text": text}))
    return {"to": target.name, "text": text}


async def say(call: Call) -> Any:
    me = call.me
    m = await my_match(call)
    opponent = call.lobby.player(m.b if me.name == m.a else m.a)
    await _may_talk(call)
    text = call.args["text"]
    if not await ignores(call, opponent):
        call.push(to_players(opponent.name), push("said", {"from": me.name, "text": text,
                                                             "match": m.id}))
    return {"to": opponent.name, "text": text, "match": m.id}


async def shout(call: Call) -> Any:
    me = call.me
    await _may_talk(call, shout=True)
    text, at = call.args["text"], now()

    async def job(tx: WriteTx) -> dict[str, Any]:
        sid = await stored.shout(tx, at, me.name, text, SHOUTS_KEPT)
        data = {"id": sid, "at": at, "from": me.name, "text": text}
        await call.remember(tx, data)
        return data

    data = await call.write(job)
    call.push(EVERYONE, push("shouted", data), skip_me=True)
    return data


async def shouts(call: Call) -> Any:
    count = min(int(call.args.get("count", SHOUTS_SHOWN)), SHOUTS_KEPT)
    return {"shouts": await stored.latest_shouts(call.lobby.db, count) if count else []}


async def _blocking(call: Call, target: Player, blocked: bool) -> Any:
    """Block or unblock ``target`` (idempotent either way), the reply stored for retries."""
    me = call.me

    async def job(tx: WriteTx) -> dict[str, Any]:
        await (stored.block if blocked else stored.unblock)(tx, me.id, target.id)
        data = {"player": target.name, "blocked": blocked}
        await call.remember(tx, data)
        return data

    return await call.write(job)


async def block(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    if call.args.get("name") is None:
        return {"blocking": await stored.blocked_by(lobby.db, me.id)}
    target = lobby.player(call.args["name"])
    if target.key == me.key:
        raise fail("bad_request", "You cannot block yourself.")
    return await _blocking(call, target, True)


async def unblock(call: Call) -> Any:
    return await _blocking(call, call.lobby.player(call.args["name"]), False)


async def mute(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    target = lobby.player(call.args["name"])
    if target.key == me.key:
        raise fail("bad_request", "You cannot mute yourself.")
    minutes = call.args.get("minutes")
    if minutes == 0:
        raise fail("bad_request", "MINUTES must be at least 1 (leave it out to mute until "
                                  "you unmute).")
    until = None if minutes is None else time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 60 * minutes))

    async def job(tx: WriteTx) -> dict[str, Any]:
        await stored.mute(tx, target.id, until, me.id, now())
        data = {"player": target.name, "muted": True, "until": until}
        await call.remember(tx, data)
        return data

    data = await call.write(job)
    call.push(to_players(target.name), push("muted", {"muted": True, "until": until,
                                                      "by": me.name}))
    return data


async def unmute(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    target = lobby.player(call.args["name"])

    had = False

    async def job(tx: WriteTx) -> dict[str, Any]:
        nonlocal had
        had = await stored.unmute(tx, target.id)
        data = {"player": target.name, "muted": False, "until": None}
        await call.remember(tx, data)
        return data

    data = await call.write(job)
    if had:
        call.push(to_players(target.name), push("muted", {"muted": False, "until": None,
                                                          "by": me.name}))
    return data


HANDLERS = {"tell": tell, "say": say, "shout": shout, "shouts": shouts, "block": block,
            "unblock": unblock, "mute": mute, "unmute": unmute}
