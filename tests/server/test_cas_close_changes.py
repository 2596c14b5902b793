"""A ČAS close tells everyone whose shown strength moved, marked as played in the event or moved
by the ladder's normalisation; P4P closes list only who played."""

from __future__ import annotations

from testkit.clients import check_ladder_update
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from clients import LobbyClient


async def close_event(admin: LobbyClient, ladder: str, name: str,
                      games: list[tuple[str, str, int, int]]) -> dict[str, object]:
    event = (await admin.call("event create", name=name, ladder=ladder))["id"]
    rows = [f"{name},{today()},{a},{b},{sa},{sb},," for a, b, sa, sb in games]
    await admin.call("event import", new=True, event=event, csv=results_text(rows))
    closed: dict[str, object] = await admin.call("event close", event=event)
    return closed


async def test_a_cas_close_lists_who_played_and_who_moved_without_playing(lobby: LobbyServer
                                                                          ) -> None:
    # the players who will sit out day 2 are logged in: they hear of their move too
    sitting_out = {n: await lobby.player(n) for n in ("eva", "fay")}
    admin = await lobby.admin()
    await close_event(admin, "scrabble", "Day 1", [
        ("ann", "ben", 420, 380), ("cid", "dan", 390, 410), ("eva", "fay", 450, 300),
        ("ann", "cid", 400, 350), ("ben", "eva", 330, 420), ("dan", "fay", 380, 370)])
    for client in sitting_out.values():  # day 1's, which they played
        assert (await client.next_push("rating_changed"))["data"]["played"] is True
    watcher = await lobby.client()
    await watcher.watch("scrabble")
    old = {r["player"]: r["rating"] for r in
           (await admin.call("ladder", ladder="scrabble", all=True))["players"]}
    closed = await close_event(admin, "scrabble", "Day 2", [
        ("ann", "ben", 500, 300), ("cid", "dan", 440, 300), ("ann", "dan", 450, 320)])
    event = closed["id"]
    changes = closed["changes"]
    assert isinstance(changes, list)
    new = {r["player"]: r["rating"] for r in
           (await admin.call("ladder", ladder="scrabble", all=True))["players"]}
    played = {"ann", "ben", "cid", "dan"}
    moved = {p for p in new if new[p] != old.get(p)}
    # everyone who played, and everyone else whose shown strength moved: each once
    assert sorted(c["player"] for c in changes) == sorted(played | moved)
    assert moved - played, "normalisation moved someone who did not play"
    for c in changes:
        assert c["played"] is (c["player"] in played), c
        assert (c["before"], c["after"]) == (old.get(c["player"]), new[c["player"]]), c
        assert c["cause"] == {"event": event} and c["ladder"] == "scrabble"
    # the same changes as the history entries the close made
    for c in changes:
        entries = (await admin.call("history", name=c["player"], ladder="scrabble"))["entries"]
        last = entries[-1]
        assert (last["cause"], last["before"], last["after"]) == (
            {"event": event}, c["before"], c["after"])
    # each moved player who is online hears of it, with the same mark
    for name, client in sitting_out.items():
        if name in moved:
            push = await client.next_push("rating_changed")
            assert push["data"] == next(c for c in changes if c["player"] == name)
    # watchers hear of the close once, with the rows of everyone it moved, played or not
    update = await watcher.next_push()
    assert update["event"] == "ladder_updated" and update["data"]["event"] == event
    check_ladder_update(update["data"], await watcher.call("ladder", ladder="scrabble", all=True),
                        [c["player"] for c in changes])


async def test_a_p4p_close_lists_only_its_players_all_played(lobby: LobbyServer) -> None:
    admin = await lobby.admin()
    await close_event(admin, "foosball-singles", "League 1",
                      [("ann", "ben", 10, 4), ("cid", "dan", 10, 8)])
    closed = await close_event(admin, "foosball-singles", "League 2", [("ann", "cid", 10, 6)])
    changes = closed["changes"]
    assert isinstance(changes, list)
    assert [(c["player"], c["played"]) for c in changes] == [("ann", True), ("cid", True)]
