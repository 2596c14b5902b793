"""Automatch from the page, at a desktop's width and a phone's: a "Find a match" button per
live ladder, "Looking for a match…" with a Cancel while the server looks, and the match an
opponent's seek starts shown as an invitation's is; axe-core finds nothing to fix."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, expect
from testkit.axe import axe_violations
from testkit.browser import log_in, open_page
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

WIDTHS = [1280, 390]


async def no_violations(page: Page) -> None:
    """axe-core's checks of the whole page: none fails."""
    found = await axe_violations(page)
    assert found == [], found


async def fits_the_width(page: Page, width: int) -> None:
    """Nothing of the panel runs past the screen's right edge (no sideways scrolling)."""
    right = await page.evaluate("""() => Math.max(...[...document.querySelectorAll(
        '#seek-panel, #seek-panel *')].map((e) => e.getBoundingClientRect().right))""")
    assert right <= width, right
    assert await page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", WIDTHS)
async def test_find_a_match_cancel_and_a_match_found(site: LobbyServer, browser: Browser,
                                                     page_errors: list[str], width: int) -> None:
    page = await open_page(browser, site.http_url, width=width, errors=page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    panel = page.locator("#seek-panel")
    # one button per live ladder (the default ladders: backgammon alone is played live)
    buttons = panel.get_by_role("button", name="Find a match")
    await expect(buttons).to_have_count(1)
    await expect(buttons).to_have_text("Find a match on backgammon")
    await fits_the_width(page, width)
    await no_violations(page)

    await page.fill("#seek-length", "3")
    await buttons.click()
    looking = panel.locator(".seeking")
    await expect(looking).to_contain_text("Looking for a match… backgammon, 3 points, within "
                                          "100 points of your rating")
    cancel = panel.get_by_role("button", name="Cancel")
    await expect(cancel).to_be_focused()
    bob = await site.player("bob")
    pool = (await bob.call("seeks"))["seeks"]
    assert [(s["player"], s["length"]) for s in pool] == [("alice", 3)]
    await fits_the_width(page, width)
    await no_violations(page)

    await cancel.click()
    await expect(panel.locator(".feedback")).to_have_text("You stopped looking for a match.")
    await expect(looking).to_have_count(0)
    assert (await bob.call("seeks"))["seeks"] == []

    # looking again; bob's seek of the same match pairs them: the match starts on the page
    await buttons.click()
    await expect(looking).to_be_visible()
    await bob.call("seek", ladder="backgammon", length=3)
    started = (await bob.next_push("match_started"))["data"]
    match_panel = page.locator("#match-panel")
    await expect(match_panel).to_contain_text(f"Match {started['match']}: alice vs bob on "
                                              "backgammon, 3 points — playing.")
    await expect(page.locator("#status")).to_have_text(
        f"Match {started['match']} started: alice vs bob on backgammon.")
    await expect(panel).to_be_empty()  # no Find a match while playing
    await bob.call("resign")
    await expect(buttons).to_have_count(1)  # the match over, it is offered again
    await expect(looking).to_have_count(0)
    await no_violations(page)


async def test_a_refused_seek_is_said_next_to_the_buttons(site: LobbyServer, page: Page) -> None:
    await log_in(page, "carol", PASSWORD, register=True)
    await page.fill("#seek-length", "0")
    await page.get_by_role("button", name="Find a match").click()
    feedback = page.locator("#seek-panel .feedback")
    await expect(feedback).to_have_class("feedback error")
    await expect(feedback).to_contain_text("LENGTH")
    await expect(page.locator("#seek-panel .seeking")).to_have_count(0)
