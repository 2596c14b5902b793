"""Free text through a real server: event names and reasons follow one rule.

Event names (``event create NAME``, the ``event`` column of ``event import``) and reasons
(``void MATCH REASON``, ``event result ... --unrated REASON``, ``rated`` = ``no:REASON`` in
``event import``) have a length limit (100 characters for names, 200 for reasons), no control
characters, no bidirectional or zero-width characters, and are stored in NFC. Every refusal
is a ``bad_request`` that leaves the database as it was; the plain-line form and JSON agree.
"""

from __future__ import annotations

import asyncio
import json
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from testkit.constants import ADMIN, ADMIN_PASSWORD, LIVENESS
from testkit.db import dump_db, sql
from testkit.results import HEADER, today
from testkit.server_thread import ServerThread
from websockets.asyncio.client import ClientConnection, connect

from server.config import Limits

# Each must be refused wherever free text is taken; the name says why.
BAD = {
    "right-to-left override U+202E": "Brno \u202eOpen",
    "left-to-right embedding U+202A": "\u202aBrno Open",
    "pop directional formatting U+202C": "Brno Open\u202c x",
    "right-to-left isolate U+2067": "Brno \u2067Open\u2069",
    "first strong isolate U+2068": "\u2068Brno Open",
    "left-to-right mark U+200E": "Brno\u200e Open",
    "right-to-left mark U+200F": "Brno\u200f Open",
    "Arabic letter mark U+061C": "Brno\u061c Open",
    "zero-width space U+200B": "Br\u200bno Open",
    "zero-width non-joiner U+200C": "Br\u200cno Open",
    "zero-width joiner U+200D": "Br\u200dno Open",
    "word joiner U+2060": "Br\u2060no Open",
    "byte-order mark U+FEFF": "\ufeffBrno Open",
    "escape U+001B": "Brno \x1b[31mOpen",
    "tab U+0009": "Brno\tOpen",
    "newline U+000A": "Brno\nOpen",
    "trailing newline U+000A": "Brno Open\n",
    "carriage return U+000D": "Brno\rOpen",
    "NUL U+0000": "Brno\x00Open",
    "delete U+007F": "Brno\x7fOpen",
    "C1 next line U+0085": "Brno\x85Open",
    "line separator U+2028": "Brno\u2028Open",
    "paragraph separator U+2029": "Brno\u2029Open",
    "only spaces": "   ",
    # Invisible without being format characters (Default_Ignorable_Code_Point), or blank
    "combining grapheme joiner U+034F": "Brno\u034fOpen",
    "variation selector-16 U+FE0F": "Brno\ufe0f Open",
    "variation selector-17 U+E0100": "Brno Open\U000e0100",
    "Hangul filler U+3164": "\u3164",
    "Hangul choseong filler U+115F": "Brno \u115f Open",
    "Hangul jungseong filler U+1160": "Brno\u1160Open",
    "halfwidth Hangul filler U+FFA0": "Brno \uffa0",
    "braille pattern blank U+2800": "\u2800\u2800",
    "Khmer vowel inherent U+17B4": "Brno\u17b4Open",
    "Mongolian free variation selector U+180B": "Brno\u180bOpen",
    "Mongolian vowel separator U+180E": "Brno\u180eOpen",
    "tag letter U+E0041": "Brno Open\U000e0041",
}
NFD = "Kavárna Čí\u0301"  # with a combining acute accent: NFC composes "í"
NFD_NAME = unicodedata.normalize("NFD", "Café Dvořák")


def code_of(why: str) -> str | None:
    """The code point the refusal names ("U+202E"), if the case is about one."""
    return next((w for w in why.split() if w.startswith("U+")), None)


