"""Retried results are never applied twice: the request id is the idempotency key."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import websockets.asyncio.client
from hypothesis import example, given, settings
from hypothesis import strategies as st
from testkit.clients import start_match
from testkit.constants import PASSWORD
from testkit.db import sql
from testkit.results import today
from testkit.server_loop import LobbyServer

from server.lobby import Session
from server.lobby.requests import args_digest


async def send_and_drop(url: str, name: str, password: str, frame: dict[str, Any]) -> None:
    """Log in, send ``frame`` and hang up without reading the reply (a dropped connection)."""
    ws = await websockets.asyncio.client.connect(url, max_queue=None)
    await ws.recv()
    await ws.send(json.dumps({"id": "login", "cmd": "login",
                              "args": {"name": name, "password": password}}))
    while json.loads(await ws.recv()).get("id") != "login":
        pass
    await ws.send(json.dumps(frame))
    ws.transport.abort()


async def test_a_retried_resign_is_applied_once(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    mid = await start_match(alice, bob, length=3)
    first = await alice.request("resign", request_id="retry-1")
    assert first["ok"], first
    again = await alice.request("resign", request_id="retry-1")
    assert again["ok"] and again["replayed"] is True
    assert again["data"] == first["data"]
    assert sql(lobby.db, "SELECT count(*) FROM history WHERE match_id = ?", (mid,)) == [(2,)]
    # a new id is a new request: there is no match to resign any more
    fresh = await alice.request("resign", request_id="retry-2")
    assert fresh["ok"] is False and fresh["error"]["code"] == "conflict"


async def test_a_dropped_resign_retried_after_reconnecting(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    mid = await start_match(alice, bob, length=5)
    frame = {"id": "drop-7", "cmd": "resign", "args": {}}
    await send_and_drop(lobby.url, "alice", PASSWORD, frame)
    finished = await bob.next_push("match_finished")
    again = await lobby.client()
    await again.login("alice", PASSWORD)
    retried = await again.request("resign", request_id="drop-7")
    assert retried["ok"] and retried.get("replayed") is True
    assert retried["data"] == finished["data"]
    assert sql(lobby.db, "SELECT count(*) FROM matches WHERE status = 'finished'") == [(1,)]
    assert sql(lobby.db, "SELECT count(*) FROM history WHERE match_id = ?", (mid,)) == [(2,)]


async def test_retried_event_results_survive_a_restart(harness: LobbyServer) -> None:
    await harness.start()
    admin = await harness.admin()
    event = await admin.call("event create", name="Cup", ladder="scrabble")
    args = {"event": event["id"], "side_a": "ann", "side_b": "ben", "score_a": 410,
            "score_b": 380, "new": True}
    first = await admin.request("event result", args, request_id="res-1")
    assert first["ok"]
    await harness.stop()
    await harness.start()
    admin = await harness.admin()
    retried = await admin.request("event result", args, request_id="res-1")
    assert retried["ok"] and retried["replayed"] is True and retried["data"] == first["data"]
    # the same result under a new id is a second game, as a director would expect
    second = await admin.request("event result", args, request_id="res-2")
    assert second["ok"] and "replayed" not in second
    shown = await admin.call("event show", event=event["id"])
    assert len(shown["games"]) == 2
    csv = f"event,date,side_a,side_b,score_a,score_b\nCup,{today()},cid,dee,300,200\n"
    for _ in range(2):
        imported = await admin.request("event import", {"event": event["id"], "csv": csv, "new": True},
                                       request_id="imp-1")
        assert imported["ok"] and imported["data"]["imported"] == 1
    closes = [await admin.request("event close", {"event": event["id"]}, request_id="close-1")
              for _ in range(2)]
    assert closes[0]["data"] == closes[1]["data"] and closes[1]["replayed"] is True
    assert len((await admin.call("event show", event=event["id"]))["games"]) == 3


async def test_same_id_with_other_arguments_is_a_new_request(lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    a = await admin.request("event create", {"name": "One", "ladder": "scrabble"},
                            request_id="same")
    b = await admin.request("event create", {"name": "Two", "ladder": "scrabble"},
                            request_id="same")
    assert a["ok"] and b["ok"] and a["data"]["id"] != b["data"]["id"]
    assert "replayed" not in b


async def test_a_retry_during_the_original_waits_for_it(lobby: LobbyServer) -> None:
    """Two frames with the same key in flight at once: one outcome, the same reply twice.

    The transport hands a connection's frames to the router one at a time, so
    the overlap happens across connections; here the router gets both at once.
    """
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    await start_match(alice, bob, length=1)
    await alice.call("report win")
    match = sql(lobby.db, "SELECT id FROM matches WHERE status = 'claimed'")[0][0]
    assert lobby.server is not None
    router = lobby.server.transport.router
    sent: list[dict[str, Any]] = []
    session = Session(send=sent.append, close=lambda code, reason: None,
                      player=router.lobby.player("bob"))
    frame = json.dumps({"id": "conf-1", "cmd": "confirm", "args": {"match": match}})
    await asyncio.gather(router.answer(session, frame), router.answer(session, frame))
    replies = [m for m in sent if m.get("id") == "conf-1"]
    assert len(replies) == 2 and all(r["ok"] for r in replies), replies
    assert replies[0]["data"] == replies[1]["data"]
    assert [r.get("replayed", False) for r in replies].count(True) == 1
    assert sql(lobby.db, "SELECT count(*) FROM history WHERE match_id = ?", (match,)) == [(2,)]


_scalars = (st.text(max_size=6) | st.text(st.characters(max_codepoint=0x7f), max_size=6)
            | st.integers(-2**70, 2**70) | st.floats() | st.booleans() | st.none())
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=4), _values, max_size=4))
@example({"name": "bob", "range": 1e-07})  # json writes 1e-07, orjson 1e-7
@example({"a": [1, "\x7f"]})  # json escapes DEL, orjson does not
def test_a_request_s_key_is_the_digest_stored_replies_were_keyed_by(args: dict[str, Any]) -> None:
    """The fast canonical form gives every argument the digest ``json.dumps`` gave, so a retry
    finds the reply an earlier version of the server stored."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), default=list)
    assert args_digest(args) == hashlib.sha256(canonical.encode()).hexdigest()
