"""Where a player on the page used to be stuck: an opponent who dropped (a countdown, then
Claim), a resign that lost the match in one click beside Abort, a match that ended while the
player was away, an invitation and the status line out of sight on a phone, focus lost to the
page after Join or Confirm, and an Invite button for a player who takes no invitations. Each
at a desktop's width and a phone's, checked with axe-core."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect
from testkit.axe import axe_violations
from testkit.browser import log_in, open_page
from testkit.clients import until_offline
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

from clients import LobbyError

pytestmark = pytest.mark.asyncio(loop_scope="session")

WIDTHS = [pytest.param(1280, id="desktop"), pytest.param(390, id="phone")]
PHONE = 390


async def page_at(site: LobbyServer, browser: Browser, width: int, errors: list[str]) -> Page:
    return await open_page(browser, site.http_url, width=width, height=844 if width == PHONE else 900,
                           errors=errors)


async def no_violations(page: Page) -> None:
    """axe-core finds no violation anywhere on the page."""
    found = await axe_violations(page)
    assert found == [], found


async def focused(page: Page) -> str:
    """What has the keyboard's focus: its tag, id or class and text, never ``BODY``."""
    return str(await page.evaluate("""() => {
        const a = document.activeElement;
        return a ? `${a.tagName}#${a.id}.${a.className}: ${a.textContent.trim()}` : "none";
    }"""))


async def has_focus(locator: Locator) -> None:
    await expect(locator).to_be_focused()


async def on_screen(page: Page, locator: Locator) -> None:
    """``locator`` lies wholly inside the viewport as it is scrolled now."""
    box = await locator.bounding_box()
    assert box is not None
    viewport = page.viewport_size
    assert viewport is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (box, viewport)


async def joined(page: Page, bob: Any) -> int:
    """bob invites the page's player, who presses Join on the page; the match's number."""
    await bob.call("invite", name="alice", ladder="backgammon", length=1)
    await page.get_by_role("button", name="Join bob").click()
    panel = page.locator("#match-panel")
    await expect(panel.locator("h3")).to_have_text("Your match")
    text = await panel.locator("p").first.text_content()
    found = re.search(r"Match (\d+)", text or "")
    assert found is not None
    return int(found.group(1))


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_dropped_opponent_counts_down_then_offers_claim(
        db_path: Path, browser: Browser, page_errors: list[str], width: int) -> None:
    site = LobbyServer(db_path, drop_timeout=8.0)  # room for a slow machine
    await site.start()
    try:
        bob = await site.player("bob")
        page = await page_at(site, browser, width, page_errors)
        await log_in(page, "alice", PASSWORD, register=True)
        mid = await joined(page, bob)
        drop = page.locator("#match-panel .drop")
        await expect(drop).to_have_count(0)

        # bob drops: said at once, with the time left; he comes back: it goes
        await bob.close()
        await expect(drop).to_contain_text(re.compile(r"^bob left; you can claim the match in [1-8] s\."))
        await expect(page.locator("#status")).to_have_text(re.compile(
            r"^bob left; you can claim the match in [1-8] s if they do not come back\.$"))
        await no_violations(page)
        bob = await site.login("bob")
        await expect(drop).to_have_count(0)
        await expect(page.locator("#status")).to_have_text("bob is back; the match goes on.")

        # he drops again and stays away: the countdown ends in a Claim button, which wins
        await bob.close()
        await expect(drop.locator(".countdown")).to_be_visible()
        claim = drop.get_by_role("button", name="Claim the match")
        await expect(claim).to_be_visible(timeout=20000)
        await expect(drop).to_contain_text("bob left and has not come back: you can claim the match.")
        await expect(page.locator("#status")).to_have_text(
            f"bob has not come back: you can claim match {mid} now.")
        await no_violations(page)
        await claim.click()
        result = page.locator("#last-result")
        await expect(result.locator("p")).to_have_text(
            "alice won on backgammon, 1 point: bob left and did not come back in time.")
        await has_focus(result.locator("h3"))
        await expect(page.locator("#match-panel")).to_be_empty()
    finally:
        await site.aclose()


