"""A history entry tells its story: the opponents (and partners), the result and score, the
length, the ladder, the event when there is one, and the rating change. A closed event's view
carries the rating changes it made; a voided game is unrated wherever it is shown."""

from __future__ import annotations

from typing import Any

from testkit.clients import start_match
from testkit.server_loop import LobbyServer

from clients import LobbyClient


async def history(c: LobbyClient, name: str, ladder: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = (await c.call("history", name=name, ladder=ladder))["entries"]
    return entries


def story(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry without its numbers and time (checked on their own)."""
    return {k: v for k, v in entry.items() if k not in ("at", "before", "after", "change")}


async def test_a_live_match_entry_names_the_opponent_result_score_and_length(
        lobby: LobbyServer) -> None:
    alice, bob = await lobby.players("alice", "bob")
    mid = await start_match(alice, bob, length=3)
    await alice.call("report win", score_a=3, score_b=1)
    await bob.next_push("result_claimed")
    done = await bob.call("confirm", match=mid)
    changes = {c["player"]: c for c in done["changes"]}
    (won,) = await history(bob, "alice", "backgammon")
    assert story(won) == {
        "ladder": "backgammon", "cause": {"match": mid}, "match": mid, "opponents": ["bob"],
        "partners": [], "result": "won", "record": {"won": 1, "drawn": 0, "lost": 0},
        "score": [3, 1], "length": 3, "how": "confirm", "games": 1, "event": None,
        "rated": True}
    assert (won["before"], won["after"], won["change"]) == (
        changes["alice"]["before"], changes["alice"]["after"], changes["alice"]["change"])
    (lost,) = await history(alice, "bob", "backgammon")
    assert (lost["opponents"], lost["result"], lost["score"], lost["change"] < 0) == (
        ["alice"], "lost", [1, 3], True)


async def test_an_event_entry_names_the_event_every_opponent_and_the_record(
        lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    for name in ("alice", "bob", "carol", "dave"):
        await lobby.player(name)
    event = (await admin.call("event create", name="Brno Open", ladder="scrabble"))["id"]
    await admin.call("event result", new=True, event=event, side_a="alice", side_b="bob", score_a=412,
                     score_b=389)
    await admin.call("event result", new=True, event=event, side_a="carol", side_b="alice", score_a=350,
                     score_b=300)
    await admin.call("event result", new=True, event=event, side_a="alice", side_b="dave", score_a=380,
                     score_b=380)
    voided = (await admin.call("event result", new=True, event=event, side_a="bob", side_b="carol",
                               score_a=400, score_b=300))["match"]
    await admin.call("void", match=voided, reason="wrong table")
    shown = await admin.call("event show", event=event)
    assert "changes" not in shown  # an open event has changed no rating yet
    assert [g["rated"] for g in shown["games"]] == [True, True, True, False]
    closed = await admin.call("event close", event=event)
    (entry,) = await history(admin, "alice", "scrabble")
    assert story(entry) == {
        "ladder": "scrabble", "cause": {"event": event}, "match": None,
        "opponents": ["bob", "carol", "dave"], "partners": [],
        "result": "1 won, 1 drawn, 1 lost", "record": {"won": 1, "drawn": 1, "lost": 1},
        "score": None, "length": None, "how": None, "games": 3,
        "event": {"id": event, "name": "Brno Open"}, "rated": True}
    (bob_entry,) = await history(admin, "bob", "scrabble")  # the voided game is not his story
    assert (bob_entry["opponents"], bob_entry["result"]) == (["alice"], "0 won, 1 lost")
    # the closed event's view names each player's change, as the close's reply did
    shown = await admin.call("event show", event=event)
    assert [(c["player"], c["before"], c["after"]) for c in shown["changes"]] == [
        (c["player"], c["before"], c["after"])
        for c in sorted(closed["changes"], key=lambda c: c["player"])]
    assert {c["player"] for c in shown["changes"]} >= {"alice", "bob", "carol", "dave"}
    by = {c["player"]: c for c in shown["changes"]}
    assert by["alice"]["after"] == entry["after"]
    assert [g["rated"] for g in shown["games"]] == [True, True, True, False]


async def test_a_doubles_entry_names_the_partner_apart_from_the_opponents(
        lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    for name in ("alice", "bob", "carol", "dave"):
        await lobby.player(name)
    event = (await admin.call("event create", name="League day 3",
                              ladder="foosball-doubles"))["id"]
    await admin.call("event result", new=True, event=event, side_a="alice+bob", side_b="carol+dave",
                     score_a=10, score_b=7)
    await admin.call("event close", event=event)
    (entry,) = await history(admin, "carol", "foosball-doubles")
    assert (entry["partners"], entry["opponents"], entry["result"], entry["event"]) == (
        ["dave"], ["alice", "bob"], "0 won, 1 lost", {"id": event, "name": "League day 3"})


async def test_an_event_game_rated_live_is_a_match_entry_with_its_event(
        lobby: LobbyServer) -> None:
    """On a ladder rated after each result, an event's game is its own entry: the match, its
    score and length, and the event it belongs to."""
    admin = await lobby.admin()
    for name in ("alice", "bob"):
        await lobby.player(name)
    event = (await admin.call("event create", name="Club night", ladder="backgammon"))["id"]
    game = (await admin.call("event result", new=True, event=event, side_a="bob", side_b="alice",
                             score_a=5, score_b=2, length=5))["match"]
    (entry,) = await history(admin, "alice", "backgammon")
    assert (entry["match"], entry["opponents"], entry["result"], entry["score"],
            entry["length"], entry["event"], entry["rated"]) == (
        game, ["bob"], "lost", [2, 5], 5, {"id": event, "name": "Club night"}, True)
