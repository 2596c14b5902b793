"""The page shows a ladder of more players than one `ladder` reply holds: it follows `next`."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from sharedkit import today
from weblobby import HEADER, Site, open_page

from server.handlers.queries import LADDER_PAGE

pytestmark = pytest.mark.asyncio(loop_scope="session")
PLAYERS = 1200


async def test_a_ladder_longer_than_a_page_is_shown_whole(
        site: Site, browser: Browser, page_errors: list[str]) -> None:
    assert PLAYERS > 2 * LADDER_PAGE
    admin, watcher = await site.admin(), await site.client()
    await watcher.watch("backgammon")
    eid = (await admin.call("event create", name="Big", ladder="backgammon"))["id"]
    rows = [f"Big,{today()},p{2 * i:04d},p{2 * i + 1:04d},{1 + i % 3},0,1," for i in range(PLAYERS // 2)]
    await admin.call("event import", event=eid, csv="\n".join([HEADER, *rows]) + "\n")
    whole = (await watcher.next_push("ladder_updated"))["data"]["players"]

    page = await open_page(browser, site.http_url, errors=page_errors)
    shown = page.locator("section[data-ladder='backgammon'] tbody tr")
    await expect(shown).to_have_count(PLAYERS)
    players = await shown.evaluate_all("(rows) => rows.map((r) => r.dataset.player)")
    assert players == [r["player"] for r in whole]
