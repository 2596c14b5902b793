"""Coming back: a player whose match ended while they were connected to no server (claimed
after they dropped, decided or voided by an admin, resigned, confirmed or aborted by the
opponent) is told at their next login how it ended and what it did to their rating.

What to tell is written in the transaction that ends or corrects the match, so whichever
server the player comes back to finds it; the rating change is the one the plugins reported
for that transaction (``changes`` in its reply).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from server.lobby import Call, LiveMatch
from server.store import now
from server.store import while_away as stored
from server.store.handle import WriteTx

SHOWN = 20  # the newest this many are told; the reply counts the others


def _away(call: Call, name: str) -> bool:
    key = name.casefold()
    return key not in call.lobby.online and key not in call.lobby.elsewhere


def _rating(changes: Sequence[dict[str, Any]], name: str) -> dict[str, Any] | None:
    own = next((c for c in changes if c.get("player") == name), None)
    if own is None:
        return None
    return {"before": own.get("before"), "after": own["after"], "change": own.get("change")}


async def _note(call: Call, tx: WriteTx, names: Iterable[str],
                ended: Callable[[], dict[str, Any]], changes: Sequence[dict[str, Any]]) -> None:
    """A note of ``ended()`` for each of ``names`` who is away (made only if one is: a match
    usually ends with both players here)."""
    players = call.lobby.players
    away = [player for name in names if (player := players.get(name.casefold())) is not None
            and player.password_hash and _away(call, player.name)]
    if not away:  # here now (told by the push), or entries nobody can log in as
        return
    at, note = now(), ended()
    for player in away:
        await stored.note(tx, player.id, note["match"], at,
                          {**note, "at": at, "rating": _rating(changes, player.name)})


async def finished(call: Call, tx: WriteTx, m: LiveMatch, data: dict[str, Any]) -> None:
    """Live match ``m`` ended with a winner (``data``: the match-finished object)."""
    await _note(call, tx, (m.a, m.b), lambda: {
        "match": m.id, "ladder": m.ladder, "length": data["length"], "a": m.a, "b": m.b,
        "how": data["how"], "status": "finished", "winner": data["winner"], "reason": None,
        "rated": data["rated"]}, data.get("changes", []))


async def aborted(call: Call, tx: WriteTx, m: LiveMatch) -> None:
    await _note(call, tx, (m.a, m.b), lambda: {
        "match": m.id, "ladder": m.ladder, "length": m.summary()["length"], "a": m.a,
        "b": m.b, "how": "abort", "status": "aborted", "winner": None, "reason": None,
        "rated": False}, [])


async def corrected(call: Call, tx: WriteTx, row: Any, kind: str, data: dict[str, Any]) -> None:
    """An admin voided or adjudicated the match of ``row`` (``data``: the correction's reply,
    with the rating changes of its recomputation)."""
    sides = row["side_a"].split("+") + row["side_b"].split("+")
    await _note(call, tx, sides, lambda: {
        "match": data["match"], "ladder": data["ladder"],
        "length": "unlimited" if row["length"] is None else row["length"],
        "a": row["side_a"], "b": row["side_b"], "how": kind, "status": data["status"],
        "winner": data["winner"], "reason": data["reason"],
        "rated": data["status"] == "finished" and bool(data.get("recomputed"))},
        data.get("changes", []))


async def told(tx: WriteTx, player_id: int) -> dict[str, Any] | None:
    """The login reply's ``while_away``: what ended the player's matches since they were last
    connected (the newest :data:`SHOWN`, oldest first, and how many more), told once."""
    notes = await stored.take(tx, player_id)
    if not notes:
        return None
    return {"matches": notes[-SHOWN:], "more": max(0, len(notes) - SHOWN)}
