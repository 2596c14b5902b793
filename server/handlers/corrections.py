"""Corrections: void and adjudicate append to the log, and what was derived from it follows."""

from __future__ import annotations

import time
from typing import Any

from server.api import LadderCorrected
from server.handlers import coming_back
from server.handlers.matches import finish
from server.lobby import Call, Effects, fail
from server.lobby.audience import to_players
from server.protocol import push
from server.store import matches as stored
from server.store import now
from server.store.handle import WriteTx


async def correct(call: Call, match_id: int, kind: str, new_status: str,
                  new_winner: str | None, reason: str | None,
                  seen: tuple[str, str | None] | None = None) -> dict[str, Any]:
    """Append a correction to the log and tell the plugins when the match had been rated.

    ``seen`` is the (status, winner) the caller checked the correction against:
    if the match changed since, the correction is refused rather than applied to
    a state nobody checked (say, an adjudication to a match voided meanwhile).

    Whether the match was rated (and where in the log) is read again inside the write job:
    an event close committed between the command's first look and its job rated the match
    as it stood, and only the job, which the close's transaction cannot interleave with,
    can know that.
    """
    lobby, admin = call.lobby, call.me
    started = time.perf_counter()
    row = await stored.with_event(lobby.db, match_id)
    if row is None:
        raise fail("not_found", f"No match {match_id}.")
    if seen is not None and (row["status"], row["winner"]) != seen:
        raise fail("conflict", f"Match {match_id} changed meanwhile; try again.")
    ladder = lobby.ladder(row["ladder"])
    names = row["side_a"].split("+") + row["side_b"].split("+")
    swap = new_winner is not None and row["winner"] not in (None, new_winner) \
        and row["score_a"] is not None
    old = (row["status"], row["winner"])
    data: dict[str, Any] = {"match": match_id, "ladder": ladder.name, "status": new_status,
                            "winner": _winner_name(row, new_winner), "reason": reason}

    async def job(tx: WriteTx) -> tuple[Effects, dict[str, Any]]:
        effects = Effects()
        now_row = await stored.with_event_in(tx, match_id)
        if now_row is None or (now_row["status"], now_row["winner"]) != old:
            raise fail("conflict", f"Match {match_id} changed meanwhile; try again.")
        # The corrected unit's place in the log: the match's own, or its closed event's.
        seq = now_row["seq"] if now_row["seq"] is not None else \
            now_row["event_seq"] if now_row["event_status"] == "closed" else None
        await stored.corrected(tx, match_id, kind, old, (new_status, new_winner), reason,
                               admin.id, now(), swap)
        full = {**data, "recomputed": seq is not None}
        if seq is not None:
            full.update(await lobby.emit(tx, LadderCorrected(ladder.name,
                                                             cause={"match": match_id}, seq=seq),
                                         effects))
        await coming_back.corrected(call, tx, now_row, kind, full)
        await call.remember(tx, full)
        return effects, full

    effects, full = await call.write(job)
    call.push(to_players(*names), push("match_corrected",
                                   {**data, "recomputed": full["recomputed"]}))
    call.committed(effects)
    lobby.metrics.corrected(kind, time.perf_counter() - started)
    return full


def _winner_name(row: Any, side: str | None) -> str | None:
    if side in ("a", "b"):
        return str(row[f"side_{side}"])
    return None


async def void(call: Call) -> Any:
    lobby = call.lobby
    mid = call.args["match"]
    live = lobby.matches.get(mid)
    if live is not None:
        if live.busy:
            raise fail("conflict", f"Match {mid} is being decided right now.")
        live.busy = True
        try:
            data = await correct(call, mid, "void", "voided", None, call.args["reason"])
        finally:
            live.busy = False
        lobby.end_live(live)
        call.tell_status(live.a, live.b)
        return data
    row = await stored.get(lobby.db, mid)
    if row is None:
        raise fail("not_found", f"No match {mid}.")
    if row["status"] in ("voided", "aborted"):
        raise fail("conflict", f"Match {mid} is already {row['status']}.")
    return await correct(call, mid, "void", "voided", None, call.args["reason"],
                         seen=(row["status"], row["winner"]))


async def adjudicate(call: Call) -> Any:
    lobby = call.lobby
    mid = call.args["match"]
    live = lobby.matches.get(mid)
    winner = call.args["winner"]
    if live is not None:
        name = next((n for n in (live.a, live.b) if n.casefold() == winner.casefold()), None)
        if name is None:
            raise fail("bad_request", f"{winner} does not play in match {mid}.")
        scores = live.claim_scores if live.claimed_by == name else None
        return await finish(call, live, name, "adjudicate", scores)
    row = await stored.get(lobby.db, mid)
    if row is None:
        raise fail("not_found", f"No match {mid}.")
    if row["status"] != "finished":
        raise fail("conflict", f"Match {mid} is {row['status']}; only finished or live matches "
                               "can be adjudicated.")
    side = next((s for s in ("a", "b") if winner.casefold() in
                 [n.casefold() for n in row[f"side_{s}"].split("+")]), None)
    if side is None:
        raise fail("bad_request", f"{winner} does not play in match {mid}.")
    if row["winner"] == side:
        raise fail("conflict", f"Match {mid} is already won by {row[f'side_{side}']}.")
    if row["winner"] == "draw":
        raise fail("bad_request", f"Match {mid} was a draw with scores; void it and record the "
                                  "right result instead.")
    return await correct(call, mid, "adjudicate", "finished", side, None,
                         seen=(row["status"], row["winner"]))


HANDLERS = {"void": void, "adjudicate": adjudicate}
