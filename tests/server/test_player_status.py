"""``player_status``: a list of who is online stays true while players start and end matches."""

from __future__ import annotations

from typing import Any

from testkit.clients import settle, start_match
from testkit.server_loop import LobbyServer


def statuses(pushes: list[Any]) -> list[tuple[str, str]]:
    return [(p["data"]["player"], p["data"]["status"]) for p in pushes
            if p["event"] == "player_status"]


async def test_who_listers_are_told_who_starts_and_ends_a_match(lobby: LobbyServer) -> None:
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    rows = {r["player"]: r["status"] for r in (await carol.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "ready"
    await settle(carol)

    await start_match(alice, bob, length=1)
    assert sorted(statuses(await settle(carol))) == [("alice", "playing"), ("bob", "playing")]
    assert statuses(await settle(dave)) == []  # only connections that listed `who`
    rows = {r["player"]: r["status"] for r in (await carol.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "playing"

    await alice.call("resign")
    assert sorted(statuses(await settle(carol))) == [("alice", "ready"), ("bob", "ready")]

    await start_match(alice, bob, length=3)
    await settle(carol)
    await alice.call("abort")
    await bob.call("abort")
    assert sorted(statuses(await settle(carol))) == [("alice", "ready"), ("bob", "ready")]
    rows = {r["player"]: r["status"] for r in (await carol.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "ready"
