"""Removing a mistaken player while another server of the same database knows them, and
while it enters a result naming them: no result ever points at a removed player."""

from __future__ import annotations

import asyncio

import pytest
from testkit.cli import replay_check, run_cli_async
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

pytestmark = [pytest.mark.postgresql, pytest.mark.both_backends]

RACES = 8


async def test_a_player_removed_on_one_server_is_entered_anew_on_the_other(
        nodes: tuple[LobbyServer, LobbyServer]) -> None:
    a, b = nodes
    await a.start()
    await b.start()
    made = await run_cli_async(["user", "add", "--admin", "--db", str(a.db), "director2"],
                               a.db.parent, stdin=f"{PASSWORD}\n")
    assert made.returncode == 0, made.stderr
    on_a, on_b = await a.admin(), await b.login("director2")
    event = (await on_a.call("event create", name="Night", ladder="backgammon"))["id"]
    await on_a.call("event result", new=True, event=event, side_a="ann", side_b="ben",
                    score_a=3, score_b=1, length=3)
    outcomes = []
    for i in range(RACES):
        typo = f"bne{i}"
        # a knows the name (it entered it), b removes it once its result is voided
        game = await on_a.call("event result", new=True, event=event, side_a="ann",
                               side_b=typo, score_a=3, score_b=0, length=3)
        await on_a.call("void", match=game["match"], reason="misspelt")
        if i % 2 == 0:  # one after the other: a enters the name again, as a new entry
            removed = await on_b.request("player remove", {"name": typo})
            entered = await on_a.request("event result", {
                "event": event, "side_a": typo, "side_b": "ben", "score_a": 3, "score_b": 2,
                "length": 3, "new": True})
        else:  # at once: whichever comes first, no result names a removed player
            removed, entered = await asyncio.gather(
                on_b.request("player remove", {"name": typo}),
                on_a.request("event result", {"event": event, "side_a": typo, "side_b": "ben",
                                              "score_a": 3, "score_b": 2, "length": 3,
                                              "new": True}))
        assert entered["ok"], entered
        assert removed["ok"] or removed["error"]["code"] == "conflict", removed
        outcomes.append(removed["ok"])
        whois = await on_a.call("whois", name=typo)
        assert whois["player"] == typo and whois["matches"]["played"] == 1, whois
    assert outcomes[0::2] == [True] * (RACES // 2)
    assert await replay_check(a.db) == (0, "replay --check: every rating agrees with the "
                                           "match log\n"), outcomes
