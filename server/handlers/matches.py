"""Live matches: invite → join → resign / report+confirm / claim / abort."""

from __future__ import annotations

import math
import time
from typing import Any

from server.api import Game, LadderConfig, MatchFinished, RatedUnit
from server.handlers import coming_back
from server.lobby import Call, Effects, Invitation, LiveMatch, Lobby, Player, fail
from server.lobby.audience import Audience, to_players
from server.lobby.presence import NOT_READY
from server.lobby.state import LIVE
from server.protocol import push
from server.store import invitations as stored_invitations
from server.store import matches as stored
from server.store import now, players, today
from server.store import seeks as stored_seeks
from server.store import talk as stored_talk
from server.store.handle import WriteTx


def check_score(length: int | None, winner_score: int, loser_score: int) -> None:
    """A finished match's score: the winner ahead and, in a match to ``length`` points (on a
    ladder whose system plays to a length), at the length."""
    if winner_score <= loser_score:
        raise fail("bad_request", "Impossible score: the winner must have more points.")
    if length is not None and (winner_score < length or loser_score >= length):
        raise fail("bad_request", f"Impossible score for a {length}-point match: the winner "
                                  f"reaches {length}, the loser stays below it.")


IN_WORDS = {"playing": "being played", "claimed": "waiting for an answer to a reported win"}
"""A live match's status as a player says it."""


def _others(call: Call) -> bool:
    """Other nodes beat: this node's copies of matches and invitations may be behind theirs
    (their notes on the way), so a miss or a doubt reads the row."""
    sharing = call.lobby.sharing
    return sharing is not None and bool(sharing.alive)


async def my_match(call: Call) -> LiveMatch:
    """The match the caller plays (played or claimed): not one of theirs that is disputed and
    waits for an admin, which they may have beside it."""
    lobby = call.lobby
    mid = lobby.match_of.get(call.me.name)
    if _others(call) and (mid is None or mid > 0):
        # the match may have been started, disputed or ended on another node a moment ago
        row = await stored.live_of(lobby.db, call.me.id)
        if mid is not None and (row is None or row["id"] != mid):
            lobby.settle(mid, await stored.get(lobby.db, mid))
        if row is not None:
            lobby.settle(row["id"], row)
        mid = lobby.match_of.get(call.me.name)
    if mid is None:
        waiting = lobby.disputed_of(call.me.name)
        if waiting:
            raise fail("conflict", f"Match {waiting[-1].id} is disputed; an admin will decide "
                                   "it. You are free to play another match meanwhile.")
        raise fail("conflict", "You are not playing a match.")
    m = call.lobby.matches.get(mid)
    if m is None:  # reserved (-1) while a join is being saved
        raise fail("conflict", "Your match is just being started; try again in a moment.")
    return m


async def match_for(call: Call, match_id: int) -> LiveMatch:
    me = call.me
    if match_id not in call.lobby.matches and _others(call):  # started elsewhere just now?
        call.lobby.settle(match_id, await stored.get(call.lobby.db, match_id))
    m = call.lobby.matches.get(match_id)
    if m is None:
        raise fail("not_found", f"No live match {match_id}.")
    if me.name not in (m.a, m.b):
        raise fail("forbidden", f"Match {match_id} is not yours.")
    return m


async def still(call: Call, tx: WriteTx, m: LiveMatch, statuses: tuple[str, ...] = LIVE,
                claimed_by: str | None = None) -> None:
    """On a database several nodes share, the match's row decides, not this node's copy (a
    command on another node may have changed it a moment ago): it must still be in one of
    ``statuses`` (and claimed by ``claimed_by``) as the writer sees it, holding the row until
    its commit; otherwise the command is refused and changes nothing. One node alone decides in
    memory (``busy``), as the row would."""
    if call.lobby.sharing is None or await stored.still_in(tx, m.id, statuses, claimed_by):
        return
    row = await stored.state_in(tx, m.id)  # what the refusal says (unless it changed back)
    if row is not None and row["status"] in statuses and (
            claimed_by is None or row["claimed_by"] == claimed_by):
        return
    status = "gone" if row is None else row["status"]
    if status not in LIVE:
        call.lobby.settle(m.id, None)  # its node's note may be on its way still
        raise fail("conflict", f"Match {m.id} has ended ({status}).")
    raise fail("conflict", f"Match {m.id} is {IN_WORDS.get(status, status)} now; look again "
                           "before you answer.")


