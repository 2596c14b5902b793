"""register, login, resume, logout, help, watch, unwatch."""

from __future__ import annotations

import math
from typing import Any

from server.accounts import MIN_PASSWORD, HashBusy
from server.limits import Throttled, client_key
from server.lobby import Call, LobbyError, Player, fail
from server.protocol import help_text
from server.session_tokens import expiry, new_token, token_hash
from server.store import now, sessions
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


async def login(call: Call) -> Any:
    lobby, session, args = call.lobby, call.session, call.args
    client = client_key(session.address)
    try:  # counted before anything is awaited: concurrent guesses each see the earlier ones
        attempt = lobby.login_throttle.begin(args["name"].casefold(), client)
    except Throttled as e:
        raise fail("rate_limited",
                   f"Too many failed logins; try again in {math.ceil(e.wait)} s.") from None
    try:
        player = await refresh_player(call, args["name"])
        # an unknown name is checked against a dummy hash: it takes as long as a wrong password
        ok = await lobby.hasher.verify(args["password"], player.password_hash if player else None,
                                       client)
    except HashBusy:
        lobby.login_throttle.cancelled(attempt)
        raise busy() from None
    except BaseException:
        lobby.login_throttle.cancelled(attempt)
        raise
    if player is None or not ok:
        raise fail("forbidden", WRONG)
    lobby.login_throttle.succeeded(attempt)
    when = now()
    token = new_token()
    expires_at = expiry(lobby.config.session_days)

    async def job(tx: WriteTx) -> None:
        await stored.logged_in(tx, player.id, when)
        await sessions.create(tx, token_hash(token), player.id, when, expires_at)

    await call.write(job)
    return {**signed_in(call, player, when, token_hash(token)),
            "session": {"token": token, "expires_at": expires_at}}


def signed_in(call: Call, player: Player, when: str, digest: str) -> dict[str, Any]:
    """Log the connection in as ``player`` (with the session ``digest``); login's reply."""
    lobby = call.lobby
    player.last_login = when
    lobby.sign_in(call.session, player)
    call.session.token_hash = digest
    mid = lobby.match_of.get(player.name)
    return {"player": player.name, "role": player.role,
            "match": lobby.match_summary(lobby.matches[mid]) if mid in lobby.matches else None}


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
    when = now()

    async def job(tx: WriteTx) -> None:
        again = await sessions.find_in(tx, digest)  # revoked since it was read?
        if again is None or again[1] <= when:
            raise fail("forbidden", ENDED)
        await stored.logged_in(tx, player.id, when)

    await call.write(job)
    return signed_in(call, player, when, digest)


async def logout(call: Call) -> Any:
    name = call.me.name
    digest = call.session.token_hash
    revoked = False
    if digest is not None:
        async def job(tx: WriteTx) -> bool:
            return await sessions.revoke(tx, digest)

        revoked = await call.write(job)
    call.lobby.sign_out(call.session)
    return {"player": name, "logged_in": False, "revoked": revoked}


async def watch(call: Call) -> Any:
    ladder = call.lobby.ladder(call.args["ladder"])
    call.lobby.watch(call.session, ladder.name)
    return {"ladder": ladder.name, "watching": True}


async def unwatch(call: Call) -> Any:
    ladder = call.lobby.ladder(call.args["ladder"])
    call.lobby.unwatch(call.session, ladder.name)
    return {"ladder": ladder.name, "watching": False}


HANDLERS = {"help": help_, "register": register, "login": login, "resume": resume,
            "logout": logout, "watch": watch, "unwatch": unwatch}
