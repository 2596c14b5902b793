"""ban and unban: an admin keeps an account out of the lobby, or lets it back in.

The ban and its ``account_changes`` row are one transaction; every server (this one too)
follows that row within a second: the account's open connection is told why and closed, and
its logins are refused (``banned``) until the ban ends or is lifted.
"""

from __future__ import annotations

from typing import Any

from server.lobby import Call, fail
from server.store import bans, now
from server.store.handle import WriteTx


async def _account(tx: WriteTx, name: str) -> tuple[int, str]:
    """The account called ``name``, held until the commit on PostgreSQL (a ``player remove``
    racing it waits); refused unless it is one."""
    lock = " FOR KEY SHARE" if tx.backend == "postgresql" else ""
    row = await tx.fetchone(f"SELECT id, name, password_hash FROM players WHERE name_key = ?"
                            f"{lock}", (name.casefold(),))
    if row is None:
        raise fail("not_found", f"No player named {name!r}.")
    if row[2] is None:
        raise fail("bad_request", f"{row[1]} has no account (a name entered with results): "
                                  "there is no login to ban.")
    return int(row[0]), str(row[1])


async def ban(call: Call) -> Any:
    me, name = call.me, call.args["name"]
    if name.casefold() == me.key:
        raise fail("bad_request", "You cannot ban yourself.")
    day, reason = call.args.get("until"), call.args.get("reason")
    at = now()
    try:
        until = None if day is None else bans.future_end(day, at)
    except ValueError as e:
        raise fail("bad_request", f"{e}.") from None

    async def job(tx: WriteTx) -> dict[str, Any]:
        pid, shown = await _account(tx, name)
        await bans.ban(tx, pid, until, reason, me.id, me.name, at)
        data = {"player": shown, "banned": True, "until": until, "reason": reason}
        await call.remember(tx, data)
        return data

    return await call.write(job)


async def unban(call: Call) -> Any:
    me, name = call.me, call.args["name"]

    async def job(tx: WriteTx) -> dict[str, Any]:
        pid, shown = await _account(tx, name)
        lifted = await bans.unban(tx, pid, me.id, me.name, now())
        data = {"player": shown, "banned": False, "lifted": lifted}
        await call.remember(tx, data)
        return data

    return await call.write(job)


HANDLERS = {"ban": ban, "unban": unban}
