"""The page shows what takes more than one reply (a ladder, a history): it follows `next`."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from testkit.browser import open_page
from testkit.results import HEADER, today
from testkit.server_loop import LobbyServer

from server.api.paging import HISTORY_PAGE, LADDER_PAGE

pytestmark = pytest.mark.asyncio(loop_scope="session")
PLAYERS = 1200


async def test_a_ladder_longer_than_a_page_is_shown_whole_and_followed_live(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    assert PLAYERS > 2 * LADDER_PAGE
    admin, watcher = await site.admin(), await site.client()
    await watcher.watch("backgammon")
    eid = (await admin.call("event create", name="Big", ladder="backgammon"))["id"]
    rows = [f"Big,{today()},p{2 * i:04d},p{2 * i + 1:04d},{1 + i % 3},0,1," for i in range(PLAYERS // 2)]
    await admin.call("event import", new=True, event=eid, csv="\n".join([HEADER, *rows]) + "\n")
    whole = (await watcher.ladder("backgammon", count=PLAYERS, all=True)).players

    page = await open_page(browser, site.http_url, errors=page_errors)
    shown = page.locator("section[data-ladder='backgammon'] tbody tr")
    await expect(shown).to_have_count(PLAYERS)
    players = await shown.evaluate_all("(rows) => rows.map((r) => r.dataset.player)")
    assert players == [r.player for r in whole]

    # the last two play: the push names only the best-placed rows that moved, and the page
    # fetches what it shows again (without reloading)
    await page.evaluate("window.noReload = true")
    watcher.drain_pushes()
    last, before = whole[-1].player, whole[-2].player
    await admin.call("event import", event=eid,
                     csv=f"{HEADER}\nBig,{today()},{last},{before},1,0,1,\n")
    update = await watcher.ladder_updated("backgammon")
    assert update.moved == 2 and update.total == PLAYERS
    after = {r.player: r for r in (await watcher.ladder("backgammon", count=PLAYERS, all=True)).players}
    for name in (last, before):
        row = page.locator(f"section[data-ladder='backgammon'] tbody tr[data-player='{name}']")
        shown_as = await page.evaluate("(x) => String(x)", after[name].rating)  # as JS writes it
        await expect(row).to_have_attribute("data-rating", shown_as)
        await expect(row.locator("td").first).to_have_text(str(after[name].rank))
    assert await page.evaluate("window.noReload") is True


async def test_a_history_longer_than_a_page_is_charted_whole(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    admin = await site.admin()
    games = HISTORY_PAGE + 100
    eid = (await admin.call("event create", name="Marathon", ladder="backgammon"))["id"]
    rows = [f"Marathon,{today()},hero,rival{i:04d},{i % 2},{1 - i % 2},1," for i in range(games)]
    await admin.call("event import", new=True, event=eid, csv="\n".join([HEADER, *rows]) + "\n")

    page = await open_page(browser, site.http_url + "#player=hero", errors=page_errors)
    figure = page.locator("figure.history[data-ladder='backgammon']")
    await expect(figure).to_have_attribute("data-points", str(games))
