"""Talk on the page, at 1280 and at 390 pixels: the chat panel (the latest shouts for a
newcomer, shouting, telling and being told), the match's own conversation, and what a player
types arriving as text, never as markup. axe-core finds nothing to fault."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, Page, expect
from testkit.axe import axe_violations
from testkit.browser import log_in, open_page
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

WIDTHS = [1280, 390]
MARKUP = '<img src=x onerror="window.__hacked = 1"><b>bold</b>'


async def no_sideways_scroll(page: Page) -> None:
    assert await page.evaluate(
        "() => document.documentElement.scrollWidth <= window.innerWidth"), "the page scrolls"


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_chat_panel_shouts_tells_and_is_told(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob = await site.player("bob")
    await bob.call("shout", text="anyone for a 5-pointer?")
    page = await open_page(browser, site.http_url, width=width, errors=page_errors)
    talk = page.locator("#talk")
    # a newcomer, not logged in, reads what was shouted lately
    first = talk.locator("#talk-log .talk-line").first
    await expect(first).to_contain_text("bob shouts: anyone for a 5-pointer?")
    await expect(talk.locator("#talk-guest")).to_be_visible()
    await expect(talk.locator("#shout-form")).to_be_hidden()

    await log_in(page, "alice", PASSWORD, register=True)
    await expect(talk.locator("#shout-form")).to_be_visible()
    await page.fill("#shout-text", "me! 3 points?")
    await page.click("#shout-form button[type=submit]")
    await expect(talk.locator("#talk-log .talk-line").last).to_contain_text("You shout: me! 3 points?")
    assert (await bob.next_push("shouted"))["data"]["text"] == "me! 3 points?"
    await expect(page.locator("#shout-text")).to_have_value("")

    await page.fill("#tell-name", "bob")
    await page.fill("#tell-text", "fancy a game?")
    await page.click("#tell-form button[type=submit]")
    await expect(talk.locator("#talk-log .talk-line").last).to_have_text("You tell bob: fancy a game?")
    assert (await bob.next_push("told"))["data"] == {"from": "alice", "text": "fancy a game?"}

    await bob.call("tell", name="alice", text="sure, invite me")
    await expect(talk.locator("#talk-log .talk-line").last).to_have_text(
        "bob tells you: sure, invite me")

    # a tell to nobody online: the refusal next to the form
    await page.fill("#tell-name", "carol")
    await page.fill("#tell-text", "hi")
    await page.click("#tell-form button[type=submit]")
    await expect(page.locator("#talk-feedback")).to_contain_text("No player named 'carol'")
    await no_sideways_scroll(page)
    found = await axe_violations(page)
    assert found == [], found

    # logging out takes one's tells off the page (a shared computer); the shouts stay
    await page.click("#logout")
    await expect(talk.locator("#talk-guest")).to_be_visible()
    await expect(talk.locator("#talk-log .tell")).to_have_count(0)
    await expect(talk.locator("#talk-log .shout")).to_have_count(2)


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_match_has_its_own_conversation(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob = await site.player("bob")
    page = await open_page(browser, site.http_url, width=width, errors=page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    await expect(page.locator("#match-talk")).to_be_hidden()
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await page.locator("#invitations button", has_text="Join").first.click()
    box = page.locator("#match-talk")
    await expect(box).to_be_visible()
    await bob.call("say", text="good luck")
    await expect(box.locator(".talk-line").last).to_have_text("bob: good luck")
    await page.fill("#say-text", "you too")
    await page.click("#say-form button[type=submit]")
    await expect(box.locator(".talk-line").last).to_have_text("You: you too")
    assert (await bob.next_push("said"))["data"]["text"] == "you too"
    # a tell is not the match's: it goes to the chat panel
    await bob.call("tell", name="alice", text="psst")
    await expect(page.locator("#talk-log .talk-line").last).to_have_text("bob tells you: psst")
    await expect(box.locator(".talk-line")).to_have_count(2)
    await no_sideways_scroll(page)
    found = await axe_violations(page)
    assert found == [], found
    await bob.call("resign")
    await expect(box).to_be_hidden()


@pytest.mark.parametrize("width", WIDTHS)
async def test_what_a_player_types_arrives_as_text(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob, carol = await site.player("bob"), await site.player("carol")
    page = await open_page(browser, site.http_url, width=width, errors=page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    await bob.call("shout", text=MARKUP)
    await carol.call("tell", name="alice", text="<b>not bold</b> & <i>not</i> italic")
    log = page.locator("#talk-log")
    await expect(log.locator(".talk-line").last).to_have_text(
        "carol tells you: <b>not bold</b> & <i>not</i> italic")
    await expect(log.locator(".talk-line", has_text="bob shouts:")).to_contain_text(MARKUP)
    # no element came of it, and no script ran
    assert await log.locator("img, b, i").count() == 0
    assert await page.evaluate("() => window.__hacked") is None
    # the page's own forms send it back as typed
    await page.fill("#tell-name", "carol")
    await page.fill("#tell-text", MARKUP)
    await page.click("#tell-form button[type=submit]")
    await expect(log.locator(".talk-line").last).to_have_text(f"You tell carol: {MARKUP}")
    assert (await carol.next_push("told"))["data"]["text"] == MARKUP
    assert await log.locator("img, b, i").count() == 0


@pytest.mark.parametrize("width", WIDTHS)
async def test_blocking_a_player_from_the_page(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob, carol = await site.player("bob"), await site.player("carol")
    page = await open_page(browser, site.http_url, width=width, errors=page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    await page.click("#blocking summary")
    await page.fill("#block-name", "bob")
    await page.click("#block-form button[type=submit]")
    await expect(page.locator("#blocked-list li")).to_have_text(["bob Unblock bob"])
    await expect(page.locator("#block-feedback")).to_have_text("You block bob.")
    found = await axe_violations(page)
    assert found == [], found

    assert (await bob.call("tell", name="alice", text="psst"))["to"] == "alice"  # looks sent
    await carol.call("tell", name="alice", text="hello")  # told after bob's, so shown after it
    log = page.locator("#talk-log")
    await expect(log.locator(".talk-line").last).to_have_text("carol tells you: hello")
    await expect(log.locator(".talk-line", has_text="psst")).to_have_count(0)

    await page.reload()  # a new page of the same login lists the block too
    await page.wait_for_selector("body[data-loaded]", state="attached")
    await page.click("#blocking summary")
    await expect(page.locator("#blocked-list li")).to_have_text(["bob Unblock bob"])
    await page.click("#blocked-list button:has-text('Unblock bob')")
    await expect(page.locator("#blocked-list li")).to_have_count(0)
    await bob.call("tell", name="alice", text="there?")
    await expect(page.locator("#talk-log .talk-line").last).to_have_text("bob tells you: there?")
    await no_sideways_scroll(page)
