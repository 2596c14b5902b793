"""A client paging through a big reply past its address's read budget: the server refuses a
page with ``rate_limited`` and ``retry_after``, and the library waits that long and asks again,
so ``call_all`` still returns every row (what the terminal client's ``event show`` and the
web page's exports rely on)."""

from __future__ import annotations

from pathlib import Path

from testkit.constants import PLAY_FREELY
from testkit.results import today
from testkit.server_loop import LobbyServer

from server.config import Limits

GAMES = 600
HEADER = "event,date,side_a,side_b,score_a,score_b,length,rated\n"


async def test_call_all_waits_out_the_read_budget(db_path: Path) -> None:
    # 10 units saved up, 20 more a second: the event's pages (5 units each, and its standings
    # worked out once over its games) need more than is saved up
    lobby = LobbyServer(db_path, limits=Limits(read_units_per_second=20, read_units_burst=10,
                                               **PLAY_FREELY))
    await lobby.start()
    try:
        admin = await lobby.admin()
        eid = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
        rows = [f"Open,{today()},p{g:03d},p{(g + 1) % GAMES:03d},{300 + g % 50},{250},,\n"
                for g in range(GAMES)]
        await admin.call("event import", new=True, event=eid, csv=HEADER + "".join(rows))
        reader = await lobby.client()
        shown = await reader.call_all("event show", event=eid)
        refused = await reader.request("event show", {"event": eid})  # no waiting: refused
    finally:
        await lobby.aclose()
    assert len(shown["games"]) == GAMES and len(shown["standings"]) == GAMES
    assert shown["next"] is None
    assert refused["ok"] is False and refused["error"]["code"] == "rate_limited", refused
    assert refused["error"]["retry_after"] > 0
