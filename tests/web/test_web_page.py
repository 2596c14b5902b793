"""The web page in a real headless Chromium, against a real server and real clients."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from playwright.async_api import Browser, Locator, Page, expect
from testkit.browser import log_in, open_page
from testkit.clients import name_of, play
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.results import HEADER
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")
MOVED = re.compile(r"\bmoved\b")


def row(page: Page, ladder: str, player: str) -> Locator:
    return page.locator(f"section[data-ladder='{ladder}'] tbody tr[data-player='{player}']")


async def chart_data(page: Page) -> dict[str, list[list[float]]]:
    """Each chart's uPlot data arrays, read from the instances the page exposes."""
    return await page.evaluate(
        "() => Object.fromEntries(Object.entries(window.matchlobby.charts)"
        ".map(([k, u]) => [k, u.data.map((a) => Array.from(a))]))")


async def test_spectator_sees_ladders_and_a_match_changes_the_table_live(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    first = await play(alice, bob, 3)
    page = await open_page(browser, site.http_url, errors=page_errors)

    rows = page.locator("section[data-ladder='backgammon'] tbody tr")
    await expect(rows).to_have_count(2)
    after = {c["player"]: c["after"] for c in first["changes"]}
    assert await rows.nth(0).locator("td").all_inner_texts() == [
        "1", f"{after['alice']:.2f}", "3", "1", "yes"]
    assert await rows.nth(1).get_attribute("data-player") == "bob"
    heads = {ladder: await page.locator(f"section[data-ladder='{ladder}'] thead th").all_inner_texts()
             for ladder in ("backgammon", "scrabble", "foosball-singles")}
    assert heads["backgammon"] == ["Rank", "Player", "Rating", "Experience", "Matches", "Active"]
    assert heads["scrabble"] == ["Rank", "Player", "Strength", "Paluba", "Dansa", "Peklo", "Games",
                                 "Active"]
    assert heads["foosball-singles"] == ["Rank", "Player", "Points", "Class", "Games", "Active"]

    await page.evaluate("window.noReload = true")
    finished = await play(bob, alice, 5)
    for change in finished["changes"]:
        r = row(page, "backgammon", change["player"])
        await expect(r.locator("td.rating")).to_have_text(f"{change['after']:.2f}")
        await expect(r).to_have_class(MOVED)
    await expect(row(page, "backgammon", "bob")).to_have_class(re.compile(r"\bup\b"))
    await expect(row(page, "backgammon", "alice")).to_have_class(re.compile(r"\bdown\b"))
    table = await alice.call("ladder", ladder="backgammon", all=True)
    assert [p["player"] for p in table["players"]] == ["bob", "alice"]
    await expect(rows.nth(0)).to_have_attribute("data-player", "bob")
    await expect(rows.nth(0).locator("td").nth(0)).to_have_text("1")
    assert await page.evaluate("window.noReload") is True
    # the highlight is temporary
    await expect(row(page, "backgammon", "bob")).not_to_have_class(MOVED, timeout=8000)


async def test_history_chart_has_one_point_per_rating_change(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    await play(alice, bob, 1)
    await play(bob, alice, 3)
    await play(alice, bob, 5)
    admin = await site.admin()
    event = await admin.call("event create", name="Club night", ladder="scrabble")
    await admin.call("event result", new=True, event=event["id"], side_a="alice", side_b="bob",
                     score_a=400, score_b=350)
    await admin.call("event close", event=event["id"])

    page = await open_page(browser, site.http_url + "#player=alice", errors=page_errors)
    await expect(page.locator("#profile-heading")).to_have_text("Player profile: alice")
    await page.wait_for_selector("figure.history[data-ladder='scrabble'] canvas")
    history = (await alice.call("history", name="alice"))["entries"]
    assert len(history) == 4

    def expected(ladder: str) -> list[list[float]]:
        """The ratings after each change, each placed at its time or later (matches seconds
        apart are spread along the axis, in their order)."""
        entries = [e for e in history if e["ladder"] == ladder]
        return [[datetime.fromisoformat(e["at"]).timestamp() for e in entries],
                [e["after"] for e in entries]]

    def placed(chart: list[list[float]], ladder: str) -> list[float]:
        times, ratings = expected(ladder)
        assert chart[1] == ratings
        assert chart[0][0] == times[0]
        assert all(x >= t for x, t in zip(chart[0], times, strict=True))
        assert chart[0] == sorted(set(chart[0]))
        return ratings

    def check_start(chart: list[list[float]], ladder: str) -> list[list[float]]:
        """The chart's first point is the starting rating, before the first change; the rest
        are the changes."""
        first = next(e for e in history if e["ladder"] == ladder)
        assert chart[1][0] == first["before"]
        assert chart[0][0] < chart[0][1]
        return [chart[0][1:], chart[1][1:]]

    data = await chart_data(page)
    assert set(data) == {"backgammon", "scrabble"}
    assert placed(check_start(data["backgammon"], "backgammon"), "backgammon")
    assert data["backgammon"][1][0] == 1500.0  # FIBS's starting rating
    assert len(data["backgammon"][0]) == 1 + 3
    # a ČAS newcomer has no rating before; the event's result is placed at its date, at noon
    assert data["scrabble"] == [[datetime.fromisoformat(f"{event['date']}T12:00:00+00:00")
                                 .timestamp()], expected("scrabble")[1]]
    figure = page.locator("figure.history[data-ladder='backgammon']")
    await expect(figure).to_have_attribute("data-points", "3")
    await expect(figure.locator("canvas")).to_have_count(1)
    whois = await alice.call("whois", name="alice")
    await expect(page.locator(".profile-facts")).to_contain_text(
        f"Matches: {whois['matches']['played']} played")
    bg = next(r for r in whois["ratings"] if r["ladder"] == "backgammon")
    await expect(page.locator(".ratings-table tbody tr").first).to_contain_text(f"{bg['rating']:.2f}")

    # another match while the profile is open: the chart grows by one point, without a reload
    await play(bob, alice, 1)
    await expect(figure).to_have_attribute("data-points", "4")
    data = await chart_data(page)
    history = (await alice.call("history", name="alice"))["entries"]
    assert placed(check_start(data["backgammon"], "backgammon"), "backgammon")


@pytest.mark.both_backends  # the page is the same on either database
async def test_admin_creates_imports_and_closes_an_event_from_the_page(
        site: LobbyServer, page: Page) -> None:
    watcher = await site.client()
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await page.get_by_role("link", name="Director's desk").click()
    await expect(page.locator("#admin")).to_be_visible()

    await page.fill("#event-create-form input[name=name]", "Brno Open")
    await page.select_option("#event-ladder", "scrabble")
    await page.click("#event-create-form button[type=submit]")
    # the feedback is next to the form the director used, not only at the top of the page
    await expect(page.locator("#event-create-form .feedback")).to_have_text(
        "Event #1 “Brno Open” is open on scrabble.")
    await expect(page.locator("#event-select")).to_have_value("1")

    form = page.locator("#event-result-form")
    for field, value in (("side_a", "alice"), ("side_b", "bob"), ("score_a", "412"),
                         ("score_b", "389")):
        await form.locator(f"input[name={field}]").fill(value)
    await form.locator("button[type=submit]").click()
    # names never seen on the ladder: asked first
    await form.locator(".new-confirm").get_by_role("button", name="Yes, add as a new player").click()
    await expect(form.locator(".feedback")).to_have_text(
        "Recorded in event #1: alice 412–389 bob. New on this ladder: alice, bob (check the "
        "spelling: a misspelt name becomes a new player).")
    await form.locator("input[name=side_a]").fill("alice")
    await form.locator("button[type=submit]").click()  # side B missing: the browser says so
    # ... and the last attempt's message goes: it is not this one's
    await expect(form.locator(".feedback")).to_be_empty()
    await expect(form.locator(".feedback")).to_be_hidden()
    await form.locator("input[name=side_b]").fill("alice")
    for field, value in (("score_a", "1"), ("score_b", "0")):
        await form.locator(f"input[name={field}]").fill(value)
    await form.locator("button[type=submit]").click()  # the server refuses: shown by the form
    await expect(form.locator(".feedback")).to_have_class(re.compile(r"\berror\b"))
    await expect(form.locator(".feedback")).to_contain_text("both sides")
    await form.locator("input[name=score_b]").fill("")
    await form.locator("button[type=submit]").click()  # refused by the browser: error gone
    await expect(form.locator(".feedback")).to_be_empty()
    assert len((await watcher.call("event show", event=1))["games"]) == 1

    csv = f"{HEADER}\nBrno Open,2026-03-14,carol,dave,350,371,,\nBrno Open,2026-03-14,alice,carol,398,402,,\n"
    await page.set_input_files("#import-file", files=[
        {"name": "results.csv", "mimeType": "text/csv", "buffer": csv.encode()}])
    await page.click("#event-import-form button[type=submit]")
    # names never seen on the ladder: the file is asked about first
    await page.locator("#event-import-form .new-confirm").get_by_role(
        "button", name="Yes, import with the new players").click()
    await expect(page.locator("#event-import-form .feedback")).to_have_text(
        "Imported 2 games into event #1. New on this ladder: carol, dave (check the spelling: "
        "a misspelt name becomes a new player).")
    await expect(page.locator("#event-select option")).to_have_text(
        re.compile(r"#1 Brno Open \(scrabble, .*, 3 games\)"))

    # the open event's results are listed; one removed, one corrected, before the close
    shown = await watcher.call("event show", event=1)
    games = page.locator("#event-games tbody tr")
    await expect(games).to_have_count(3)
    by_pair = {(g["side_a"], g["side_b"]): g["match"] for g in shown["games"]}
    wrong, mistaken = by_pair[("carol", "dave")], by_pair[("alice", "bob")]
    await page.get_by_role("button", name=f"Remove {mistaken}").click()
    editor = page.locator(f"#game-editor form[data-match='{mistaken}']")
    await editor.locator("input[name=reason]").fill("entered twice")
    await editor.get_by_role("button", name="Remove it").click()
    await expect(page.locator("#desk-feedback")).to_have_text(
        f"Removed result {mistaken} (alice 412–389 bob) from event #1.")
    await expect(page.locator(f"#event-games tr[data-match='{mistaken}']")).to_have_attribute(
        "data-status", "voided")
    await page.get_by_role("button", name=f"Correct {wrong}").click()
    editor = page.locator(f"#game-editor form[data-match='{wrong}']")
    await expect(editor.locator("input[name=score_a]")).to_have_value("350")
    await editor.locator("input[name=score_a]").fill("380")
    await editor.get_by_role("button", name="Save the correction").click()
    await expect(page.locator("#desk-feedback")).to_contain_text(
        f"Corrected result {wrong}: now carol 380–371 dave")
    shown = await watcher.call("event show", event=1)
    status = {(g["side_a"], g["score_a"], g["side_b"], g["score_b"]): g["status"]
              for g in shown["games"]}
    assert status == {("alice", 412, "bob", 389): "voided", ("carol", 350, "dave", 371): "voided",
                      ("alice", 398, "carol", 402): "finished",
                      ("carol", 380, "dave", 371): "finished"}
    await expect(games).to_have_count(4)

    # closing asks first and says what will be rated; Cancel closes nothing
    await page.click("#event-close")
    confirm = page.locator("#close-confirm")
    await expect(confirm).to_contain_text(
        "Closing #1 Brno Open rates 2 games on scrabble for 3 players: alice, carol, dave.")
    await expect(confirm).to_contain_text("2 games voided or unrated will not count.")
    await confirm.get_by_role("button", name="Cancel").click()
    await expect(confirm).to_be_empty()
    assert (await watcher.call("events", status="open"))["events"][0]["id"] == 1
    await page.click("#event-close")
    await confirm.get_by_role("button", name="Yes, close #1 and rate it").click()
    await expect(page.locator("#desk-feedback")).to_have_text("Event #1 closed; scrabble is rated.")
    await expect(page.locator("#event-log li")).to_have_count(3)
    await expect(page.locator("#event-log li[data-played='true']")).to_have_count(3)
    # newcomers read as such, and nothing stray is left where no explanation is needed
    for name in ("alice", "carol", "dave"):
        entry = (await watcher.call("history", name=name, ladder="scrabble"))["entries"][-1]
        assert entry["before"] is None
        await expect(page.locator(f"#event-log li[data-player='{name}']")).to_have_text(
            f"{name}: new, {entry['after']} played")
    await expect(page.locator("#event-log")).not_to_contain_text("null")
    await expect(page.locator("#event-close")).to_be_disabled()

    table = await watcher.call("ladder", ladder="scrabble", all=True)
    assert len(table["players"]) == 3
    rows = page.locator("section[data-ladder='scrabble'] tbody tr")
    await expect(rows).to_have_count(3)
    for i, p in enumerate(table["players"]):
        r = rows.nth(i)
        await expect(r).to_have_attribute("data-player", p["player"])
        await expect(r).to_have_class(MOVED)
        assert await r.locator("td").all_inner_texts() == [
            str(p["rank"]), str(p["rating"]), str(p["paluba"]), str(p["dansa"]),
            f"{p['peklo']:.1f}", str(p["games"]), "yes"]
    events = await watcher.call("events", status="closed")
    assert [(e["id"], e["games"]) for e in events["events"]] == [(1, 2)]


async def test_server_errors_are_shown_on_the_page(site: LobbyServer, page: Page) -> None:
    status = page.locator("#status")
    await page.fill("#search-name", "nobody")
    await page.press("#search-name", "Enter")
    await expect(status).to_have_text("No player named 'nobody'.")
    await expect(status).to_have_class(re.compile(r"\berror\b"))
    await expect(status).to_have_attribute("aria-live", "polite")

    await page.fill("#login-name", ADMIN)
    await page.fill("#login-password", "not-the-password")
    await page.click("#login-form button[value=login]")
    await expect(status).to_have_text("Wrong name or password.")
    await expect(page.locator("#signed-in")).to_be_hidden()

    await log_in(page, "eve", PASSWORD, register=True)
    await page.fill("#invite-name", "ghost")
    await page.click("#invite-form button[type=submit]")
    await expect(status).to_have_text("No player named 'ghost'.")
    await expect(page.locator("#admin")).to_be_hidden()


@pytest.mark.both_backends  # the page is the same on either database
async def test_a_player_invites_plays_and_answers_claims_from_the_page(
        site: LobbyServer, page: Page) -> None:
    await log_in(page, "alice", PASSWORD, register=True)
    await expect(page.locator("#play")).to_be_visible()
    bob = await site.player("bob")  # the page hears presence and lists bob
    invite_bob = page.get_by_role("button", name="Invite bob")
    await expect(invite_bob).to_be_visible()
    await expect(page.locator("#online")).to_contain_text("alice")

    # 1: alice invites from the page, bob joins, alice resigns on the page
    await invite_bob.click()
    await expect(page.locator("#invite-ladder")).to_be_focused()
    await page.fill("#invite-length", "3")
    await page.click("#invite-form button[type=submit]")
    invited = await bob.next_push("invited")
    data = invited["data"]  # with its expiry and its stake (tests/server/test_stakes.py)
    assert {k: data[k] for k in ("from", "ladder", "length")} == {
        "from": "alice", "ladder": "backgammon", "length": 3}
    started = await bob.call("join", name="alice")
    panel = page.locator("#match-panel")
    await expect(panel).to_contain_text(f"Match {started['match']}: alice vs bob on backgammon, 3 points")
    await panel.get_by_role("button", name="Resign…").click()
    await panel.get_by_role("button", name="Yes, resign").click()  # it asks first
    finished = (await bob.next_push("match_finished"))["data"]
    assert finished["winner"] == "bob"
    result = page.locator("#last-result")
    await expect(result).to_contain_text(f"Match {finished['match']} finished")
    await expect(result.locator("p")).to_have_text("bob won on backgammon, 3 points: alice resigned.")
    for c in finished["changes"]:
        item = result.locator(f"li[data-player='{c['player']}']")
        await expect(item).to_have_attribute("data-after", str(c["after"]))
        await expect(item).to_contain_text(f"→ {c['after']:.2f}")
    await expect(panel).to_be_empty()

    # 2: bob invites, alice joins on the page, bob reports a win, alice confirms on the page
    await bob.call("invite", name="alice", ladder="backgammon")
    await page.get_by_role("button", name="Join bob").click()
    second = (await bob.next_push("match_started"))["data"]
    await expect(panel).to_contain_text(f"Match {second['match']}: bob vs alice")
    await bob.call("report win")
    await panel.get_by_role("button", name="Confirm their win").click()
    finished = (await bob.next_push("match_finished"))["data"]
    assert (finished["match"], finished["how"], finished["winner"]) == (second["match"], "confirm", "bob")
    alice_after = next(c["after"] for c in finished["changes"] if c["player"] == "alice")
    await expect(result.locator("p")).to_contain_text("bob won on backgammon, ")
    await expect(result.locator("p")).to_contain_text(": alice confirmed it.")
    await expect(result.locator("li[data-player='alice']")).to_have_attribute("data-after", str(alice_after))
    await expect(row(page, "backgammon", "alice").locator("td.rating")).to_have_text(f"{alice_after:.2f}")

    # 3: an invitation declined, then a claim disputed on the page
    await bob.call("invite", name="alice", ladder="backgammon")
    await page.get_by_role("button", name="Decline bob").click()
    assert (await bob.next_push("declined"))["data"] == {"by": "alice"}
    await bob.call("invite", name="alice", ladder="backgammon")
    await page.get_by_role("button", name="Join bob").click()
    third = (await bob.next_push("match_started"))["data"]
    await bob.call("report win")
    await panel.get_by_role("button", name="Dispute").click()
    disputed = (await bob.next_push("result_disputed"))["data"]
    assert disputed == {"match": third["match"], "status": "disputed", "by": "alice",
                        "since": disputed["since"]}
    await expect(page.locator("#my-disputes .dispute-state")).to_have_text(
        f"Match {third['match']} (bob vs alice on backgammon) is disputed by you. An admin will "
        "decide it, by giving the win to one of you or by voiding the match. You are free to "
        "play other matches meanwhile.")
    await expect(panel).to_be_empty()

    # 4: alice reports a win on the page; bob confirms; the page shows the change it receives
    admin = await site.admin()
    await admin.call("void", match=third["match"], reason="test")
    await expect(page.locator("#my-disputes li")).to_have_count(0)
    await page.fill("#invite-name", "bob")
    await page.fill("#invite-length", "1")
    await page.click("#invite-form button[type=submit]")
    await bob.next_push("invited")
    fourth = await bob.call("join", name="alice")
    await expect(panel).to_contain_text(f"Match {fourth['match']}")
    await page.fill("#score-mine", "1")
    await page.fill("#score-theirs", "0")
    await panel.get_by_role("button", name="Report a win").click()
    claim = (await bob.next_push("result_claimed"))["data"]
    assert claim["by"] == "alice" and claim["scores"] == [1, 0]
    done = await bob.call("confirm", match=fourth["match"])
    assert done["winner"] == "alice"
    mine = next(c for c in done["changes"] if c["player"] == "alice")
    await expect(page.locator("#status")).to_have_text(
        f"Match {fourth['match']}: alice won. Your rating: {mine['after']:.2f} (+{mine['change']:.2f}).")


async def test_keyboard_only_login_and_profile(site: LobbyServer, page: Page) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    await play(alice, bob, 1)
    await expect(row(page, "backgammon", "bob")).to_have_count(1)

    # Tab from the top: skip link, name, password; Enter logs in
    await page.keyboard.press("Tab")
    await expect(page.locator("#skip-ladders")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.locator("#login-name")).to_be_focused()
    await page.keyboard.type(ADMIN)
    await page.keyboard.press("Tab")
    await page.keyboard.type(ADMIN_PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.locator("#me-name")).to_have_text(ADMIN)
    await expect(page.locator("#play-heading")).to_be_focused()  # where a player goes next

    # back (Shift+Tab) to bob's name in the ladder (focus is visible); Enter opens the profile
    link = row(page, "backgammon", "bob").locator("a")
    for _ in range(30):
        if await link.evaluate("a => a === document.activeElement"):
            break
        await page.keyboard.press("Shift+Tab")
    await expect(link).to_be_focused()
    outline = await link.evaluate("a => getComputedStyle(a).outlineStyle")
    assert outline not in ("", "none")
    await page.keyboard.press("Enter")
    await expect(page.locator("#profile-heading")).to_be_focused()
    await expect(page.locator("#profile-heading")).to_have_text("Player profile: bob")
    await expect(page.locator("figure.history[data-ladder='backgammon']")).to_have_attribute(
        "data-points", "1")

    # the next stop is the search box: type a name, Enter
    await page.keyboard.press("Tab")
    await expect(page.locator("#search-name")).to_be_focused()
    await page.keyboard.type("alice")
    await page.keyboard.press("Enter")
    await expect(page.locator("#profile-heading")).to_have_text("Player profile: alice")


async def test_phone_width_has_no_horizontal_overflow(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    admin = await site.admin()
    event = await admin.call("event create", name="A rather long event name", ladder="scrabble")
    await admin.call("event import", new=True, event=event["id"], csv=(
        f"{HEADER}\nA rather long event name,2026-03-14,Maximilian_Longname,bob,412,389,,\n"
        "A rather long event name,2026-03-14,carol,dave,350,371,,\n"))
    await admin.call("event close", event=event["id"])
    await admin.call("event create", name="Another event with a long name, still open",
                     ladder="foosball-doubles")
    page = await open_page(browser, site.http_url + "#player=Maximilian_Longname", width=375,
                           height=740, errors=page_errors)
    await page.wait_for_selector("figure.history canvas")
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await fits(page, 375)
    cas = page.locator("section[data-ladder='scrabble'] .table-wrap")
    assert await cas.evaluate("w => w.scrollWidth > w.clientWidth")  # the table scrolls inside
    await page.get_by_role("link", name="Director's desk").click()
    await expect(page.locator("#admin")).to_be_visible()
    await fits(page, 375)


async def fits(page: Page, width: int) -> None:
    """No part of the view shown is wider than the screen."""
    sizes = await page.evaluate("""() => ({
        doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,
        view: window.innerWidth,
        wraps: [...document.querySelectorAll('.table-wrap, canvas, form')]
            .filter((e) => e.offsetParent !== null).map((e) => e.getBoundingClientRect().right),
    })""")
    assert sizes["view"] == width
    assert sizes["doc"] <= width and sizes["body"] <= width, sizes
    assert max(sizes["wraps"]) <= width, sizes


async def test_page_reconnects_and_logs_in_again(site: LobbyServer, page: Page) -> None:
    await log_in(page, "alice", PASSWORD, register=True)
    await site.restart()
    await expect(page.locator("#connection")).to_have_text(re.compile("Connected"), timeout=10000)
    await expect(page.locator("#status")).to_have_text("Reconnected.")
    await expect(page.locator("#me-name")).to_have_text("alice")
    alice = await site.client()
    await alice.login("alice", PASSWORD)  # replaces the page's session: it is told why
    await expect(page.locator("#status")).to_contain_text("You logged in from another connection")
    await expect(page.locator("#login-form")).to_be_visible()
    bob, carol = await site.player("bob"), await site.player("carol")
    finished = await play(bob, carol)
    after = next(c["after"] for c in finished["changes"] if c["player"] == "bob")
    await expect(row(page, "backgammon", "bob").locator("td.rating")).to_have_text(f"{after:.2f}")
    assert name_of(bob) == "bob"