def finished_data(m: LiveMatch, winner: str, how: str, rated: bool,
                  fields: dict[str, Any]) -> dict[str, Any]:
    """``match_finished``: the result, and what the plugins add (the rating changes)."""
    return {"match": m.id, "ladder": m.ladder,
            "length": "unlimited" if m.length is None else m.length,
            "winner": winner, "loser": m.opponent(winner), "how": how,
            "rated": rated, "changes": [], **fields}


async def finish(call: Call, m: LiveMatch, winner: str, how: str,
                 scores: tuple[int, int] | None = None, dropper: str | None = None,
                 statuses: tuple[str, ...] = LIVE, claimed_by: str | None = None
                 ) -> dict[str, Any]:
    """End a live match with a winner: result, ratings and history commit together.

    ``scores`` are the winner's and the loser's. Only after the commit does
    anyone hear of it: the sender of ``call``, whose command ended it, from the
    reply (the same object), the players and the ladder's watchers from
    ``match_finished``.
    """
    lobby = call.lobby
    if m.busy:
        raise fail("conflict", f"Match {m.id} is already being decided.")
    m.busy = True
    try:
        winner_side = m.side_of(winner)
        if scores is None:
            sa, sb = (1, 0) if winner_side == "a" else (0, 1)
            kept: tuple[int | None, int | None] = (None, None)
        else:
            sa, sb = scores if winner_side == "a" else (scores[1], scores[0])
            kept = (sa, sb)
        played_on = today()
        game = Game((m.a,), (m.b,), sa, sb, played_on, m.length)
        ladder = lobby.ladder(m.ladder)
        rated = ladder.system.counts(ladder.options, game)
        ids = {m.a: lobby.player(m.a).id, m.b: lobby.player(m.b).id}

        async def job(tx: WriteTx) -> tuple[Effects, dict[str, Any]]:
            await still(call, tx, m, statuses, claimed_by)
            effects = Effects()
            when = now()
            seq = await tx.next_seq(m.ladder) if rated else None
            await stored.finish(tx, m.id, winner_side, kept, how, seq, when,
                                played_on.isoformat())
            if dropper is not None:
                await players.dropped(tx, ids[dropper])
            fields: dict[str, Any] = {}
            if seq is not None:
                unit = RatedUnit(m.ladder, seq, when, (game,), ids, match_id=m.id)
                fields = await lobby.emit(tx, MatchFinished(unit), effects)
            data = finished_data(m, winner, how, rated, fields)
            await coming_back.finished(call, tx, m, data)
            await call.remember(tx, data)
            return effects, data

        effects, data = await call.write(job)
    except BaseException:
        m.busy = False
        raise
    lobby.end_live(m)
    if dropper is not None:
        lobby.player(dropper).dropped += 1
    call.push(Audience((m.a, m.b), watchers=m.ladder), push("match_finished", data),
              skip_me=True)
    call.committed(effects)
    call.tell_status(m.a, m.b)
    return data


def _length(call: Call) -> int | None:
    raw = call.args.get("length", 1)
    return None if raw == "unlimited" else int(raw)


def _opponent(call: Call, ladder: LadderConfig, yourself: str) -> Player:
    """The player named by NAME, to play a live match on ``ladder`` against the caller
    (``yourself``: the refusal when NAME is the caller)."""
    if not ladder.system.live_matches:
        raise fail("bad_request", f"Ladder {ladder.name!r} ({ladder.system.title}) is rated by "
                                  "events only; 'ladders' shows where live matches are played.")
    target = call.lobby.player(call.args["name"])
    if target.key == call.me.key:
        raise fail("bad_request", yourself)
    return target


