"""A NUL character (U+0000) in any text a client sends: refused as ``bad_request`` before it
can reach the database (PostgreSQL cannot store it in a text column), on both backends.

Every argument of every command is tried with a NUL in it, so a new command or argument kind
is covered by the same check. Passwords are the exception: they are only ever hashed, so a
NUL in one is part of the password like any other character.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from testkit.constants import ADMIN, ADMIN_PASSWORD, HELLO, LIVENESS, PASSWORD, PLAY_FREELY
from testkit.db import sql
from testkit.results import results_text
from testkit.server_loop import LobbyServer
from websockets.asyncio.client import ClientConnection, connect

from server.config import Limits
from server.plugins import command_table

NUL = "\x00"
# A valid value of each argument kind (the event and match numbers need not exist: a NUL is
# refused before any handler looks).
SAMPLE: dict[str, Any] = {"name": "alice", "side": "alice+bob", "ladder": "scrabble",
                          "id": "1", "count": "2", "score": "3", "length": "1",
                          "date": "2026-03-14", "status": "open", "title": "Brno Open",
                          "reason": "entered twice", "text": "invite", "message": "good luck",
                          "csv": results_text(["Brno Open,2026-03-14,ann,bob,400,300,,"])}


def with_nul(value: str) -> str:
    middle = len(value) // 2
    return value[:middle] + NUL + value[middle:]


class Raw:
    """A bare connection: the frame exactly as written, the next reply as it came."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        await self.ws.send(json.dumps(message))
        async with asyncio.timeout(LIVENESS):
            while True:
                reply: dict[str, Any] = json.loads(await self.ws.recv())
                if "event" not in reply:
                    return reply


@pytest.fixture
async def lobby(db_path: Path) -> AsyncIterator[LobbyServer]:
    """A running server that lets one connection send every case at once."""
    server = LobbyServer(db_path, limits=Limits(messages_per_second=10_000, burst=10_000,
                                                **PLAY_FREELY))
    await server.start()
    try:
        yield server
    finally:
        await server.aclose()


@pytest.fixture
async def raw(lobby: LobbyServer) -> AsyncIterator[Raw]:
    async with connect(lobby.url, max_size=None, open_timeout=10) as ws:
        assert json.loads(await ws.recv())["data"] == HELLO
        yield Raw(ws)


def refused(reply: dict[str, Any], what: str) -> None:
    assert reply["ok"] is False and reply["error"]["code"] == "bad_request", (what, reply)


def no_errors_logged(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r.getMessage()[:200] for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


async def test_a_request_id_holding_a_nul_is_refused(lobby: LobbyServer, raw: Raw,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    login = await raw.send({"id": 1, "cmd": "login",
                            "args": {"name": ADMIN, "password": ADMIN_PASSWORD}})
    assert login["ok"] is True, login
    caplog.set_level(logging.WARNING)
    for rid in (NUL, "event\x00create", "r-1" + NUL):
        # a mutating command (its reply would be kept under the id) and a read
        reply = await raw.send({"id": rid, "cmd": "event create",
                                "args": {"name": "Brno Open", "ladder": "scrabble"}})
        refused(reply, repr(rid))
        assert "NUL" in reply["error"]["message"] and reply["id"] is None
        refused(await raw.send({"id": rid, "cmd": "whois", "args": {"name": ADMIN}}), repr(rid))
    assert sql(lobby.db, "SELECT count(*) FROM events") == [(0,)]
    assert sql(lobby.db, "SELECT count(*) FROM requests") == [(0,)]
    # the connection goes on, and the same request with a usable id is carried out (and kept)
    made = await raw.send({"id": "r-1", "cmd": "event create",
                           "args": {"name": "Brno Open", "ladder": "scrabble"}})
    assert made["ok"] is True and made["id"] == "r-1", made
    assert sql(lobby.db, "SELECT request_id FROM requests") == [("r-1",)]
    no_errors_logged(caplog)


async def test_every_text_argument_holding_a_nul_is_refused(lobby: LobbyServer, raw: Raw,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    assert (await raw.send({"cmd": "login", "args": {"name": ADMIN, "password": ADMIN_PASSWORD}})
            )["ok"] is True
    event = await raw.send({"id": 1, "cmd": "event create",
                            "args": {"name": "Brno Open", "ladder": "scrabble"}})
    assert event["ok"] is True
    before = sql(lobby.db, "SELECT count(*) FROM matches"), sql(lobby.db, "SELECT * FROM events")
    caplog.set_level(logging.WARNING)
    tried = 0
    for spec in command_table().values():
        params = [(a.name, a.kind) for a in spec.args] + [
            (f.name, f.kind) for f in spec.flags if f.kind is not None]
        if any(kind == "password" for _, kind in params):
            continue  # login and register: below
        for name, kind in params:
            args = {n: SAMPLE[k] for n, k in params}
            args[name] = with_nul(SAMPLE[kind])
            reply = await raw.send({"id": 100 + tried, "cmd": spec.name, "args": args})
            refused(reply, f"{spec.name} {name}")
            tried += 1
    assert tried >= 30
    # the results file: a NUL in each of its places
    row = "Brno Open,2026-03-14,ann,bob,400,300,1,no:late"
    places = [results_text([row.replace(part, with_nul(part), 1)]) for part in row.split(",")]
    places += [results_text([row, NUL]), results_text([row]) + NUL,
               with_nul("event,date") + results_text([row])[10:]]
    for text in places:
        refused(await raw.send({"id": "csv", "cmd": "event import",
                                "args": {"event": event["data"]["id"], "csv": text}}), repr(text))
    after = sql(lobby.db, "SELECT count(*) FROM matches"), sql(lobby.db, "SELECT * FROM events")
    assert after == before
    no_errors_logged(caplog)


async def test_a_nul_in_a_password_is_part_of_it(lobby: LobbyServer, raw: Raw,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    password = with_nul(PASSWORD)
    made = await raw.send({"cmd": "register", "args": {"name": "nul", "password": password}})
    assert made["ok"] is True, made
    other = await lobby.client()
    assert (await other.request("login", {"name": "nul", "password": password}))["ok"] is True
    for wrong in (PASSWORD, password.split(NUL)[0], password.replace(NUL, "")):
        reply = await other.request("login", {"name": "nul", "password": wrong})
        assert reply["ok"] is False and reply["error"]["code"] != "internal", reply
    no_errors_logged(caplog)
