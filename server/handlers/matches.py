"""Live matches on FIBS ladders: invite → join → resign / report+confirm / claim / abort."""

from __future__ import annotations

import time
from typing import Any

import aiosqlite

from server.api import Game, MatchFinished, RatedUnit
from server.lobby import Effects, Invitation, LiveMatch, Lobby, LobbyError, Session, fail, handler
from server.protocol import push
from server.store import now, today
from server.store.legacy import new_match_id, next_seq, write_later


def check_score(length: int | None, winner_score: int, loser_score: int) -> None:
    """A finished match's score: the winner ahead and, in a match to ``length`` points (on a
    ladder whose system plays to a length), at the length."""
    if winner_score <= loser_score:
        raise fail("bad_request", "Impossible score: the winner must have more points.")
    if length is not None and (winner_score < length or loser_score >= length):
        raise fail("bad_request", f"Impossible score for a {length}-point match: the winner "
                                  f"reaches {length}, the loser stays below it.")


def my_match(lobby: Lobby, session: Session) -> LiveMatch:
    me = lobby.me(session)
    mid = lobby.match_of.get(me.name)
    if mid is None:
        raise fail("conflict", "You are not playing a match.")
    m = lobby.matches.get(mid)
    if m is None:  # reserved (-1) while a join is being saved
        raise fail("conflict", "Your match is just being started; try again in a moment.")
    return m


def match_for(lobby: Lobby, session: Session, match_id: int) -> LiveMatch:
    me = lobby.me(session)
    m = lobby.matches.get(match_id)
    if m is None:
        raise fail("not_found", f"No live match {match_id}.")
    if me.name not in (m.a, m.b):
        raise fail("forbidden", f"Match {match_id} is not yours.")
    return m


def finished_data(m: LiveMatch, winner: str, how: str, rated: bool,
                  fields: dict[str, Any]) -> dict[str, Any]:
    """``match_finished``: the result, and what the plugins add (the rating changes)."""
    return {"match": m.id, "ladder": m.ladder,
            "length": "unlimited" if m.length is None else m.length,
            "winner": winner, "loser": m.opponent(winner), "how": how,
            "rated": rated, "changes": [], **fields}


async def finish(lobby: Lobby, by: Session, m: LiveMatch, winner: str, how: str,
                 scores: tuple[int, int] | None = None, dropper: str | None = None
                 ) -> dict[str, Any]:
    """End a live match with a winner: result, ratings and history commit together.

    ``scores`` are the winner's and the loser's. Only after the commit does
    anyone hear of it: ``by``, whose command ended it, from the reply (the same
    object), the players and the ladder's watchers from ``match_finished``.
    """
    if m.busy:
        raise fail("conflict", f"Match {m.id} is already being decided.")
    m.busy = True
    try:
        winner_side = m.side_of(winner)
        if scores is None:
            sa, sb = (1, 0) if winner_side == "a" else (0, 1)
            stored: tuple[int | None, int | None] = (None, None)
        else:
            sa, sb = scores if winner_side == "a" else (scores[1], scores[0])
            stored = (sa, sb)
        played_on = today()
        game = Game((m.a,), (m.b,), sa, sb, played_on, m.length)
        ladder = lobby.ladder(m.ladder)
        rated = ladder.system.counts(ladder.options, game)
        ids = {m.a: lobby.player(m.a).id, m.b: lobby.player(m.b).id}

        remember = lobby.remembering()

        async def job(conn: aiosqlite.Connection) -> tuple[Effects, dict[str, Any]]:
            effects = Effects()
            fields = await rate(conn, effects)
            data = finished_data(m, winner, how, rated, fields)
            await remember(conn, data)
            return effects, data

        async def rate(conn: aiosqlite.Connection, effects: Effects) -> dict[str, Any]:
            when = now()
            seq = next_seq(conn) if rated else None
            await write_later(
                conn,
                """UPDATE matches SET status = 'finished', winner = ?, score_a = ?, score_b = ?,
                   how = ?, seq = ?, finished_at = ?, played_on = ? WHERE id = ?""",
                (winner_side, stored[0], stored[1], how, seq, when, played_on.isoformat(), m.id),
            )
            if dropper is not None:
                await write_later(conn, "UPDATE players SET dropped = dropped + 1 WHERE id = ?",
                                  (ids[dropper],))
            if seq is None:
                return {}
            unit = RatedUnit(m.ladder, seq, when, (game,), ids, match_id=m.id)
            return await lobby.emit(conn, MatchFinished(unit), effects)

        effects, data = await lobby.db.write(job)
    except BaseException:
        m.busy = False
        raise
    lobby.end_live(m)
    if dropper is not None:
        lobby.player(dropper).dropped += 1
    message = push("match_finished", data)
    lobby.defer((set(lobby.sessions_of((m.a, m.b))) | set(lobby.watchers(m.ladder))) - {by},
                message)
    lobby.committed(effects)
    return data