class Admin:
    """The admin on a bare connection: JSON requests and plain lines, each with its reply."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, frame: str) -> dict[str, Any]:
        await self.ws.send(frame)
        async with asyncio.timeout(LIVENESS):
            while True:
                msg: dict[str, Any] = json.loads(await self.ws.recv())
                if "event" not in msg:
                    return msg

    async def request(self, cmd: str, **args: Any) -> dict[str, Any]:
        return await self.send(json.dumps({"cmd": cmd, "args": args}, ensure_ascii=False))

    async def call(self, cmd: str, **args: Any) -> Any:
        reply = await self.request(cmd, **args)
        assert reply["ok"] is True, reply
        return reply["data"]


@pytest.fixture
async def server(db_path: Path) -> AsyncIterator[ServerThread]:
    s = ServerThread(db_path, Limits(messages_per_second=10_000, burst=10_000)).start()
    try:
        yield s
    finally:
        await s.astop()


@pytest.fixture
async def admin(server: ServerThread) -> AsyncIterator[Admin]:
    async with connect(server.url, max_size=None, open_timeout=10) as ws:
        assert json.loads(await ws.recv())["event"] == "hello"
        a = Admin(ws)
        await a.call("login", name=ADMIN, password=ADMIN_PASSWORD)
        yield a


def refused(reply: dict[str, Any], why: str, what: str) -> None:
    assert reply["ok"] is False and reply["error"]["code"] == "bad_request", (why, reply)
    message = reply["error"]["message"]
    assert what in message, (why, message)
    if (code := code_of(why)) is not None:
        assert code in message, (why, message)


def csv_line(text: str) -> str:
    """``text`` as one CSV cell (quoted: it may hold commas, quotes or line breaks)."""
    return '"' + text.replace('"', '""') + '"'


async def test_event_names_refuse_control_bidi_and_zero_width(server: ServerThread, admin: Admin) -> None:
    before = dump_db(server.db)
    for why, name in BAD.items():
        refused(await admin.request("event create", name=name, ladder="scrabble"), why, "NAME")
        line = f'event create "{name}" scrabble'
        if "\n" not in name and "\r" not in name and "\x00" not in name:  # a line ends, or a NUL
            refused(await admin.send(line), why, "NAME")
    refused(await admin.request("event create", name="x" * 101, ladder="scrabble"), "101", "100")
    assert dump_db(server.db) == before, "a refused name was stored"
    event = await admin.call("event create", name="y" * 100, ladder="scrabble")
    assert event["name"] == "y" * 100


async def test_event_names_are_stored_and_compared_in_nfc(server: ServerThread, admin: Admin) -> None:
    event = await admin.call("event create", name=f"  {NFD_NAME} ", ladder="scrabble")
    composed = unicodedata.normalize("NFC", NFD_NAME)
    assert event["name"] == composed
    assert sql(server.db, "SELECT name FROM events WHERE id = ?", (event["id"],)) == [(composed,)]
    # The results file may spell it either way (and in another case): it names the same event.
    rows = [f"{NFD_NAME},{today()},ann,bob,400,300,,",
            f"{composed.upper()},{today()},cid,dee,410,300,,no:{NFD}"]
    data = await admin.call("event import", new=True, event=event["id"],
                            csv="\n".join([HEADER, *rows]) + "\n")
    assert data["imported"] == 2
    assert data["games"][1]["unrated"] == unicodedata.normalize("NFC", NFD)
    stored = sql(server.db, "SELECT unrated_reason FROM matches WHERE event_id = ? "
                            "AND unrated_reason IS NOT NULL", (event["id"],))
    assert stored == [(unicodedata.normalize("NFC", NFD),)]
    other = await admin.request("event import", event=event["id"],
                                csv=f"{HEADER}\nCafe Dvorak,{today()},eve,fay,400,300,,\n")
    refused(other, "another event", "not")


async def test_the_event_column_of_an_import_follows_the_rule(server: ServerThread, admin: Admin) -> None:
    event = await admin.call("event create", name="Brno Open", ladder="scrabble")
    before = dump_db(server.db)
    for why, name in {**BAD, "101 characters": "B" * 101}.items():
        if not name.strip():
            continue  # an empty cell is "event is empty", tested with the results files
        text = f"{HEADER}\nBrno Open,{today()},ann,bob,400,300,,\n{csv_line(name)},{today()},cid,dee,1,2,,\n"
        reply = await admin.request("event import", event=event["id"], csv=text)
        refused(reply, why, ": event ")  # CSV:3 (CSV:4 when a quoted line break ends it on 4)
    assert dump_db(server.db) == before


async def test_reasons_follow_the_same_rule_everywhere(server: ServerThread, admin: Admin) -> None:
    backgammon = await admin.call("event create", name="Night", ladder="backgammon")
    scrabble = await admin.call("event create", name="Cup", ladder="scrabble")
    played = await admin.call("event result", new=True, event=backgammon["id"], side_a="ann", side_b="bob",
                              score_a=1, score_b=0)
    before = dump_db(server.db)
    cases = {**BAD, "201 characters": "r" * 201, "60 KB": "r" * 60_000}
    for why, reason in cases.items():
        refused(await admin.request("void", match=played["match"], reason=reason), why, "REASON")
        refused(await admin.request("event result", event=scrabble["id"], side_a="cid", side_b="dee",
                                    score_a=400, score_b=300, unrated=reason), why, "UNRATED")
        if reason.strip():  # "no:" and spaces is not a reason at all: a different message
            text = f"{HEADER}\nCup,{today()},cid,dee,400,300,,{csv_line('no:' + reason)}\n"
            refused(await admin.request("event import", event=scrabble["id"], csv=text), why,
                    ": the reason in rated ")
        if "\n" not in reason and "\r" not in reason and "\x00" not in reason and len(reason) < 1000:
            line = f'void {played["match"]} "{reason}"'
            refused(await admin.send(line), why, "REASON")
    assert dump_db(server.db) == before, "a refused reason was stored"
    # At the limit, and in NFC once stored.
    data = await admin.call("event result", new=True, event=scrabble["id"], side_a="cid", side_b="dee",
                            score_a=400, score_b=300, unrated="u" * 200)
    assert data["unrated"] == "u" * 200
    voided = await admin.call("void", match=played["match"], reason=NFD)
    assert voided["reason"] == unicodedata.normalize("NFC", NFD)
    assert sql(server.db, "SELECT reason FROM corrections") == [(unicodedata.normalize("NFC", NFD),)]
