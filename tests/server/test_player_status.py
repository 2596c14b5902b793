"""``presence``: a list of who is online stays true while players start and end matches."""

from __future__ import annotations

from testkit.clients import presence_entries, settle, start_match, told_presence
from testkit.server_loop import LobbyServer


async def test_who_listers_are_told_who_starts_and_ends_a_match(lobby: LobbyServer) -> None:
    alice, bob, carol, dave = await lobby.players("alice", "bob", "carol", "dave")
    rows = {r["player"]: r["status"] for r in (await carol.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "ready"

    await start_match(alice, bob, length=1)
    await told_presence(carol, {"alice": "playing", "bob": "playing"})
    assert presence_entries(await settle(dave)) == []  # only connections that listed `who`
    rows = {r["player"]: r["status"] for r in (await carol.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "playing"

    await alice.call("resign")
    await told_presence(carol, {"alice": "ready", "bob": "ready"})

    await start_match(alice, bob, length=3)
    await told_presence(carol, {"alice": "playing", "bob": "playing"})
    await alice.call("abort")
    await bob.call("abort")
    await told_presence(carol, {"alice": "ready", "bob": "ready"})
    rows = {r["player"]: r["status"] for r in (await carol.call("who"))["players"]}
    assert rows["alice"] == rows["bob"] == "ready"
    assert presence_entries(await settle(dave)) == []
