"""register, login, resume, logout, help, watch, unwatch."""

from __future__ import annotations

import math
from typing import Any

from server.accounts import MIN_PASSWORD, HashBusy
from server.handlers import coming_back
from server.handlers.queries import waiting_disputes
from server.limits import Throttled, client_key
from server.lobby import Call, LobbyError, Player, fail
from server.lobby.drops import own_match
from server.protocol import help_text
from server.session_tokens import expiry, new_token, token_hash
from server.store import account_changes as changes
from server.store import bans, now, sessions
from server.store import players as stored
from server.store.handle import WriteTx

WRONG = "Wrong name or password."
ENDED = "This session has ended; log in again."


def busy() -> LobbyError:
    return fail("rate_limited", "The server is busy checking passwords; try again in a moment.")


async def help_(call: Call) -> Any:
    return help_text(call.lobby.commands, call.args.get("command"))


async def register(call: Call) -> Any:
    lobby, session = call.lobby, call.session
    name, password = call.args["name"], call.args["password"]
    if session.player is not None:
        raise fail("conflict", f"You are logged in as {session.player.name}; log out first.")
    if len(password) < MIN_PASSWORD:
        raise fail("bad_request", f"A password needs at least {MIN_PASSWORD} characters.")
    if name.casefold() in lobby.players:
        raise fail("conflict", f"The name {name!r} is taken.")
    client = client_key(session.address)
    wait = lobby.registrations.take(client)
    if wait > 0:
        raise fail("rate_limited", f"Too many new accounts from your address; try again in "
                                   f"{math.ceil(wait / 60)} min.")
    try:
        hashed = await lobby.hasher.hash(password, client)
    except HashBusy:
        lobby.registrations.give_back(client)
        raise busy() from None
    if name.casefold() in lobby.players:
        raise fail("conflict", f"The name {name!r} is taken.")
    when = now()
    token = new_token()
    expires_at = expiry(lobby.config.session_days)

    async def job(tx: WriteTx) -> int:
        pid = await stored.create(tx, name, hashed, "player", when)
        await stored.logged_in(tx, pid, when)
        await sessions.create(tx, token_hash(token), pid, when, expires_at)
        return pid

    pid = await call.write(job)
    player = Player(pid, name, "player", hashed, when)
    lobby.players[player.key] = player
    lobby.login_throttle.trust(player.key, client)
    lobby.sign_in(session, player)
    session.token_hash = token_hash(token)
    return {"player": name, "role": "player",
            "session": {"token": token, "expires_at": expires_at}}


async def refresh_player(call: Call, name: str) -> Player | None:
    """The account as stored now: ``matchlobby user add`` may have changed it meanwhile."""
    lobby = call.lobby
    row = await stored.by_name(lobby.db, name)
    if row is None:
        return None
    player = lobby.players.get(row["name_key"])
    if player is None:
        player = lobby.players[row["name_key"]] = Player(row["id"], row["name"])
    player.password_hash, player.role = row["password_hash"], row["role"]
    return player


async def refuse_banned(tx: WriteTx, name: str, player_id: int, when: str) -> None:
    """``banned``, saying until when and why, for an account banned at ``when``."""
    ban = await bans.active(tx, player_id, when)
    if ban is not None:
        raise fail("banned", bans.refusal(name, *ban))


def too_many_logins(wait: float) -> LobbyError:
    return fail("rate_limited", f"Too many logins for this account or from your address; "
                                f"try again in {math.ceil(wait)} s.")


async def login(call: Call) -> Any:
    lobby, session, args = call.lobby, call.session, call.args
    client = client_key(session.address)
    account = args["name"].casefold()
    wait = lobby.login_rate.wait(account, client)
    if wait > 0:  # refused before a hash is spent on it
        raise too_many_logins(wait)
    try:  # counted before anything is awaited: concurrent guesses each see the earlier ones
        attempt = lobby.login_throttle.begin(account, client)
    except Throttled as e:
        raise fail("rate_limited",
                   f"Too many failed logins; try again in {math.ceil(e.wait)} s.") from None
    try:
        player = await refresh_player(call, args["name"])
        # an unknown name is checked against a dummy hash: it takes as long as a wrong password
        verified = player.password_hash if player else None
        ok = await lobby.hasher.verify(args["password"], verified, client)
    except HashBusy:
        lobby.login_throttle.cancelled(attempt)
        raise busy() from None
    except BaseException:
        lobby.login_throttle.cancelled(attempt)
        raise
    if player is None or not ok:
        raise fail("forbidden", WRONG)
    lobby.login_throttle.succeeded(attempt)
    wait = lobby.login_rate.take(player.key, client)
    if wait > 0:
        raise too_many_logins(wait)
    when = now()
    token = new_token()
    expires_at = expiry(lobby.config.session_days)

    async def job(tx: WriteTx) -> tuple[str, int, int, dict[str, Any] | None]:
        stored_now = await changes.account_in(tx, player.id)
        if stored_now is None or stored_now[0] != verified:  # a new password meanwhile
            raise fail("forbidden", WRONG)
        await refuse_banned(tx, player.name, player.id, when)
        await stored.logged_in(tx, player.id, when)
        others = await sessions.create(tx, token_hash(token), player.id, when, expires_at,
                                       lobby.config.limits.sessions_per_account)
        return stored_now[1], stored_now[2], others, await coming_back.told(tx, player.id)

    try:
        player.role, seen, others, away = await call.write(job)
    except BaseException:
        lobby.login_rate.give_back(player.key, client)
        raise
    return {**signed_in(call, player, when, token_hash(token), seen, WRONG),
            "session": {"token": token, "expires_at": expires_at}, "other_sessions": others,
            "while_away": away}


