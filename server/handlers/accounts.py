"""register, login, logout, help, watch, unwatch."""

from __future__ import annotations

import math
from typing import Any

import aiosqlite

from server.accounts import MIN_PASSWORD, HashBusy
from server.limits import Throttled, client_key
from server.lobby import Lobby, LobbyError, Player, Session, fail, handler
from server.protocol import help_text
from server.store import now

WRONG = "Wrong name or password."


def busy() -> LobbyError:
    return fail("rate_limited", "The server is busy checking passwords; try again in a moment.")


async def create_player(conn: aiosqlite.Connection, name: str, password_hash: str | None,
                        role: str = "player") -> int:
    """Insert an account (or a password-less ladder entry) and return its id."""
    async with conn.execute(
        "INSERT INTO players (name, name_key, password_hash, role, created_at) VALUES (?, ?, ?, ?, ?)",
        (name, name.casefold(), password_hash, role, now()),
    ) as cur:
        assert cur.lastrowid is not None
        return cur.lastrowid


@handler("help")
async def help_(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    return help_text(lobby.commands, args.get("command"))


@handler("register")
async def register(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    name, password = args["name"], args["password"]
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

    async def job(conn: aiosqlite.Connection) -> int:
        pid = await create_player(conn, name, hashed)
        await conn.execute("UPDATE players SET last_login = ? WHERE id = ?", (when, pid))
        return pid

    pid = await lobby.db.write(job)
    player = Player(pid, name, "player", hashed, when)
    lobby.players[player.key] = player
    lobby.login_throttle.trust(player.key, client)
    lobby.sign_in(session, player)
    return {"player": name, "role": "player"}


async def refresh_player(lobby: Lobby, name: str) -> Player | None:
    """The account as stored now: ``matchlobby user add`` may have changed it meanwhile."""
    row = await lobby.db.fetchone("SELECT * FROM players WHERE name_key = ?", (name.casefold(),))
    if row is None:
        return None
    player = lobby.players.get(row["name_key"])
    if player is None:
        player = lobby.players[row["name_key"]] = Player(row["id"], row["name"])
    player.password_hash, player.role = row["password_hash"], row["role"]
    return player


@handler("login")
async def login(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    client = client_key(session.address)
    try:  # counted before anything is awaited: concurrent guesses each see the earlier ones
        attempt = lobby.login_throttle.begin(args["name"].casefold(), client)
    except Throttled as e:
        raise fail("rate_limited",
                   f"Too many failed logins; try again in {math.ceil(e.wait)} s.") from None
    try:
        player = await refresh_player(lobby, args["name"])
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

    async def job(conn: aiosqlite.Connection) -> None:
        await conn.execute("UPDATE players SET last_login = ? WHERE id = ?", (when, player.id))

    await lobby.db.write(job)
    player.last_login = when
    lobby.sign_in(session, player)
    mid = lobby.match_of.get(player.name)
    return {"player": player.name, "role": player.role,
            "match": lobby.matches[mid].summary() if mid in lobby.matches else None}


@handler("logout")
async def logout(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    name = lobby.me(session).name
    lobby.sign_out(session)
    return {"player": name, "logged_in": False}


@handler("watch")
async def watch(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    ladder = lobby.ladder(args["ladder"])
    lobby.watch(session, ladder.name)
    return {"ladder": ladder.name, "watching": True}


@handler("unwatch")
async def unwatch(lobby: Lobby, session: Session, args: dict[str, Any]) -> Any:
    ladder = lobby.ladder(args["ladder"])
    lobby.unwatch(session, ladder.name)
    return {"ladder": ladder.name, "watching": False}
