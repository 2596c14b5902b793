"""The director's desk as a view of its own (#desk), at a laptop's width and a phone's: its
room, what it asks before it acts, where its messages and the keyboard focus go, a typo
that is not a new player (in a result or an imported file); the rating charts' time axis;
axe-core on every view."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from testkit.axe import axe_violations
from testkit.browser import log_in, open_page
from testkit.clients import play, start_match
from testkit.constants import ADMIN, ADMIN_PASSWORD
from testkit.results import HEADER
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")
WIDTHS = [1280, 390]


async def desk(site: LobbyServer, browser: Browser, errors: list[str], width: int) -> Page:
    """The admin's page at ``width``, on the desk (reached by its link)."""
    page = await open_page(browser, site.http_url, width=width, height=900, errors=errors)
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await page.get_by_role("link", name="Director's desk").click()
    await expect(page.locator("#admin")).to_be_visible()
    return page


async def focused(page: Page) -> dict[str, Any]:
    return await page.evaluate("() => ({tag: document.activeElement.tagName, "
                               "id: document.activeElement.id, "
                               "text: document.activeElement.textContent})")


async def box(page: Page, selector: str) -> dict[str, float]:
    found = await page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return found


async def no_overflow(page: Page, width: int) -> None:
    sizes = await page.evaluate("() => [document.documentElement.scrollWidth, "
                                "document.body.scrollWidth]")
    assert max(sizes) <= width, sizes


async def club_night(site: LobbyServer) -> int:
    admin = await site.admin()
    event = (await admin.call("event create", name="Club night", ladder="scrabble"))["id"]
    await admin.call("event import", new=True, event=event, csv=HEADER + "\n" + "".join(
        f"Club night,2026-03-14,{a},{b},{sa},{sb},,\n" for a, b, sa, sb in (
            ("alice", "bob", 412, 389), ("carol", "dave", 350, 371), ("alice", "carol", 398, 402))))
    await admin.close()
    return int(event)