def signed_in(call: Call, player: Player, when: str, digest: str, seen: int,
              refusal: str = ENDED) -> dict[str, Any]:
    """Log the connection in as ``player`` (with the session ``digest``, having seen the
    account's changes up to ``seen``); login's reply. Refused with ``refusal`` when a change
    made after ``seen`` has already been applied here (it would miss this login)."""
    lobby = call.lobby
    missed = lobby.account_watch.missed(player.key, seen)
    if missed == changes.BAN:
        raise fail("banned", f"The account {player.name} has just been banned.")
    if missed is not None:
        raise fail("forbidden", refusal)
    player.last_login = when
    lobby.sign_in(call.session, player, seen)
    call.session.token_hash = digest
    return {"player": player.name, "role": player.role, "match": own_match(lobby, player.name),
            "disputes": waiting_disputes(lobby, player.name)}


async def resume(call: Call) -> Any:
    """A login by session token: the same reply as ``login``'s, without a new token."""
    lobby = call.lobby
    digest = token_hash(call.args["token"])
    row = await sessions.find(lobby.db, digest)
    if row is None or row[1] <= now():
        raise fail("forbidden", ENDED)
    player = await refresh_player(call, row[2])
    if player is None or not player.password_hash:
        raise fail("forbidden", ENDED)
    client = client_key(call.session.address)
    wait = lobby.login_rate.take(player.key, client)
    if wait > 0:
        raise too_many_logins(wait)
    when = now()

    async def job(tx: WriteTx) -> tuple[str, int, dict[str, Any] | None]:
        again = await sessions.find_in(tx, digest)  # revoked since it was read?
        stored_now = await changes.account_in(tx, player.id)
        if again is None or again[1] <= when or stored_now is None:
            raise fail("forbidden", ENDED)
        await refuse_banned(tx, player.name, player.id, when)
        await stored.logged_in(tx, player.id, when)
        return stored_now[1], stored_now[2], await coming_back.told(tx, player.id)

    try:
        player.role, seen, away = await call.write(job)
    except BaseException:
        lobby.login_rate.give_back(player.key, client)
        raise
    return {**signed_in(call, player, when, digest, seen), "while_away": away}


async def logout(call: Call) -> Any:
    """``logout`` ends this login's token; ``--all`` every token and login of the account
    (this one too), ``--others`` every one but this. Other servers' logins of the account
    follow the change it records (``account_changes``)."""
    lobby, me, session = call.lobby, call.me, call.session
    everywhere, others = bool(call.args.get("all")), bool(call.args.get("others"))
    if everywhere and others:
        raise fail("bad_request", "Give --all or --others, not both.")
    digest = session.token_hash
    if not (everywhere or others):
        revoked = False
        if digest is not None:
            async def job(tx: WriteTx) -> bool:
                return await sessions.revoke(tx, digest)

            revoked = await call.write(job)
        lobby.sign_out(session)
        return {"player": me.name, "logged_in": False, "revoked": revoked}
    kind = changes.LOGOUT_ALL if everywhere else changes.LOGOUT_OTHERS
    keep = None if everywhere else digest

    before = session.changes_seen

    async def change(tx: WriteTx) -> int:
        change_id, ended = await changes.changed(tx, me.id, [kind], me.id, now(), keep)
        if others:  # made by this login, which stays: set before anyone can read the change
            session.changes_seen = change_id
        return ended

    try:
        ended = await call.write(change)
    except BaseException:
        session.changes_seen = before
        raise
    mine = session.player is me
    if everywhere and mine:
        lobby.sign_out(session)
    return {"player": me.name, "logged_in": not everywhere and mine,
            "revoked": everywhere and digest is not None, "ended": ended}


async def watch(call: Call) -> Any:
    ladder = call.lobby.ladder(call.args["ladder"])
    call.lobby.watch(call.session, ladder.name)
    return {"ladder": ladder.name, "watching": True}


async def unwatch(call: Call) -> Any:
    ladder = call.lobby.ladder(call.args["ladder"])
    call.lobby.unwatch(call.session, ladder.name)
    return {"ladder": ladder.name, "watching": False}


async def ready_on(call: Call) -> Any:
    return _ready(call, True)


async def ready_off(call: Call) -> Any:
    return _ready(call, False)


def _ready(call: Call, ready: bool) -> dict[str, Any]:
    """Whether this login takes invitations; who listed ``who`` (on every server) is told."""
    me, session = call.me, call.session
    if session.ready != ready:
        session.ready = ready
        call.lobby.presence.changed([me.name])
    return {"player": me.name, "ready": ready}


HANDLERS = {"help": help_, "register": register, "login": login, "resume": resume,
            "logout": logout, "watch": watch, "unwatch": unwatch, "ready on": ready_on,
            "ready off": ready_off}
