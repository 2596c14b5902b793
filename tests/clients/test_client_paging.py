"""The clients get every page of a paged reply: the terminal client prints what was asked for
(`ladder … 1 1000 --all`, `event show`) as one table, whatever number of replies it took."""

from __future__ import annotations

import json
import re

from testkit.cli import run_batch
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from server.api.paging import EVENT_PAGE, LADDER_PAGE

PLAYERS = 1200


async def test_the_terminal_client_prints_every_page(lobby: LobbyServer) -> None:
    admin, watcher = await lobby.admin(), await lobby.client()
    await watcher.watch("backgammon")
    eid = (await admin.call("event create", name="Big", ladder="backgammon"))["id"]
    rows = [f"Big,{today()},p{2 * i:04d},p{2 * i + 1:04d},{1 + i % 3},0,1,"
            for i in range(PLAYERS // 2)]
    await admin.call("event import", new=True, event=eid, csv=results_text(rows))
    update = await watcher.ladder_updated("backgammon")
    assert update.total == PLAYERS
    ladder = [r.player for r in (await watcher.ladder("backgammon", count=PLAYERS, all=True)).players]
    assert [r.player for r in update.changed] == ladder[:len(update.changed)]
    assert PLAYERS // 2 > EVENT_PAGE and LADDER_PAGE < 1000  # more than a page of each

    done = await run_batch(lobby.url, ["ladder backgammon 1 1000 --all", f"event show {eid}"])
    assert done.returncode == 0, done.stderr
    table, event = done.stdout.split(f"Event {eid}: Big")
    assert table.startswith(f"backgammon (FIBS): {PLAYERS} players\n")
    assert re.findall(r"\bp\d{4}\b", table) == ladder[:1000]
    games, standings = event.split("\nplayer ")
    assert re.findall(r"^ *(\d+)  p", games, re.MULTILINE) == \
        [str(g["match"]) for g in (await admin.event(eid))["games"]]
    assert len(re.findall(r"^ *\d+  p\d{4} +p\d{4}", games, re.MULTILINE)) == PLAYERS // 2
    assert sorted(re.findall(r"^p\d{4}\b", standings, re.MULTILINE)) == sorted(ladder)

    # --json prints the reply as one, its lists whole and `next` spent
    done = await run_batch(lobby.url, [f"event show {eid}"], "--json")
    assert done.returncode == 0, (done.returncode, done.stderr, len(done.stdout))
    reply = json.loads(done.stdout)
    assert (len(reply["data"]["games"]), len(reply["data"]["standings"]), reply["data"]["next"]) \
        == (PLAYERS // 2, PLAYERS, None)
