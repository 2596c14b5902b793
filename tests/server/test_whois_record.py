"""`whois` gives a player's won–lost–drawn record on each ladder, from finished games only."""

from __future__ import annotations

from testkit.clients import play, start_match
from testkit.server_loop import LobbyServer


async def test_record_counts_finished_live_matches_and_event_games(lobby: LobbyServer) -> None:
    alice, bob = await lobby.player("alice"), await lobby.player("bob")
    assert (await alice.call("whois", name="alice"))["record"] == {}
    await play(alice, bob, 3)
    await play(alice, bob, 1)
    voided = (await play(bob, alice, 1))["match"]
    await start_match(alice, bob)
    await alice.call("abort")
    await bob.call("abort")  # aborted: not counted
    admin = await lobby.admin()
    await admin.call("void", match=voided, reason="test")  # voided: not counted
    await play(bob, alice, 5)
    scrabble = (await admin.call("event create", name="Night", ladder="scrabble"))["id"]
    await admin.call("event result", new=True, event=scrabble, side_a="alice", side_b="bob",
                     score_a=300, score_b=300)
    await admin.call("event result", new=True, event=scrabble, side_a="carol", side_b="alice",
                     score_a=310, score_b=300)
    doubles = (await admin.call("event create", name="Day", ladder="foosball-doubles"))["id"]
    await admin.call("event result", new=True, event=doubles, side_a="alice+bob", side_b="carol+dave",
                     score_a=10, score_b=6)
    # an open event's games count as soon as they are entered; a removed one does not
    removed = (await admin.call("event result", new=True, event=doubles, side_a="alice+carol",
                                side_b="bob+dave", score_a=10, score_b=2))["match"]
    await admin.call("void", match=removed, reason="entered twice")

    record = (await bob.call("whois", name="alice"))["record"]
    assert record == {"backgammon": {"won": 2, "lost": 1, "drawn": 0},
                      "foosball-doubles": {"won": 1, "lost": 0, "drawn": 0},
                      "scrabble": {"won": 0, "lost": 1, "drawn": 1}}
    assert (await bob.call("whois", name="dave"))["record"] == {
        "foosball-doubles": {"won": 0, "lost": 1, "drawn": 0}}
