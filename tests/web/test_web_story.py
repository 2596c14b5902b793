"""On the page, at a desktop's width and a phone's: a dispute holds neither player (the
disputed match waits for an admin, whom the page tells as it tells a player of an invitation,
and the desk says how long each dispute has waited), and a history that tells the story of
each rating change (the profile's table, its CSV and JSON, a closed event's rating changes)."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.async_api import Browser, Download, Page, expect
from testkit.axe import axe_violations
from testkit.browser import log_in, open_page
from testkit.clients import start_match
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.db import execute
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

WIDTHS = [pytest.param(1280, id="desktop"), pytest.param(390, id="phone")]

# The browser's Notification, recorded (permission granted): which notifications the page shows.
RECORD_NOTIFICATIONS = """
window.__shown = [];
class RecordedNotification {
  constructor(title, options) { window.__shown.push([title, options.body]); }
  static permission = "granted";
  static async requestPermission() { return "granted"; }
}
window.Notification = RecordedNotification;
"""


async def page_at(browser: Browser, url: str, width: int, errors: list[str],
                  notifications: bool = False) -> Page:
    page = await open_page(browser, url, width=width, errors=errors)
    if notifications:
        await page.add_init_script(RECORD_NOTIFICATIONS)
        await page.reload()
        await page.wait_for_selector("body[data-loaded]", state="attached")
    return page


async def no_overflow(page: Page, width: int) -> None:
    """Nothing wider than the window: what is wide scrolls inside its own box."""
    doc = await page.evaluate("() => document.documentElement.scrollWidth")
    assert doc <= width, (doc, width)


async def saved(download: Download, tmp: Path) -> str:
    path = tmp / download.suggested_filename
    await download.save_as(path)
    return path.read_text(encoding="utf-8")


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_dispute_frees_the_players_and_alerts_the_admins(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob, carol = await site.player("bob"), await site.player("carol")
    page = await page_at(browser, site.http_url, width, page_errors)
    await log_in(page, "alice", PASSWORD, register=True)
    desk = await page_at(browser, site.http_url, width, page_errors, notifications=True)
    await log_in(desk, ADMIN, ADMIN_PASSWORD)
    await desk.get_by_role("link", name="Director's desk").click()
    await expect(desk).to_have_title("matchlobby")
    played = await desk.evaluate("window.matchlobby.alerts.played")

    # bob reports a win, alice disputes it on the page
    await bob.call("invite", name="alice", ladder="backgammon", length=3)
    await page.get_by_role("button", name="Join bob").click()
    first = (await bob.next_push("match_started"))["data"]["match"]
    await bob.call("report win", score_a=3, score_b=1)
    panel = page.locator("#match-panel")
    await panel.get_by_role("button", name="Dispute").click()
    await bob.next_push("result_disputed")

    # alice is free: the match waits beside the play panel, the invite form is back
    mine = page.locator(f"#my-disputes li[data-match='{first}']")
    await expect(mine).to_have_text(
        f"Match {first} (bob vs alice on backgammon) is disputed by you. An admin will decide "
        "it, by giving the win to one of you or by voiding the match. You are free to play "
        "other matches meanwhile.")
    await expect(panel).to_be_empty()
    await expect(page.locator("#invite-form")).to_be_visible()
    await expect(page.locator("#status")).to_have_text(
        f"You disputed match {first}; an admin will decide it. You are free to play other "
        "matches meanwhile.")

    # the admin online is told as a player is of an invitation: title, tone, notification
    await expect(desk).to_have_title("(1) Dispute — matchlobby")
    assert await desk.evaluate("window.matchlobby.alerts.played") == played + 1
    assert await desk.evaluate("window.__shown") == [
        ["matchlobby", f"Match {first} is disputed by alice: it waits for an admin."]]
    item = desk.locator(f"#disputes li[data-match='{first}']")
    await expect(item).to_contain_text(f"Match {first} on backgammon, 3 points: bob vs alice, "
                                       "disputed. bob reports a win (3–1); alice disputes it.")
    await expect(item.locator(".dispute-age")).to_have_text(re.compile(
        r"^waiting just now \(since \d\d:\d\d UTC\)\.$"))

    # meanwhile alice plays carol: invited, joined and resigned on the page
    await carol.call("invite", name="alice", ladder="backgammon")
    await page.get_by_role("button", name="Join carol").click()
    second = (await carol.next_push("match_started"))["data"]["match"]
    await expect(panel).to_contain_text(f"Match {second}: carol vs alice")
    await no_overflow(page, width)
    assert await axe_violations(page) == []
    await panel.get_by_role("button", name="Resign…").click()
    await panel.get_by_role("button", name="Yes, resign").click()  # it asks first
    assert (await carol.next_push("match_finished"))["data"]["match"] == second
    await expect(panel).to_be_empty()
    await expect(mine).to_be_visible()  # the disputed one still waits

    # a dispute that has waited a while says so (its time, as stored, two hours back)
    older = await start_match(carol, bob, length=3)
    await carol.call("report win", score_a=3, score_b=0)
    await bob.call("dispute", match=older)
    then = datetime.now(UTC) - timedelta(hours=2, minutes=5, seconds=10)
    execute(site.db, "UPDATE matches SET disputed_at = ? WHERE id = ?",
            (then.strftime("%Y-%m-%dT%H:%M:%SZ"), older))
    await expect(desk).to_have_title("(2) Dispute — matchlobby")
    await desk.reload()  # the desk asks again
    await desk.wait_for_selector("body[data-loaded]", state="attached")
    old_item = desk.locator(f"#disputes li[data-match='{older}']")
    day = "" if then.date() == datetime.now(UTC).date() else then.strftime("%Y-%m-%d ")
    await expect(old_item.locator(".dispute-age")).to_have_text(
        f"waiting 2 h 5 min (since {day}{then.strftime('%H:%M')} UTC).")
    await no_overflow(desk, width)
    assert await axe_violations(desk) == []

    # the admin decides the first: alice's page lets it go, the title counts one
    decided = desk.locator(f"#disputes li[data-match='{first}']")
    await decided.get_by_role("button", name="bob wins", exact=True).click()
    await decided.get_by_role("button", name="Yes, bob wins").click()  # it asks first
    await expect(desk.locator("#disputes-feedback")).to_have_text(
        f"Match {first} decided: bob wins.")
    await expect(desk).to_have_title("(1) Dispute — matchlobby")
    await expect(mine).to_have_count(0)
    assert await axe_violations(page) == []


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_history_tells_the_story_of_each_change(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int,
        tmp_path: Path) -> None:
    admin = await site.admin()
    alice, bob = await site.players("alice", "bob")
    await site.player("carol")
    mid = await start_match(alice, bob, length=3)
    await alice.call("report win", score_a=3, score_b=1)
    await bob.next_push("result_claimed")
    await bob.call("confirm", match=mid)
    event = (await admin.call("event create", name="Brno Open", ladder="scrabble"))["id"]
    await admin.call("event result", new=True, event=event, side_a="alice", side_b="bob", score_a=412,
                     score_b=389)
    await admin.call("event result", new=True, event=event, side_a="carol", side_b="alice", score_a=350,
                     score_b=300)
    wrong = (await admin.call("event result", new=True, event=event, side_a="bob", side_b="carol",
                              score_a=400, score_b=300))["match"]
    await admin.call("void", match=wrong, reason="wrong table")
    closed = await admin.call("event close", event=event)
    history = (await admin.call("history", name="alice"))["entries"]

    page = await page_at(browser, site.http_url + "#player=alice", width, page_errors)
    await page.wait_for_selector("figure.history")
    for figure in await page.locator("figure.history details summary").all():
        await figure.click()
    live = page.locator(f"figure.history[data-ladder='backgammon'] tbody tr[data-match='{mid}']")
    await expect(live.locator("[data-key=against]")).to_have_text("bob")
    await expect(live.locator("[data-key=result]")).to_have_text("won 3–1")
    await expect(live.locator("[data-key=length]")).to_have_text("3 points")
    await expect(live.locator("[data-key=event]")).to_have_text("–")
    change = history[0]["change"]
    await expect(live.locator("[data-key=change]")).to_have_text(f"+{change:.2f}")
    told = page.locator(f"figure.history[data-ladder='scrabble'] tbody tr[data-event='{event}']")
    await expect(told.locator("[data-key=against]")).to_have_text("bob and carol")
    await expect(told.locator("[data-key=result]")).to_have_text("1 won, 1 lost")
    await expect(told.locator("[data-key=event]")).to_have_text(f"#{event} Brno Open")
    heads = await page.locator("figure.history[data-ladder='scrabble'] thead th").all_inner_texts()
    assert heads == ["When (UTC)", "Against", "Result", "Length", "Event", "Match", "Before",
                     "After", "Change"]
    await no_overflow(page, width)
    assert await axe_violations(page) == []

    # the exports carry the same story
    async with page.expect_download() as info:
        await page.locator("#profile .exports").get_by_role("button", name="CSV").click()
    rows = list(csv.DictReader(io.StringIO(await saved(await info.value, tmp_path))))
    assert [(r["ladder"], r["opponents"], r["result"], r["score"], r["score_against"],
             r["length"], r["event"], r["event_name"], r["rated"]) for r in rows] == [
        ("backgammon", "bob", "won", "3", "1", "3", "", "", "true"),
        ("scrabble", "bob+carol", "1 won, 1 lost", "", "", "", str(event), "Brno Open", "true")]
    async with page.expect_download() as info:
        await page.locator("#profile .exports").get_by_role("button", name="JSON").click()
    exported = json.loads(await saved(await info.value, tmp_path))
    assert exported == {"player": "alice", "entries": history}
    assert [(e["opponents"], e["result"], e["event"]) for e in exported["entries"]] == [
        (["bob"], "won", None), (["bob", "carol"], "1 won, 1 lost",
                                 {"id": event, "name": "Brno Open"})]

    # the closed event: its rating changes on view and in its export; the voided game unrated
    await page.select_option("#browse-event", str(event))
    body = page.locator("#browse-body")
    for c in closed["changes"]:
        shown = body.locator(f".changes-table tr[data-player='{c['player']}']")
        await expect(shown).to_have_attribute("data-after", str(c["after"]))
    await expect(body.locator(".changes-table caption")).to_have_text("Rating changes")
    await no_overflow(page, width)
    assert await axe_violations(page) == []
    async with page.expect_download() as info:
        await body.get_by_role("button", name="JSON").click()
    exported = json.loads(await saved(await info.value, tmp_path))
    assert {c["player"]: c["after"] for c in exported["changes"]} == {
        c["player"]: c["after"] for c in closed["changes"]}
    assert [(g["match"], g["status"], g["rated"]) for g in exported["games"]][-1] == (
        wrong, "voided", False)