async def stake(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    ladder = lobby.ladder(call.args["ladder"])
    target = _opponent(call, ladder, "You cannot play yourself.")
    length = _length(call)
    data = lobby.describe_match(ladder.name, me.name, target.name, length)["stake"]
    if data is None:
        raise fail("bad_request", "An unlimited match is never rated: nothing is at stake."
                   if length is None else f"Ladder {ladder.name!r} says nothing of what a "
                                          "match puts at stake.")
    return data


async def invite(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    ladder = lobby.ladder(call.args["ladder"])
    target = _opponent(call, ladder, "You cannot invite yourself.")
    if target.key not in lobby.online and target.key not in lobby.elsewhere:
        raise fail("not_found", f"{target.name} is not online.")
    if lobby.presence.status(target.name) == NOT_READY:
        raise fail("conflict", f"{target.name} is not taking invitations now (ready off).")
    for who in (me, target):
        if await _playing(call, who):
            raise fail("conflict", f"{who.name} is already playing a match.")
    length = _length(call)
    inv = Invitation(me.name, target.name, ladder.name, length)
    fields = lobby.describe_match(ladder.name, me.name, target.name, length)
    _count_invitation(call, target)
    if await stored_talk.blocks(lobby.db, target.id, me.id):  # reaches nobody, looks sent
        lobby.invitations.stamp(inv)
        return {"to": target.name, "ladder": ladder.name, "length": inv.shown_length,
                "expires_at": inv.expires_at, "replaced": False, **fields}
    if _others(call):
        # its row decides an answer on another node racing a withdrawal here (alone, a node
        # decides in memory: no commit for an invitation)
        lobby.invitations.stamp(inv)
        await call.write(lambda tx: stored_invitations.put(
            tx, target.key, me.key, ladder.name, length, inv.expires_at))
        inv.stored = True
    replaced = lobby.invitations.add(inv)
    lobby.invitations_changed(["add", inv.note()])
    call.push(to_players(target.name), push("invited", {
        "from": me.name, "ladder": ladder.name, "length": inv.shown_length,
        "expires_at": inv.expires_at, **fields}))
    return {"to": target.name, "ladder": ladder.name, "length": inv.shown_length,
            "expires_at": inv.expires_at, "replaced": replaced, **fields}


def _count_invitation(call: Call, target: Player) -> None:
    """Take the invitation's tokens (:mod:`server.lobby.invitation_limit`) or refuse it."""
    refusal = call.lobby.invitation_limit.take(call.me.key, target.key)
    if refusal is None:
        return
    wait = f"try again in {math.ceil(refusal.wait)} s"
    n = refusal.per_minute
    if refusal.limit == "sent":
        raise fail("rate_limited", f"You are sending invitations too fast (at most {n} a "
                                   f"minute); {wait}.")
    if refusal.limit == "pair":
        raise fail("rate_limited", f"You have invited {target.name} too often (at most {n} "
                                   f"times a minute); {wait}.")
    raise fail("rate_limited", f"{target.name} is being invited too often (at most {n} "
                               f"invitations a minute); {wait}.")


async def _playing(call: Call, who: Player) -> bool:
    """Whether ``who`` plays a live match. On a database nodes share, this node's copy may
    not have heard yet that a match another node ended has ended: its row says."""
    lobby = call.lobby
    mid = lobby.match_of.get(who.name)
    if mid is None:
        return False
    if not _others(call) or mid < 0:
        return True
    lobby.settle(mid, await stored.get(lobby.db, mid))
    return who.name in lobby.match_of


async def _learn(call: Call, invitee: Player, inviter: Player) -> None:
    """On a database nodes share, an invitation made on another node that this node's copy
    has not heard of yet (its note is on its way) is read from its row."""
    lobby = call.lobby
    if not _others(call) or lobby.invitations.get(invitee.key, inviter.key) is not None:
        return  # alone, this node's copy is the whole truth
    row = await stored_invitations.find(lobby.db, invitee.key, inviter.key)
    if row is None or (row["expires_at"] is not None and row["expires_at"] <= now()):
        return
    if lobby.invitations.get(invitee.key, inviter.key) is None:
        lobby.invitations.add(Invitation(inviter.name, invitee.name, row["ladder"],
                                         row["length"], row["expires_at"], here=False,
                                         stored=True))


def _invitation_from(call: Call, inviter: Player) -> Invitation:
    """The caller's standing invitation from ``inviter``, taken (it is answered now)."""
    inv = call.lobby.invitations.take(call.me.key, inviter.key)
    if inv is None:
        raise fail("not_found", f"{inviter.name} has not invited you.")
    if inv.expired:
        raise fail("not_found", f"{inviter.name}'s invitation has expired.")
    return inv


async def join(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    inviter = lobby.player(call.args["name"])
    await _learn(call, me, inviter)
    inv = lobby.invitations.get(me.key, inviter.key)
    if inv is not None and not inv.expired:
        for who in (me, inviter):
            if await _playing(call, who):
                raise fail("conflict", f"{who.name} is already playing a match.")
        # (on a database nodes share, an inviter who left took the invitation's row along,
        # which the join's transaction finds; this node may not have heard of it yet)
        if inviter.key not in lobby.online and lobby.sharing is None:
            raise fail("conflict", f"{inviter.name} is no longer online.")
    inv = _invitation_from(call, inviter)
    lobby.match_of[me.name] = lobby.match_of[inviter.name] = -1  # reserved while saving
    summary = lobby.match_summary(LiveMatch(0, inv.ladder, inv.length, inviter.name, me.name))
    gone = False  # the database says the invitation is no more

    async def job(tx: WriteTx) -> int:
        nonlocal gone
        if inv.stored:
            refusal = await _answerable(tx, me, inviter)
            if refusal is not None:
                gone = True
                raise fail("not_found", refusal)
        elif await _paired_meanwhile(tx, call.lobby, inviter, me):
            raise fail("conflict", f"{inviter.name} or you started another match a moment ago.")
        await stored_seeks.drop_all(tx, (inviter.id, me.id))
        mid = await stored.start_live(tx, inv.ladder, (inviter.name, inviter.id),
                                      (me.name, me.id), inv.length, today().isoformat(), now())
        summary["match"] = mid
        await call.remember(tx, summary)
        return mid

    try:
        mid = await call.write(job)
    except BaseException:
        for name in (me.name, inviter.name):
            if lobby.match_of.get(name) == -1:  # not a match an automatch pass started since
                del lobby.match_of[name]
        if not gone:
            lobby.invitations.restore(inv)  # nothing was saved: it may be answered again
        raise
    lobby.begin_live(LiveMatch(mid, inv.ladder, inv.length, inviter.name, me.name))
    lobby.invitations.drop_sent(me.key)
    lobby.invitations.drop_received(inviter.key)
    lobby.invitations_changed(["take", me.key, inviter.key], ["drop_sent", me.key],
                              ["drop_received", inviter.key])
    call.push(to_players(inviter.name), push("match_started", summary))
    call.tell_status(inviter.name, me.name)
    return summary


async def _paired_meanwhile(tx: WriteTx, lobby: Lobby, a: Player, b: Player) -> bool:
    """Whether an automatch pass paired either player after the join's own checks.

    On PostgreSQL other nodes pair from the one pool: the players' rows say (held until the
    commit). On SQLite this process alone starts matches: a join reserves both players in
    ``match_of`` before its job, and a pass's job names whom it pairs in ``seeking.pairing``
    until their matches begin, so memory says it with no query."""
    if tx.backend == "postgresql":
        return await stored_invitations.playing(tx, a.id, b.id)
    return bool(lobby.seeking.pairing & {a.key, b.key})


async def _answerable(tx: WriteTx, me: Player, inviter: Player) -> str | None:
    """On a database nodes share, in the answer's transaction: the invitation's row is taken
    and neither player has a live match. The refusal when the invitation is no more
    (another node's withdrawal or answer took it first, or it expired)."""
    row = await stored_invitations.take(tx, me.key, inviter.key)
    if row is None:
        return f"{inviter.name}'s invitation was withdrawn or answered a moment ago."
    if row["expires_at"] is not None and row["expires_at"] <= now():
        return f"{inviter.name}'s invitation has expired."
    if await stored_invitations.playing(tx, me.id, inviter.id):
        raise fail("conflict", f"{inviter.name} or you started another match a moment ago.")
    await stored_invitations.drop(tx, sent_by=me.key, received_by=inviter.key)
    return None


async def _taken(call: Call, inv: Invitation, invitee: Player, inviter: Player,
                 gone: str) -> None:
    """A decline or a withdrawal, taken from the copy here: on a database nodes share, its
    row too (``gone``: the refusal when another node's answer took it first); the other
    nodes' copies follow."""
    lobby = call.lobby
    if inv.stored:
        try:
            row = await call.write(lambda tx: stored_invitations.take(tx, invitee.key,
                                                                      inviter.key))
        except BaseException:
            lobby.invitations.restore(inv)
            raise
        if row is None:
            raise fail("not_found", gone)
    lobby.invitations_changed(["take", invitee.key, inviter.key])


async def decline(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    inviter = lobby.player(call.args["name"])
    await _learn(call, me, inviter)
    inv = _invitation_from(call, inviter)
    await _taken(call, inv, me, inviter, f"{inviter.name}'s invitation was withdrawn or "
                                         "answered a moment ago.")
    call.push(to_players(inviter.name), push("declined", {"by": me.name}))
    return {"declined": inviter.name}


async def uninvite(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    invitee = lobby.player(call.args["name"])
    await _learn(call, invitee, me)
    inv = lobby.invitations.take(invitee.key, me.key)
    if inv is None:
        raise fail("not_found", f"You have not invited {invitee.name}.")
    if inv.expired:
        raise fail("not_found", f"Your invitation to {invitee.name} has expired.")
    await _taken(call, inv, invitee, me, f"{invitee.name} answered your invitation a moment "
                                         "ago.")
    call.push(to_players(invitee.name), push("invitation_withdrawn", {
        "from": me.name, "ladder": inv.ladder}))
    return {"withdrawn": invitee.name}


async def invitations(call: Call) -> Any:
    lobby, me = call.lobby, call.me
    sent = [{"to": i.invitee, "ladder": i.ladder, "length": i.shown_length,
             "expires_at": i.expires_at}
            for i in lobby.invitations.standing_sent(me.key)]
    received = [{"from": i.inviter, "ladder": i.ladder, "length": i.shown_length,
                 "expires_at": i.expires_at,
                 **lobby.describe_match(i.ladder, i.inviter, i.invitee, i.length)}
                for i in lobby.invitations.standing_received(me.key)]
    return {"sent": sent, "received": received}


async def resign(call: Call) -> Any:
    m = await my_match(call)
    if m.status == "disputed":
        raise fail("conflict", f"Match {m.id} is disputed; an admin will decide it.")
    return await finish(call, m, m.opponent(call.me.name), "resign",
                        statuses=("playing", "claimed"))


async def report_win(call: Call) -> Any:
    m = await my_match(call)
    me = call.me.name
    if m.status != "playing" or m.busy:
        raise fail("conflict", f"A win is already reported in match {m.id}; it can be reported "
                               "only once.")
    mine, theirs = call.args.get("score_a"), call.args.get("score_b")
    if (mine is None) != (theirs is None):
        raise fail("bad_request", "Give both scores (yours first) or none.")
    scores = None if mine is None or theirs is None else (mine, theirs)
    if scores is not None:
        ladder = call.lobby.ladder(m.ladder)
        check_score(m.length if ladder.system.match_lengths else None, *scores)
    m.busy = True
    data = {"match": m.id, "by": me, "scores": list(scores) if scores else None,
            "status": "claimed"}
    try:
        async def job(tx: WriteTx) -> None:
            in_sides: tuple[int | None, int | None] = (None, None) if scores is None else (
                scores if m.side_of(me) == "a" else (scores[1], scores[0]))
            await still(call, tx, m, ("playing",))
            await stored.claimed(tx, m.id, me, in_sides)
            await call.remember(tx, data)

        await call.write(job)
    finally:
        m.busy = False
    m.status, m.claimed_by, m.claim_scores = "claimed", me, scores
    call.lobby.live_changed(m)
    call.push(to_players(m.opponent(me)), push("result_claimed", data))
    return data


async def _claim_to_answer(call: Call, match_id: int) -> LiveMatch:
    m = await match_for(call, match_id)
    if m.status != "claimed" and _others(call):  # claimed on another node a moment ago?
        call.lobby.settle(m.id, await stored.get(call.lobby.db, m.id))
    if m.status != "claimed" or m.claimed_by is None:
        raise fail("conflict", f"Match {m.id} has no reported win to answer.")
    if m.claimed_by == call.me.name:
        raise fail("forbidden", "You cannot answer your own reported win; your opponent must.")
    return m


async def confirm(call: Call) -> Any:
    m = await _claim_to_answer(call, call.args["match"])
    assert m.claimed_by is not None
    return await finish(call, m, m.claimed_by, "confirm", m.claim_scores,
                        statuses=("claimed",), claimed_by=m.claimed_by)


async def dispute(call: Call) -> Any:
    m = await _claim_to_answer(call, call.args["match"])
    if m.busy:
        raise fail("conflict", f"Match {m.id} is already being decided.")
    m.busy = True
    since = now()
    data = {"match": m.id, "status": "disputed", "by": call.me.name, "since": since}
    try:
        async def job(tx: WriteTx) -> None:
            await still(call, tx, m, ("claimed",), m.claimed_by)
            await stored.disputed(tx, m.id, since)
            await call.remember(tx, data)

        await call.write(job)
    finally:
        m.busy = False
    m.status, m.disputed_at = "disputed", since
    call.lobby.hold(m)  # its players are free to play others while an admin decides it
    call.lobby.live_changed(m)
    call.push(Audience((m.a, m.b), admins=True), push("result_disputed", data))
    call.tell_status(m.a, m.b)
    return data


async def claim(call: Call) -> Any:
    m = await match_for(call, call.args["match"])
    me = call.me.name
    other = m.opponent(me)
    if m.status == "disputed":
        raise fail("conflict", f"Match {m.id} is disputed; an admin will decide it.")
    since = m.away_since.get(other)
    if since is None:
        raise fail("conflict", f"{other} is connected; you can claim only after they drop.")
    waited = time.monotonic() - since
    timeout = call.lobby.config.drop_timeout
    if waited < timeout:
        raise fail("conflict", f"{other} has been away {waited:.0f} s; you can claim after "
                               f"{timeout:.0f} s.")
    return await finish(call, m, me, "claim", dropper=other, statuses=("playing", "claimed"))


async def abort(call: Call) -> Any:
    m = await my_match(call)
    me = call.me.name
    if m.status == "disputed":
        raise fail("conflict", f"Match {m.id} is disputed; an admin will decide it.")
    other = m.opponent(me)
    if m.abort_by is None or m.abort_by == me:
        m.abort_by = me
        call.lobby.live_changed(m)
        data = {"match": m.id, "status": "abort_requested", "by": me}
        call.push(to_players(other), push("abort_requested", data))
        return data
    if m.busy:
        raise fail("conflict", f"Match {m.id} is already being decided.")
    m.busy = True
    data = {"match": m.id, "status": "aborted", "rated": False}
    try:
        async def job(tx: WriteTx) -> None:
            await still(call, tx, m, ("playing", "claimed"))
            await stored.aborted(tx, m.id, now())
            await coming_back.aborted(call, tx, m)
            await call.remember(tx, data)

        await call.write(job)
    except BaseException:
        m.busy = False
        raise
    call.lobby.end_live(m)
    call.push(to_players(other), push("match_aborted", data))
    call.tell_status(m.a, m.b)
    return data


HANDLERS = {"stake": stake, "invite": invite, "invitations": invitations, "uninvite": uninvite,
            "join": join, "decline": decline, "resign": resign,
            "report win": report_win, "confirm": confirm, "dispute": dispute, "claim": claim,
            "abort": abort}