@handler("invite")
async def invite(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    me = lobby.me(session)
    ladder = lobby.ladder(args["ladder"])
    if not ladder.system.live_matches:
        raise fail("bad_request", f"Ladder {ladder.name!r} ({ladder.system.title}) is rated by "
                                  "events only; 'ladders' shows where live matches are played.")
    target = lobby.player(args["name"])
    if target.key == me.key:
        raise fail("bad_request", "You cannot invite yourself.")
    if target.key not in lobby.online:
        raise fail("not_found", f"{target.name} is not online.")
    for who in (me, target):
        if who.name in lobby.match_of:
            raise fail("conflict", f"{who.name} is already playing a match.")
    raw = args.get("length", 1)
    length = None if raw == "unlimited" else int(raw)
    lobby.invitations.setdefault(target.key, {})[me.key] = Invitation(
        me.name, target.name, ladder.name, length)
    lobby.invited_by.setdefault(me.key, set()).add(target.key)
    shown = "unlimited" if length is None else length
    lobby.defer(lobby.sessions_of([target.name]), push("invited", {
        "from": me.name, "ladder": ladder.name, "length": shown}))
    return {"to": target.name, "ladder": ladder.name, "length": shown}


@handler("join")
async def join(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    me = lobby.me(session)
    inviter = lobby.player(args["name"])
    inv = lobby.invitations.get(me.key, {}).get(inviter.key)
    if inv is None:
        raise fail("not_found", f"{inviter.name} has not invited you.")
    for who in (me.name, inviter.name):
        if who in lobby.match_of:
            raise fail("conflict", f"{who} is already playing a match.")
    if inviter.key not in lobby.online:
        raise fail("conflict", f"{inviter.name} is no longer online.")
    del lobby.invitations[me.key][inviter.key]
    lobby.match_of[me.name] = lobby.match_of[inviter.name] = -1  # reserved while saving
    ids = {inviter.name: inviter.id, me.name: me.id}
    remember = lobby.remembering()

    async def job(conn: aiosqlite.Connection) -> int:
        mid = new_match_id(conn)
        await write_later(
            conn,
            """INSERT INTO matches (id, ladder, side_a, side_b, length, played_on, status,
               created_at) VALUES (?, ?, ?, ?, ?, ?, 'playing', ?)""",
            (mid, inv.ladder, inviter.name, me.name, inv.length, today().isoformat(), now()),
        )
        await conn.executemany(
            "INSERT INTO match_players (match_id, player_id, side) VALUES (?, ?, ?)",
            [(mid, ids[inviter.name], "a"), (mid, ids[me.name], "b")],
        )
        await remember(conn, LiveMatch(mid, inv.ladder, inv.length, inviter.name, me.name).summary())
        return mid

    try:
        mid = await lobby.db.write(job)
    except BaseException:
        lobby.match_of.pop(me.name, None)
        lobby.match_of.pop(inviter.name, None)
        raise
    m = LiveMatch(mid, inv.ladder, inv.length, inviter.name, me.name)
    lobby.matches[mid] = m
    lobby.match_of[me.name] = lobby.match_of[inviter.name] = mid
    for invitee in lobby.invited_by.pop(me.key, ()):
        lobby.invitations.get(invitee, {}).pop(me.key, None)
    lobby.invitations.pop(inviter.key, None)
    lobby.defer(lobby.sessions_of([inviter.name]), push("match_started", m.summary()))
    return m.summary()


@handler("decline")
async def decline(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    me = lobby.me(session)
    inviter = lobby.player(args["name"])
    if lobby.invitations.get(me.key, {}).pop(inviter.key, None) is None:
        raise fail("not_found", f"{inviter.name} has not invited you.")
    lobby.defer(lobby.sessions_of([inviter.name]), push("declined", {"by": me.name}))
    return {"declined": inviter.name}


@handler("resign")
async def resign(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    m = my_match(lobby, session)
    me = lobby.me(session).name
    if m.status == "disputed":
        raise fail("conflict", f"Match {m.id} is disputed; an admin will decide it.")
    return await finish(lobby, session, m, m.opponent(me), "resign")


@handler("report win")
async def report_win(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    m = my_match(lobby, session)
    me = lobby.me(session).name
    if m.status != "playing" or m.busy:
        raise fail("conflict", f"Match {m.id} is {m.status}; a win can be reported only once.")
    mine, theirs = args.get("score_a"), args.get("score_b")
    if (mine is None) != (theirs is None):
        raise fail("bad_request", "Give both scores (yours first) or none.")
    scores = None if mine is None or theirs is None else (mine, theirs)
    if scores is not None:
        ladder = lobby.ladder(m.ladder)
        check_score(m.length if ladder.system.match_lengths else None, *scores)
    m.busy = True
    data = {"match": m.id, "by": me, "scores": list(scores) if scores else None,
            "status": "claimed"}
    remember = lobby.remembering()
    try:
        async def job(conn: aiosqlite.Connection) -> None:
            sa, sb = (None, None) if scores is None else (
                scores if m.side_of(me) == "a" else (scores[1], scores[0]))
            await conn.execute(
                "UPDATE matches SET status = 'claimed', claimed_by = ?, score_a = ?, score_b = ? "
                "WHERE id = ?", (me, sa, sb, m.id))
            await remember(conn, data)

        await lobby.db.write(job)
    finally:
        m.busy = False
    m.status, m.claimed_by, m.claim_scores = "claimed", me, scores
    lobby.defer(lobby.sessions_of([m.opponent(me)]), push("result_claimed", data))
    return data


def _claim_to_answer(lobby: Lobby, session: Session, match_id: int) -> LiveMatch:
    m = match_for(lobby, session, match_id)
    me = lobby.me(session).name
    if m.status != "claimed" or m.claimed_by is None:
        raise fail("conflict", f"Match {m.id} has no claimed result to answer.")
    if m.claimed_by == me:
        raise fail("forbidden", "You cannot answer your own claim; your opponent must.")
    return m


@handler("confirm")
async def confirm(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    m = _claim_to_answer(lobby, session, args["match"])
    assert m.claimed_by is not None
    return await finish(lobby, session, m, m.claimed_by, "confirm", m.claim_scores)


@handler("dispute")
async def dispute(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    m = _claim_to_answer(lobby, session, args["match"])
    if m.busy:
        raise fail("conflict", f"Match {m.id} is already being decided.")
    m.busy = True
    data = {"match": m.id, "status": "disputed", "by": lobby.me(session).name}
    remember = lobby.remembering()
    try:
        async def job(conn: aiosqlite.Connection) -> None:
            await conn.execute("UPDATE matches SET status = 'disputed', disputed = 1 WHERE id = ?",
                               (m.id,))
            await remember(conn, data)

        await lobby.db.write(job)
    finally:
        m.busy = False
    m.status = "disputed"
    admins = [s for s in lobby.sessions if s.player is not None and s.player.role == "admin"]
    lobby.defer(set(lobby.sessions_of([m.a, m.b])) | set(admins), push("result_disputed", data))
    return data


@handler("claim")
async def claim(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    m = match_for(lobby, session, args["match"])
    me = lobby.me(session).name
    other = m.opponent(me)
    if m.status == "disputed":
        raise fail("conflict", f"Match {m.id} is disputed; an admin will decide it.")
    since = m.away_since.get(other)
    if since is None:
        raise fail("conflict", f"{other} is connected; you can claim only after they drop.")
    waited = time.monotonic() - since
    timeout = lobby.config.drop_timeout
    if waited < timeout:
        raise fail("conflict", f"{other} has been away {waited:.0f} s; you can claim after "
                               f"{timeout:.0f} s.")
    return await finish(lobby, session, m, me, "claim", dropper=other)


@handler("abort")
async def abort(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    m = my_match(lobby, session)
    me = lobby.me(session).name
    other = m.opponent(me)
    if m.abort_by is None or m.abort_by == me:
        m.abort_by = me
        data = {"match": m.id, "status": "abort_requested", "by": me}
        lobby.defer(lobby.sessions_of([other]), push("abort_requested", data))
        return data
    if m.busy:
        raise fail("conflict", f"Match {m.id} is already being decided.")
    m.busy = True
    data = {"match": m.id, "status": "aborted", "rated": False}
    remember = lobby.remembering()
    try:
        async def job(conn: aiosqlite.Connection) -> None:
            await conn.execute(
                "UPDATE matches SET status = 'aborted', how = 'abort', finished_at = ? WHERE id = ?",
                (now(), m.id))
            await remember(conn, data)

        await lobby.db.write(job)
    except BaseException:
        m.busy = False
        raise
    lobby.end_live(m)
    lobby.defer(lobby.sessions_of([other]), push("match_aborted", data))
    return data


__all__ = ["LobbyError", "check_score", "finish"]