@pytest.mark.parametrize("width", WIDTHS)
async def test_the_desk_is_a_view_of_its_own_with_the_results_beside_the_forms(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    event = await club_night(site)
    page = await desk(site, browser, page_errors, width)
    assert page.url.endswith("#desk")
    await expect(page.locator("#lobby-view")).to_be_hidden()
    await expect(page.get_by_role("link", name="Director's desk")).to_have_attribute(
        "aria-current", "page")
    await expect(page.locator("#event-result-form h3")).to_have_text(
        f"Enter a result in #{event} Club night")
    table = page.locator("#event-games table")
    await expect(table.locator("tbody tr")).to_have_count(3)
    await expect(table.locator("thead th")).to_have_text(
        ["Match", "Date", "Side A", "Side B", "Score", "Length", "Rated", "Actions"])
    await expect(page.locator("#desk-disputes h3")).to_have_text("Disputes")
    form = await box(page, "#event-result-form")
    results = await box(page, "#event-games .table-wrap")
    if width >= 960:  # the forms and the results side by side, near the top
        assert form["y"] < 500, form
        assert results["x"] >= form["x"] + form["width"], (form, results)
        assert results["width"] > form["width"], (form, results)
        assert abs(results["y"] - form["y"]) < 150, (form, results)
    else:
        assert results["width"] <= width
    await no_overflow(page, width)
    # the lobby is one link away, and a player's name there opens their profile
    await page.get_by_role("link", name="Lobby").click()
    await expect(page.locator("#lobby-view")).to_be_visible()
    await expect(page.locator("#admin")).to_be_hidden()


@pytest.mark.parametrize("width", WIDTHS)
async def test_a_new_name_is_asked_about_and_a_mistaken_player_removed(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    event = await club_night(site)
    page = await desk(site, browser, page_errors, width)
    form = page.locator("#event-result-form")
    for field, value in (("side_a", "alice"), ("side_b", "bbo"), ("score_a", "400"),
                         ("score_b", "300")):
        await form.locator(f"input[name={field}]").fill(value)
    await form.locator("button[type=submit]").click()
    ask = form.locator(".new-confirm")
    await expect(ask).to_contain_text(
        "bbo has never played on scrabble: check the spelling, or confirm bbo as a new player.")
    await ask.get_by_role("button", name="Cancel").click()  # a typo: nothing recorded
    await expect(ask).to_be_empty()
    assert (await focused(page))["tag"] == "INPUT"
    await expect(page.locator("#event-games tbody tr")).to_have_count(3)
    await form.locator("button[type=submit]").click()
    await ask.get_by_role("button", name="Yes, add as a new player").click()
    await expect(form.locator(".feedback")).to_contain_text(
        f"Recorded in event #{event}: alice 400–300 bbo. New on this ladder: bbo")
    assert (await focused(page))["tag"] == "INPUT"
    # typing the next result: the last one's message goes
    await form.locator("input[name=side_a]").fill("carol")
    await expect(form.locator(".feedback")).to_be_empty()

    # bbo was a mistake after all: the result removed, then the name
    row = page.locator("#event-games tbody tr", has_text="bbo")
    match = await row.get_attribute("data-match")
    await page.get_by_role("button", name=f"Remove {match}", exact=True).click()
    editor = page.locator(f"#game-editor form[data-match='{match}']")
    await editor.locator("input[name=reason]").fill("misspelt")
    await editor.get_by_role("button", name="Remove it").click()
    await expect(page.locator("#desk-feedback")).to_contain_text(f"Removed result {match}")
    assert (await focused(page))["id"] == "event-games-heading"
    remove = page.locator("#player-remove-form")
    await remove.locator("input[name=name]").fill("bbo")
    await remove.get_by_role("button", name="Remove player…").click()
    await remove.get_by_role("button", name="Yes, remove bbo").click()
    await expect(remove.locator(".feedback")).to_have_text("Removed bbo.")
    assert (await focused(page))["tag"] == "INPUT"
    await remove.locator("input[name=name]").fill("alice")  # she has results: refused
    await remove.get_by_role("button", name="Remove player…").click()
    await remove.get_by_role("button", name="Yes, remove alice").click()
    await expect(remove.locator(".feedback")).to_have_text(
        "alice still has 2 results; remove (void) them first.")
    assert (await focused(page))["tag"] != "BODY"
    await expect(remove.locator(".feedback")).to_be_in_viewport()
    reader = await site.client()
    assert (await reader.call("whois", name="alice"))["player"] == "alice"
    assert "bbo" not in {g["side_b"] for g in (await reader.call(
        "event show", event=event))["games"] if g["status"] == "finished"}

    # a correction naming someone new asks too (the wrong result is removed meanwhile)
    row = page.locator("#event-games tbody tr", has_text="dave")
    match = await row.get_attribute("data-match")
    await page.get_by_role("button", name=f"Correct {match}", exact=True).click()
    editor = page.locator(f"#game-editor form[data-match='{match}']")
    await editor.locator("input[name=side_b]").fill("erik")
    await editor.get_by_role("button", name="Save the correction").click()
    await expect(page.locator("#desk-feedback")).to_contain_text(
        f"Removed result {match} (carol 350–371 dave) from event #{event}. The correction is "
        "not entered yet.")
    await page.locator("#game-editor").get_by_role(
        "button", name="Yes, add as a new player").click()
    await expect(page.locator("#desk-feedback")).to_contain_text(
        f"Corrected result {match}: now carol 350–371 erik")
    assert (await focused(page))["id"] == "event-games-heading"


@pytest.mark.parametrize("width", WIDTHS)
async def test_messages_sit_by_their_button_and_go_when_the_event_changes(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    first = await club_night(site)
    admin = await site.admin()
    second = (await admin.call("event create", name="Cup final", ladder="scrabble"))["id"]
    page = await desk(site, browser, page_errors, width)
    await page.select_option("#event-select", str(first))
    await expect(page.locator("#event-import-form h3")).to_have_text(
        f"Import a results file into #{first} Club night")
    # an import error: next to the Import button, in view
    bad = f"{HEADER}\nAnother event,2026-03-14,alice,bob,1,0,,\n"
    await page.set_input_files("#import-file", files=[
        {"name": "results.csv", "mimeType": "text/csv", "buffer": bad.encode()}])
    await page.click("#event-import-form button[type=submit]")
    feedback = page.locator("#event-import-form .feedback")
    await expect(feedback).to_contain_text("CSV:2: the row is for event 'Another event'")
    await expect(feedback).to_be_in_viewport()
    button = await box(page, "#event-import-form button[type=submit]")
    said = await box(page, "#event-import-form .feedback")
    assert 0 <= said["y"] - (button["y"] + button["height"]) < 60, (button, said)
    # another event chosen: the message was about the first one
    await page.select_option("#event-select", str(second))
    await expect(feedback).to_be_empty()
    await expect(page.locator("#event-result-form h3")).to_have_text(
        f"Enter a result in #{second} Cup final")

    # closing: the summary by the Close button, in view, and the focus on it
    await page.select_option("#event-select", str(first))
    await page.click("#event-close")
    await page.get_by_role("button", name=f"Yes, close #{first} and rate it").click()
    summary = page.locator("#event-log")
    await expect(summary.locator("h3")).to_have_text(f"Event #{first} “Club night” closed")
    assert (await focused(page))["id"] == "close-summary-heading"
    await expect(summary.locator("h3")).to_be_in_viewport()
    close = await box(page, "#event-close")
    heading = await box(page, "#event-log h3")
    assert 0 <= heading["y"] - close["y"] < 200, (close, heading)
    await no_overflow(page, width)


@pytest.mark.parametrize("width", WIDTHS)
async def test_an_import_naming_someone_new_asks_first_and_imports_after_yes(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    event = await club_night(site)
    page = await desk(site, browser, page_errors, width)
    await expect(page.locator("#event-games tbody tr")).to_have_count(3)
    form = page.locator("#event-import-form")
    text = (f"{HEADER}\nClub night,2026-03-14,alice,eve,401,380,,\n"
            "Club night,2026-03-14,frank,bob,300,333,,\n")
    await page.set_input_files("#import-file", files=[
        {"name": "results.csv", "mimeType": "text/csv", "buffer": text.encode()}])
    await form.get_by_role("button", name="Import").click()
    ask = form.locator(".new-confirm")
    await expect(ask).to_contain_text(
        "eve and frank have never played on scrabble: check the spelling, or confirm them as "
        "new players.")
    yes = ask.get_by_role("button", name="Yes, import with the new players")
    await expect(yes).to_be_focused()
    await expect(yes).to_be_in_viewport()
    # the question sits next to the Import button
    button = await box(page, "#event-import-form button[type=submit]")
    asked = await box(page, "#event-import-form .new-confirm")
    assert 0 <= button["y"] - (asked["y"] + asked["height"]) < 60, (asked, button)
    await ask.get_by_role("button", name="Cancel").click()  # a typo: nothing imported
    await expect(ask).to_be_empty()
    assert (await focused(page))["id"] == "import-file"
    await expect(page.locator("#event-games tbody tr")).to_have_count(3)
    await expect(form.locator(".feedback")).to_be_empty()
    reader = await site.client()
    assert len((await reader.call("event show", event=event))["games"]) == 3
    # asked again, and this time they are new players
    await form.get_by_role("button", name="Import").click()
    await yes.click()
    await expect(form.locator(".feedback")).to_have_text(
        f"Imported 2 games into event #{event}. New on this ladder: eve, frank (check the "
        "spelling: a misspelt name becomes a new player).")
    await expect(ask).to_be_empty()
    await expect(page.locator("#event-games tbody tr")).to_have_count(5)
    assert (await focused(page))["tag"] != "BODY"
    assert (await reader.call("whois", name="frank"))["player"] == "frank"
    await no_overflow(page, width)


@pytest.mark.parametrize("width", WIDTHS)
async def test_decisions_on_disputes_ask_first_and_keep_the_focus_on_the_desk(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    bob, carol = await site.player("bob"), await site.player("carol")
    first = await start_match(bob, carol, length=3)
    await bob.call("report win", score_a=3, score_b=1)
    await carol.call("dispute", match=first)
    page = await desk(site, browser, page_errors, width)
    item = page.locator(f"#disputes li[data-match='{first}']")
    await item.get_by_role("button", name="carol wins", exact=True).click()
    ask = item.locator(".confirm")
    await expect(ask).to_contain_text(f"Give match {first} to carol?")
    await ask.get_by_role("button", name="Cancel").click()  # nothing decided
    assert (await focused(page))["text"] == "carol wins"
    assert [m["match"] for m in (await bob.call("whois", name="bob"))["disputes"]] == [first]
    await item.get_by_role("button", name="carol wins", exact=True).click()
    await ask.get_by_role("button", name="Yes, carol wins").click()
    said = page.locator("#disputes-feedback")
    await expect(said).to_have_text(f"Match {first} decided: carol wins.")
    assert (await focused(page))["id"] == "disputes-heading"
    await expect(said).to_be_in_viewport()

    second = await start_match(bob, carol, length=3)
    await bob.call("report win", score_a=3, score_b=0)
    await carol.call("dispute", match=second)
    item = page.locator(f"#disputes li[data-match='{second}']")
    await item.locator("input[name=reason]").fill("dice app crashed")
    await item.get_by_role("button", name="Void…", exact=True).click()
    await expect(item.locator(".confirm")).to_contain_text(f"Void match {second}?")
    await item.get_by_role("button", name=f"Yes, void match {second}").click()
    await expect(said).to_have_text(f"Match {second} voided: dice app crashed.")
    assert (await focused(page))["id"] == "disputes-heading"
    await expect(page.locator("#disputes li")).to_have_count(0)


async def chart_points(page: Page, ladder: str) -> list[tuple[float, float]]:
    """The chart's points: each x (seconds) and its pixel position."""
    return [tuple(p) for p in await page.evaluate("""(ladder) => {
        const u = window.matchlobby.charts[ladder];
        return Array.from(u.data[0]).map((x) => [x, u.valToPos(x, "x")]);
    }""", ladder)]


@pytest.mark.parametrize("width", WIDTHS)
async def test_charts_place_events_at_their_date_and_spread_quick_matches(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    admin = await site.admin()
    event = (await admin.call("event create", name="Spring", ladder="scrabble",
                              date="2026-03-07"))["id"]
    await admin.call("event import", new=True, event=event, csv=HEADER + "\n"
                     "Spring,2026-03-07,alice,bob,412,389,,\n")
    await admin.call("event close", event=event)
    for _ in range(12):  # a dozen matches within a few seconds
        await play(alice, bob)
    page = await open_page(browser, site.http_url + "#player=alice", width=width,
                           errors=page_errors)
    await page.wait_for_selector("figure.history[data-ladder='backgammon'] canvas")
    scrabble = await chart_points(page, "scrabble")
    assert scrabble[-1][0] == 1_772_884_800  # 2026-03-07, noon UTC
    quick = await chart_points(page, "backgammon")
    assert len(quick) == 13  # the starting rating and twelve results
    gaps = [b[1] - a[1] for a, b in itertools.pairwise(quick[1:])]  # the results
    plot = await page.evaluate("() => window.matchlobby.charts.backgammon.bbox.width "
                               "/ devicePixelRatio")
    assert min(gaps) >= plot / 50, (gaps, plot)  # a line across the chart, not a stack


@pytest.mark.parametrize("width", WIDTHS)
async def test_axe_finds_nothing_on_the_lobby_or_the_desk(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    event = await club_night(site)
    admin = await site.admin()
    await admin.call("event close", event=event)
    await admin.call("event create", name="Open night", ladder="scrabble")
    await play(alice, bob)
    mid = await start_match(alice, bob, length=3)
    await alice.call("report win", score_a=3, score_b=0)
    await bob.call("dispute", match=mid)
    page = await open_page(browser, site.http_url + "#player=alice", width=width,
                           errors=page_errors)
    await page.wait_for_selector("section[data-ladder='scrabble'] tbody tr")
    await page.wait_for_selector("figure.history canvas")
    await page.select_option("#browse-event", str(event))
    await page.wait_for_selector("#browse-body table")
    assert await axe_violations(page) == []  # the lobby, as anyone sees it
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    erik = await site.player("erik")
    await erik.call("invite", name=ADMIN, ladder="backgammon", length=3)
    await page.wait_for_selector("#invitations .stake")
    assert await axe_violations(page) == []  # with the play panel and an invitation
    await page.get_by_role("link", name="Director's desk").click()
    await page.wait_for_selector(f"#disputes li[data-match='{mid}']")
    await page.wait_for_selector("#event-games")
    await page.locator(f"#disputes li[data-match='{mid}']").get_by_role(
        "button", name="alice wins", exact=True).click()
    assert await axe_violations(page) == []  # the desk, a confirmation open
    assert re.search(r"#desk$", page.url)
