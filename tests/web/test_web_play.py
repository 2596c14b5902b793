"""Playing from the page: what is at stake, invitations and their signs, presence, disputes,
and a reload that keeps the player logged in."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect
from testkit.browser import log_in, open_page
from testkit.clients import expect_error, play, start_match
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.fibs import fibs_changes
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

# The browser's Notification, recorded: whether the page asks for the permission (only on a
# click) and which notifications it shows. The page under test is unchanged.
RECORD_NOTIFICATIONS = """
window.__asked = 0;
window.__shown = [];
class RecordedNotification {
  constructor(title, options) { window.__shown.push([title, options.body]); }
  static permission = "default";
  static async requestPermission() {
    window.__asked += 1;
    RecordedNotification.permission = "granted";
    return "granted";
  }
}
window.Notification = RecordedNotification;
"""


def percent(p: float) -> str:
    return f"{100 * p:.0f}%"


def signed(x: float) -> str:
    return f"+{x:.2f}" if x >= 0 else f"−{-x:.2f}"


async def check_stake(table: Locator, stake: dict[str, Any]) -> None:
    """The page's stake table shows the server's figures, rounded as the ladder shows them."""
    await expect(table.locator("tbody tr")).to_have_count(2)
    for p in stake["players"]:
        r = table.locator(f"tr[data-player='{p['player']}']")
        await expect(r.locator("[data-key=rating]")).to_have_text(f"{p['rating']:.2f}")
        await expect(r.locator("[data-key=chance]")).to_have_text(percent(p["chance"]))
        await expect(r.locator("[data-key=win]")).to_have_text(signed(p["win"]))
        await expect(r.locator("[data-key=loss]")).to_have_text(signed(p["loss"]))


async def test_stake_before_inviting_on_the_invitation_and_the_match_panel(
        site: LobbyServer, page: Page) -> None:
    bob, carol = await site.player("bob"), await site.player("carol")
    await play(bob, carol, 3)
    await log_in(page, "alice", PASSWORD, register=True)

    # the invite form says what the match would put at stake before it is sent
    await page.fill("#invite-name", "bob")
    await page.fill("#invite-length", "5")
    preview = page.locator("#invite-stake .stake")
    await expect(preview).to_have_attribute("data-length", "5")
    stake = await bob.call("stake", name="alice", ladder="backgammon", length=5)
    await check_stake(preview, stake)
    # ... and those figures are FIBS's own: alice new at 1500, bob after one win
    rating = (await bob.call("rating", name="bob", ladder="backgammon"))["ratings"][0]
    d_alice_wins, d_bob_loses = fibs_changes(1500.0, 0, rating["rating"], rating["experience"],
                                             5, True)
    d_alice_loses, d_bob_wins = fibs_changes(1500.0, 0, rating["rating"], rating["experience"],
                                             5, False)
    alice_row = preview.locator("tr[data-player='alice']")
    await expect(alice_row.locator("[data-key=win]")).to_have_text(signed(d_alice_wins))
    await expect(alice_row.locator("[data-key=loss]")).to_have_text(signed(d_alice_loses))
    bob_row = preview.locator("tr[data-player='bob']")
    await expect(bob_row.locator("[data-key=win]")).to_have_text(signed(d_bob_wins))
    await expect(bob_row.locator("[data-key=loss]")).to_have_text(signed(d_bob_loses))
    await page.fill("#invite-length", "unlimited")
    await expect(page.locator("#invite-stake")).to_have_text("Nothing at stake: an unrated match.")
    await page.fill("#invite-length", "5")

    await page.click("#invite-form button[type=submit]")
    invited = (await bob.next_push("invited"))["data"]
    assert invited["stake"]["players"][0]["player"] == "alice"
    started = await bob.call("join", name="alice")
    panel = page.locator("#match-panel")
    await expect(panel).to_contain_text(f"Match {started['match']}: alice vs bob")
    await check_stake(panel.locator(".stake"), started["stake"])

    # a received invitation shows its stake too (the inviter first)
    await bob.call("resign")
    invite = await carol.call("invite", name="alice", ladder="backgammon", length=3)
    received = page.locator("#invitations li[data-from='carol']")
    await check_stake(received.locator(".stake"), invite["stake"])


async def test_invitations_sent_withdrawn_replaced_and_their_signs(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    bob = await site.player("bob")
    page = await open_page(browser, site.http_url, errors=page_errors)
    await page.add_init_script(RECORD_NOTIFICATIONS)
    await page.reload()
    await page.wait_for_selector("body[data-loaded]", state="attached")
    await log_in(page, "alice", PASSWORD, register=True)
    assert await page.evaluate("window.__asked") == 0  # never asked without a click

    # sent: listed with its expiry and a Withdraw button
    await page.fill("#invite-name", "bob")
    await page.click("#invite-form button[type=submit]")
    await bob.next_push("invited")
    sent = page.locator("#sent-invitations li[data-to='bob']")
    await expect(sent).to_contain_text("To bob: backgammon, 1 point; expires in")
    listed = await bob.call("invitations")
    assert [i["from"] for i in listed["received"]] == ["alice"]
    # inviting again replaces it, and says so
    await page.fill("#invite-length", "3")
    await page.click("#invite-form button[type=submit]")
    await expect(page.locator("#status")).to_have_text(
        "Invited again bob to backgammon, 3 points; waiting for an answer.")
    assert (await bob.next_push("invited"))["data"]["length"] == 3
    await expect(page.locator("#sent-invitations li")).to_have_count(1)
    await expect(sent).to_contain_text("3 points")
    await sent.get_by_role("button", name="Withdraw bob").click()
    assert (await bob.next_push("invitation_withdrawn"))["data"] == {
        "from": "alice", "ladder": "backgammon"}
    await expect(page.locator("#sent-invitations li")).to_have_count(0)
    assert (await bob.call("invitations"))["received"] == []

    # received: the title, a tone, and (once allowed by a click) a notification
    await expect(page).to_have_title("matchlobby")
    played = await page.evaluate("window.matchlobby.alerts.played")
    await bob.call("invite", name="alice", ladder="backgammon")
    await expect(page.locator("#invitations li[data-from='bob']")).to_be_visible()
    await expect(page).to_have_title("(1) Invitation — matchlobby")
    assert await page.evaluate("window.matchlobby.alerts.played") == played + 1
    assert await page.evaluate("window.__shown") == []
    await page.click("#notify-on")
    await expect(page.locator("#notify-state")).to_have_text("Browser notifications are on.")
    assert await page.evaluate("window.__asked") == 1
    await page.uncheck("#sound-on")
    await bob.call("uninvite", name="alice")
    await expect(page.locator("#invitations li")).to_have_count(0)
    await expect(page.locator("#status")).to_have_text("bob withdrew their invitation.")
    await expect(page).to_have_title("matchlobby")
    await bob.call("invite", name="alice", ladder="backgammon", length=7)
    await expect(page).to_have_title("(1) Invitation — matchlobby")
    assert await page.evaluate("window.__shown") == [
        ["matchlobby", "bob invites you to backgammon, 7 points."]]
    assert await page.evaluate("window.matchlobby.alerts.played") == played + 1  # sound off
    # the sound setting is kept across a reload
    await page.reload()
    await expect(page.locator("#me-name")).to_have_text("alice")
    await expect(page.locator("#sound-on")).not_to_be_checked()


async def test_invitations_expire_on_the_page(
        db_path: Path, browser: Browser, page_errors: list[str]) -> None:
    site = LobbyServer(db_path, configure=lambda c: replace(c, invitation_timeout=3.0))
    await site.start()
    try:
        bob = await site.player("bob")
        page = await open_page(browser, site.http_url, errors=page_errors)
        await log_in(page, "alice", PASSWORD, register=True)
        await bob.call("invite", name="alice", ladder="backgammon")
        received = page.locator("#invitations li[data-from='bob']")
        await expect(received).to_contain_text(re.compile(r"expires in [0-3] s \(\d\d:\d\d UTC\)"))
        await expect(received).to_have_count(0, timeout=10000)
        await expect(page.locator("#status")).to_have_text("bob's invitation expired.")
        await expect(page).to_have_title("matchlobby")
        await page.fill("#invite-name", "bob")
        await page.click("#invite-form button[type=submit]")
        await expect(page.locator("#sent-invitations li[data-to='bob']")).to_be_visible()
        await expect(page.locator("#status")).to_have_text(
            "Your invitation to bob expired unanswered.", timeout=10000)
        await expect(page.locator("#sent-invitations li")).to_have_count(0)
    finally:
        await site.aclose()


async def test_online_now_shows_playing_and_ratings_on_the_chosen_ladder(
        site: LobbyServer, page: Page) -> None:
    bob, carol, dave = await site.player("bob"), await site.player("carol"), await site.player("dave")
    finished = await play(bob, carol, 3)
    await log_in(page, "alice", PASSWORD, register=True)
    online = page.locator("#online")
    await expect(online.locator("li[data-player='bob']")).to_have_attribute("data-status", "ready")
    await expect(page.get_by_role("button", name="Invite bob")).to_be_visible()
    await expect(page.locator("#online-ladder")).to_have_text("Ratings on backgammon.")
    after = {c["player"]: c["after"] for c in finished["changes"]}
    for name in ("bob", "carol"):
        await expect(online.locator(f"li[data-player='{name}'] .online-rating")).to_have_text(
            f" {after[name]:.2f}")
    await expect(online.locator("li[data-player='dave'] .online-rating")).to_have_text(" unrated")

    match = await start_match(bob, carol)
    for name in ("bob", "carol"):
        item = online.locator(f"li[data-player='{name}']")
        await expect(item).to_have_attribute("data-status", "playing", timeout=5000)
        await expect(item.locator(".tag")).to_have_text("playing")
        await expect(page.get_by_role("button", name=f"Invite {name}")).to_have_count(0)
    await expect(page.get_by_role("button", name="Invite dave")).to_be_visible()
    # while alice plays, she invites nobody: no Invite button, until her match ends
    erin = await site.player("erin")
    await erin.call("invite", name="alice", ladder="backgammon", length=1)
    await page.get_by_role("button", name="Join erin").click()
    await expect(page.locator("#match-panel")).to_contain_text("erin vs alice")
    await expect(online.locator("li[data-player='dave']")).to_have_attribute("data-status", "ready")
    await expect(online.get_by_role("button", name=re.compile("^Invite "))).to_have_count(0)
    await erin.call("resign")
    await expect(page.locator("#match-panel")).to_be_empty()
    await expect(page.get_by_role("button", name="Invite dave")).to_be_visible()
    # the match ends: ready again, with the new ratings
    done = await carol.call("resign")
    assert done["match"] == match
    new = {c["player"]: c["after"] for c in done["changes"]}
    item = online.locator("li[data-player='bob']")
    await expect(item).to_have_attribute("data-status", "ready", timeout=5000)
    await expect(item.locator(".online-rating")).to_have_text(f" {new['bob']:.2f}")
    await expect(page.get_by_role("button", name="Invite bob")).to_be_visible()
    assert (await dave.call("who"))["players"][1]["status"] == "ready"


async def test_disputes_shown_to_both_players_and_decided_by_an_admin_on_the_page(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    bob = await site.player("bob")
    page = await open_page(browser, site.http_url, errors=page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    desk = await open_page(browser, site.http_url, errors=page_errors)
    await log_in(desk, ADMIN, ADMIN_PASSWORD)
    await desk.get_by_role("link", name="Director's desk").click()

    # bob claims, alice disputes on the page: both see the dispute's state
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await page.get_by_role("button", name="Join bob").click()
    first = (await bob.next_push("match_started"))["data"]
    await bob.call("report win", score_a=3, score_b=1)
    panel = page.locator("#match-panel")
    await panel.get_by_role("button", name="Dispute").click()
    assert (await bob.next_push("result_disputed"))["data"]["by"] == "alice"
    # it waits for an admin beside the play panel, which is free for other matches
    await expect(page.locator("#my-disputes .dispute-state")).to_contain_text(
        f"Match {first['match']} (bob vs alice on backgammon) is disputed by you. An admin")
    await expect(panel.get_by_role("button", name=re.compile("Abort|Resign"))).to_have_count(0)
    assert "an admin will decide it." in (
        await expect_error(bob.call("abort"), "conflict")).message
    bob_page = await open_page(browser, site.http_url, errors=page_errors)
    await bob.call("logout")
    await log_in(bob_page, "bob", PASSWORD)  # bob on a page: his match is disputed by alice
    await expect(bob_page.locator("#my-disputes .dispute-state")).to_contain_text(
        f"Match {first['match']} (bob vs alice on backgammon) is disputed. An admin will "
        "decide it")

    # the admin online when it happened, and one who arrives later, both see it
    dispute = desk.locator(f"#disputes li[data-match='{first['match']}']")
    await expect(dispute).to_contain_text(f"Match {first['match']} on backgammon, 3 points: "
                                          "bob vs alice, disputed.")
    late = await open_page(browser, site.http_url, errors=page_errors)
    await log_in(late, ADMIN, ADMIN_PASSWORD)  # the first admin page is replaced
    await late.get_by_role("link", name="Director's desk").click()
    await expect(late.locator(f"#disputes li[data-match='{first['match']}']")).to_be_visible()
    await late.get_by_role("button", name="bob wins", exact=True).click()
    await late.get_by_role("button", name="Yes, bob wins").click()
    await expect(late.locator("#disputes-feedback")).to_have_text(
        f"Match {first['match']} decided: bob wins.")
    await expect(late.locator("#disputes li")).to_have_count(0)
    await expect(page.locator("#status")).to_have_text(re.compile(
        rf"^Match {first['match']}: bob won\."))
    await expect(panel).to_be_empty()
    await expect(page.locator("#my-disputes li")).to_have_count(0)

    # a second dispute, voided with a reason
    await bob_page.fill("#invite-name", "alice")
    await bob_page.click("#invite-form button[type=submit]")
    await page.get_by_role("button", name="Join bob").click()
    await expect(bob_page.locator("#match-panel")).to_contain_text("bob vs alice")
    await bob_page.locator("#match-panel").get_by_role("button", name="Report a win").click()
    await panel.get_by_role("button", name="Dispute").click()
    await expect(bob_page.locator("#my-disputes .dispute-state")).to_contain_text(
        "is disputed by alice. An admin will decide it")
    second = (await bob.call("whois", name="bob"))["disputes"][-1]
    item = late.locator(f"#disputes li[data-match='{second['match']}']")
    await item.get_by_role("button", name="Void…").click()  # no reason: the browser asks for one
    await expect(item).to_be_visible()
    await expect(item.locator(".confirm")).to_have_count(0)
    await item.locator("input[name=reason]").fill("dice app crashed")
    await item.get_by_role("button", name="Void…").click()
    await item.get_by_role("button", name=f"Yes, void match {second['match']}").click()
    await expect(late.locator("#disputes-feedback")).to_have_text(
        f"Match {second['match']} voided: dice app crashed.")
    await expect(page.locator("#status")).to_have_text(
        f"An admin decided match {second['match']}: voided (dice app crashed).")
    await expect(panel).to_be_empty()
    await expect(bob_page.locator("#match-panel")).to_be_empty()


async def test_a_reload_resumes_the_session_without_the_password(
        site: LobbyServer, page: Page) -> None:
    await log_in(page, "alice", "a-long-secret", register=True)
    stored = await page.evaluate("() => ({...localStorage})")
    assert "a-long-secret" not in json.dumps(stored)
    session = json.loads(stored["matchlobby.session"])
    assert set(session) == {"player", "token", "expires_at"} and session["player"] == "alice"
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", session["token"])

    # a reload in a live match: logged in again, the match panel back
    bob = await site.player("bob")
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await page.get_by_role("button", name="Join bob").click()
    await page.reload()
    await expect(page.locator("#me-name")).to_have_text("alice")
    await expect(page.locator("#match-panel")).to_contain_text("bob vs alice on backgammon")
    assert (await bob.call("whois", name="alice"))["online"] is True
    await page.locator("#match-panel").get_by_role("button", name="Resign…").click()
    await page.locator("#match-panel").get_by_role("button", name="Yes, resign").click()  # it asks first
    await bob.next_push("match_finished")

    # logout forgets the token and ends it on the server
    await page.click("#logout")
    await expect(page.locator("#login-form")).to_be_visible()
    assert await page.evaluate("() => localStorage.getItem('matchlobby.session')") is None
    await page.reload()
    await page.wait_for_selector("body[data-loaded]", state="attached")
    await expect(page.locator("#login-form")).to_be_visible()
    probe = await site.client()
    await expect_error(probe.call("resume", token=session["token"]), "forbidden")

    # a token the server has ended: the page says so and asks for the password
    await page.evaluate("(s) => localStorage.setItem('matchlobby.session', s)",
                        json.dumps(session))
    await page.reload()
    await expect(page.locator("#status")).to_have_text("This session has ended; log in again.")
    await expect(page.locator("#login-form")).to_be_visible()
    assert await page.evaluate("() => localStorage.getItem('matchlobby.session')") is None


async def test_an_admin_who_logs_in_later_sees_disputes_between_offline_players(
        site: LobbyServer, page: Page) -> None:
    """Nobody online but the admin: the page's desk lists the disputes the lobby holds."""
    bob, carol = await site.player("bob"), await site.player("carol")
    mid = await start_match(bob, carol, length=3)
    await bob.call("report win", score_a=3, score_b=1)
    await carol.call("dispute", match=mid)
    for c in (bob, carol):
        await c.close()
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await page.get_by_role("link", name="Director's desk").click()
    item = page.locator(f"#disputes li[data-match='{mid}']")
    await expect(item).to_contain_text(f"Match {mid} on backgammon, 3 points: bob vs carol, "
                                       "disputed. bob reports a win (3–1); carol disputes it.")
    await item.get_by_role("button", name="carol wins", exact=True).click()
    await item.get_by_role("button", name="Yes, carol wins").click()
    await expect(page.locator("#disputes-feedback")).to_have_text(
        f"Match {mid} decided: carol wins.")
    await expect(page.locator("#disputes li")).to_have_count(0)