@pytest.mark.parametrize("width", WIDTHS)
async def test_resign_asks_first_and_sits_apart_from_abort(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob = await site.player("bob")
    page = await page_at(site, browser, width, page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    mid = await joined(page, bob)
    panel = page.locator("#match-panel")
    resign = panel.get_by_role("button", name="Resign…")
    abort = panel.get_by_role("button", name="Abort (both must agree)")
    # not side by side: a slip of the thumb from Abort does not land on Resign
    resign_box, abort_box = await resign.bounding_box(), await abort.bounding_box()
    assert resign_box is not None and abort_box is not None
    assert resign_box["y"] >= abort_box["y"] + abort_box["height"] + 24, (resign_box, abort_box)

    await resign.click()
    question = panel.locator(".resign-box .confirm")
    await expect(question).to_contain_text(f"Resign match {mid}? bob wins, and it counts now. "
                                           "Your rating changes by −")
    keep = question.get_by_role("button", name="Keep playing")
    await has_focus(keep)
    await no_violations(page)
    await keep.click()
    await has_focus(resign)
    assert (await bob.call("whois", name="alice"))["status"] == "playing"  # nothing was sent

    await resign.click()
    await question.get_by_role("button", name="Yes, resign").click()
    finished = (await bob.next_push("match_finished"))["data"]
    assert (finished["winner"], finished["how"]) == ("bob", "resign")
    await has_focus(page.locator("#last-result h3"))


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_match_claimed_while_away_is_told_on_coming_back(
        db_path: Path, browser: Browser, page_errors: list[str], width: int) -> None:
    site = LobbyServer(db_path, drop_timeout=0.3)
    await site.start()
    try:
        bob = await site.player("bob")
        page = await page_at(site, browser, width, page_errors)
        await log_in(page, "alice", PASSWORD, register=True)
        mid = await joined(page, bob)
        context = page.context
        await page.close()  # alice's connection goes; the page keeps her session
        await until_offline(bob, "alice")
        claimed: dict[str, Any] = {}
        while not claimed:
            try:
                claimed = await bob.call("claim", match=mid)
            except LobbyError as e:  # until the drop timeout has passed
                assert "you can claim after" in e.message
                await asyncio.sleep(0.1)
        alice_change = next(c for c in claimed["changes"] if c["player"] == "alice")

        page = await context.new_page()
        page.on("pageerror", lambda e: page_errors.append(str(e)))
        await page.goto(site.http_url)
        await expect(page.locator("#me-name")).to_have_text("alice")
        told = page.locator("#while-away")
        await expect(told.locator("h3")).to_have_text("While you were away")
        await expect(told.locator(f"li[data-match='{mid}']")).to_have_text(
            f"bob claimed match {mid} after you left: bob won (backgammon, 1 point). Your rating: "
            f"{alice_change['before']:.2f} → {alice_change['after']:.2f} "
            f"(−{-alice_change['change']:.2f}).")
        await no_violations(page)
        await told.get_by_role("button", name="Got it").click()
        await expect(told).to_be_empty()
        await has_focus(page.locator("#play-heading"))
        # told once: a reload says nothing more
        await page.reload()
        await expect(page.locator("#me-name")).to_have_text("alice")
        await page.wait_for_selector("body[data-loaded]", state="attached")
        await expect(told).to_be_empty()
    finally:
        await site.aclose()


async def test_on_a_phone_the_invitation_and_the_status_line_stay_in_reach(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    bob, carol = await site.player("bob"), await site.player("carol")
    page = await page_at(site, browser, PHONE, page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # down at the events
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    status = page.locator("#status")
    await expect(status).to_have_text("bob invites you to backgammon, 3 points.")
    await on_screen(page, status)
    sign = page.locator("#invitation-sign")
    await expect(sign).to_have_text("bob invites you: answer")
    await on_screen(page, sign)
    await no_violations(page)
    await carol.call("invite", name="alice", ladder="backgammon")
    await expect(sign).to_have_text("2 invitations: answer")

    # one tap on the sign: the invitations' Join is on screen, with the keyboard's focus
    await page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    await sign.click()
    join = page.get_by_role("button", name="Join bob")
    await has_focus(join)
    await on_screen(page, join)
    await on_screen(page, page.get_by_role("button", name="Decline bob"))
    # declining one leaves the keyboard on the next invitation
    await page.get_by_role("button", name="Decline bob").click()
    await has_focus(page.get_by_role("button", name="Join carol"))
    await expect(sign).to_have_text("carol invites you: answer")
    await page.get_by_role("button", name="Decline carol").click()
    await expect(sign).to_be_hidden()
    await has_focus(page.locator("#play-heading"))


@pytest.mark.parametrize("width", WIDTHS)
async def test_focus_after_join_is_on_the_match_and_after_confirm_on_the_result(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob = await site.player("bob")
    page = await page_at(site, browser, width, page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    await joined(page, bob)
    await has_focus(page.locator("#match-panel h3"))  # Join's button is gone: on the match
    await bob.call("report win")
    confirm = page.locator("#match-panel").get_by_role("button", name="Confirm their win")
    await confirm.focus()
    await page.keyboard.press("Enter")
    await expect(page.locator("#last-result p")).to_have_text(
        "bob won on backgammon, 1 point: alice confirmed it.")
    await has_focus(page.locator("#last-result h3"))
    assert not (await focused(page)).startswith("BODY")
    await no_violations(page)


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_player_not_taking_invitations_is_shown_so_without_invite(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob = await site.player("bob")
    page = await page_at(site, browser, width, page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    row = page.locator("#online li[data-player='bob']")
    invite = page.get_by_role("button", name="Invite bob")
    await expect(invite).to_be_visible()
    await bob.call("ready off")
    await expect(row).to_have_attribute("data-status", "not_ready")
    await expect(row.locator(".tag")).to_have_text("not ready")
    await expect(invite).to_have_count(0)
    await no_violations(page)
    await bob.call("ready on")
    await expect(row.locator(".tag")).to_have_text("ready")
    await expect(invite).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_inviters_focus_after_withdrawing_and_when_the_match_starts(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob = await site.player("bob")
    page = await page_at(site, browser, width, page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    await page.fill("#invite-name", "bob")
    submit = page.locator("#invite-form button[type=submit]")
    await submit.focus()
    await page.keyboard.press("Enter")
    await bob.next_push("invited")
    await has_focus(submit)
    # withdrawn, then sent again: the keyboard goes back to the form, not to the page
    await page.get_by_role("button", name="Withdraw bob").click()
    await has_focus(page.locator("#invite-name"))
    await submit.focus()
    await page.keyboard.press("Enter")
    await bob.next_push("invitation_withdrawn")
    await bob.next_push("invited")
    await bob.call("join", name="alice")
    await expect(page.locator("#invite-form")).to_be_hidden()
    await has_focus(page.locator("#match-panel h3"))
