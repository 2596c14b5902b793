"""Reading the page: strengths explained, charts and tables at phone width, registering with
the password twice, and the keyboard (focus after login, skip links, no empty Tab stops)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from testkit.browser import log_in, open_page
from testkit.clients import expect_error, play
from testkit.constants import ADMIN, ADMIN_PASSWORD, PASSWORD
from testkit.db import spread_history
from testkit.results import HEADER
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")
PHONE = 390

# Each chart's axis labels as drawn: their text, where uPlot put them and how wide the text
# is in the axis's own font (labels are painted on the canvas, so measured, not queried).
AXIS_LABELS = """() => {
  const ctx = document.createElement("canvas").getContext("2d");
  return Object.entries(window.matchlobby.charts).map(([ladder, u]) => ({
    ladder,
    width: u.width,
    axes: u.axes.map((axis, i) => {
      ctx.font = Array.isArray(axis.font) ? axis.font[0] : axis.font;
      const scale = i === 0 ? "x" : "y";
      return (axis._values || []).map((text, j) => ({
        text,
        at: u.valToPos(axis._splits[j], scale),
        width: Math.max(...String(text).split("\\n").map((line) => ctx.measureText(line).width)),
        height: parseFloat(ctx.font) * String(text).split("\\n").length,
      }));
    }),
    ySize: u.axes[1]._size,
  }));
}"""


def overlaps(labels: list[dict[str, Any]], extent: str) -> list[tuple[str, str]]:
    """Neighbouring labels whose boxes (centred where uPlot draws them) overlap."""
    boxes = sorted((lab["at"] - lab[extent] / 2, lab["at"] + lab[extent] / 2, lab["text"])
                   for lab in labels if lab["text"] != "")
    return [(a[2], b[2]) for a, b in itertools.pairwise(boxes) if a[1] > b[0]]


async def seeded_lobby(site: LobbyServer) -> None:
    """Live matches over weeks (the history's times spread), a ČAS event with long names."""
    names = ["alice", "bob", "carol", "dave"]
    players = {n: await site.player(n) for n in names}
    for w, lost, n in (("alice", "bob", 5), ("carol", "dave", 3), ("alice", "carol", 7),
                    ("dave", "alice", 5), ("bob", "carol", 3), ("alice", "dave", 9),
                    ("bob", "alice", 1), ("alice", "bob", 3)):
        await play(players[w], players[lost], n)
    admin = await site.admin()
    event = await admin.call("event create", name="A rather long event name", ladder="scrabble")
    await admin.call("event import", new=True, event=event["id"], csv=(
        f"{HEADER}\nA rather long event name,2026-03-14,Maximilian_Longname,alice,412,389,,\n"
        "A rather long event name,2026-03-14,carol,dave,350,371,,\n"))
    await admin.call("event close", event=event["id"])
    await site.aclose()
    spread_history(site.db, hours=53)
    site.clients.clear()
    await site.start()


@pytest.mark.parametrize("width", [PHONE, 1280])
async def test_chart_starts_at_the_starting_rating_and_its_labels_do_not_overlap(
        site: LobbyServer, browser: Browser, page_errors: list[str], width: int) -> None:
    await seeded_lobby(site)
    page = await open_page(browser, site.http_url + "#player=alice", width=width, height=800,
                           errors=page_errors)
    await page.wait_for_selector("figure.history[data-ladder='backgammon'] canvas")
    await page.wait_for_selector("figure.history[data-ladder='scrabble'] canvas")
    charts = {c["ladder"]: c for c in await page.evaluate(AXIS_LABELS)}
    assert set(charts) == {"backgammon", "scrabble"}
    for ladder, chart in charts.items():
        x_labels, y_labels = chart["axes"]
        assert len(x_labels) >= 2 and len(y_labels) >= 2, (ladder, chart)
        assert overlaps(x_labels, "width") == [], (ladder, width, x_labels)
        assert overlaps(y_labels, "height") == [], (ladder, width, y_labels)
        assert max(lab["width"] for lab in y_labels) <= chart["ySize"], (ladder, y_labels)
    data = await page.evaluate("() => Array.from(window.matchlobby.charts.backgammon.data[1])")
    assert data[0] == 1500.0  # the first point: FIBS's starting rating, before any match
    sizes = await page.evaluate("""() => ({doc: document.documentElement.scrollWidth,
        canvases: [...document.querySelectorAll('canvas')].map((c) => c.getBoundingClientRect().right)})""")
    assert sizes["doc"] <= width and max(sizes["canvases"]) <= width, sizes


# Each chart's x axis as drawn (ticks, labels and their measured widths) and its scale.
X_AXES = """() => {
  const ctx = document.createElement("canvas").getContext("2d");
  return Object.fromEntries(Object.entries(window.matchlobby.charts).map(([ladder, u]) => {
    const axis = u.axes[0];
    ctx.font = Array.isArray(axis.font) ? axis.font[0] : axis.font;
    return [ladder, {
      xs: Array.from(u.data[0]),
      span: u.scales.x.max - u.scales.x.min,
      labels: (axis._values || []).map((text, j) => ({
        text: String(text),
        split: axis._splits[j],
        at: u.valToPos(axis._splits[j], "x"),
        width: Math.max(...String(text).split("\\n").map((line) => ctx.measureText(line).width)),
      })),
    }];
  }));
}"""


async def test_a_chart_of_matches_minutes_apart_reads_in_utc_with_room_between_labels(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    """Matches seconds apart, a browser whose local time is not UTC: the time axis is in UTC
    (24-hour), its labels keep a gap, the starting rating sits just before the first change,
    and a chart of one point spans minutes, not days."""
    alice, bob = await site.player("alice"), await site.player("bob")
    for winner, loser in ((alice, bob), (bob, alice), (alice, bob)):
        await play(winner, loser, 3)
    admin = await site.admin()
    event = await admin.call("event create", name="Club night", ladder="scrabble")
    await admin.call("event result", new=True, event=event["id"], side_a="alice", side_b="bob",
                     score_a=400, score_b=350)
    await admin.call("event close", event=event["id"])
    page = await open_page(browser, site.http_url + "#player=alice", width=1280,
                           errors=page_errors, timezone="Asia/Kolkata")
    await page.wait_for_selector("figure.history[data-ladder='backgammon'] canvas")
    await page.wait_for_selector("figure.history[data-ladder='scrabble'] canvas")
    charts = await page.evaluate(X_AXES)
    history = (await alice.call("history", name="alice", ladder="backgammon"))["entries"]
    first = datetime.fromisoformat(history[0]["at"]).timestamp()

    bg = charts["backgammon"]
    assert bg["xs"][1] == first and first - 60 <= bg["xs"][0] < first, bg["xs"]
    for chart in charts.values():
        labels = chart["labels"]
        assert len(labels) >= 2, chart
        for lab in labels:
            utc = datetime.fromtimestamp(lab["split"], UTC)
            assert lab["text"].split("\n")[0] in (utc.strftime("%H:%M"),
                                                  utc.strftime("%H:%M:%S")), (lab, utc)
        gaps = [(b["at"] - b["width"] / 2) - (a["at"] + a["width"] / 2)
                for a, b in itertools.pairwise(labels)]
        assert min(gaps) >= 20, (labels, gaps)  # a gap a reader sees, not labels touching
    assert len(charts["scrabble"]["xs"]) == 1  # a ČAS newcomer: one point
    assert charts["scrabble"]["span"] <= 3600, charts["scrabble"]


async def test_strength_explained_and_wide_tables_hint_that_they_scroll(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    await seeded_lobby(site)
    phone = await open_page(browser, site.http_url + "#player=Maximilian_Longname", width=PHONE,
                            height=800, errors=page_errors)
    explained = "every close rescales, so a player can move without playing"
    ladder = phone.locator("section[data-ladder='scrabble']")
    await expect(ladder.locator(".rating-help")).to_contain_text(explained, ignore_case=True)
    await expect(phone.locator("#profile-body .rating-help")).to_contain_text(
        explained, ignore_case=True)
    await expect(phone.locator("section[data-ladder='backgammon'] .rating-help")).to_have_count(0)

    # at phone width the ČAS table is wider than its box: a visible hint, and a Tab stop
    wrap = ladder.locator(".table-wrap")
    assert await wrap.evaluate("w => w.scrollWidth > w.clientWidth")
    await expect(ladder.locator(".scroll-hint")).to_be_visible()
    await expect(ladder.locator(".scroll-hint")).to_have_text("Scroll sideways for more →")
    await expect(wrap).to_have_attribute("tabindex", "0")
    doc = await phone.evaluate("document.documentElement.scrollWidth")
    assert doc <= PHONE

    # on a desktop it fits: no hint, no extra Tab stop
    desk = await open_page(browser, site.http_url, width=1280, height=900, errors=page_errors)
    wide = desk.locator("section[data-ladder='backgammon'] .table-wrap")
    assert not await wide.evaluate("w => w.scrollWidth > w.clientWidth")
    await expect(desk.locator("section[data-ladder='backgammon'] .scroll-hint")).to_have_count(0)
    assert await wide.get_attribute("tabindex") is None


async def test_register_asks_the_password_twice_and_eight_characters(
        site: LobbyServer, page: Page) -> None:
    status = page.locator("#status")
    await page.fill("#login-name", "newbie")
    await page.fill("#login-password", "short7!")
    await page.click("#login-form button[value=register]")
    await expect(page.locator("#login-password2")).to_be_focused()
    await expect(page.locator("#register-hint")).to_have_text(
        "A new account: at least 8 characters, typed twice.")
    await page.fill("#login-password2", "short7!")
    await page.click("#login-form button[value=register]")
    await expect(status).to_have_text("A password needs at least 8 characters.")
    await page.fill("#login-password", "long-enough")
    await page.fill("#login-password2", "long-enougH")
    await page.click("#login-form button[value=register]")
    await expect(status).to_have_text("The two passwords differ; type them again.")
    await expect(page.locator("#login-password2")).to_have_value("")
    reader = await site.client()
    assert [p["player"] for p in (await reader.call("who"))["players"]] == []
    await page.fill("#login-password2", "long-enough")
    await page.click("#login-form button[value=register]")
    await expect(page.locator("#me-name")).to_have_text("newbie")
    await expect(status).to_have_text("Welcome, newbie: your account is made and you are logged in.")
    await expect(page.locator("#repeat-label")).to_be_hidden()
    # the server holds the same line for any client
    other = await site.client()
    await expect_error(other.call("register", name="shorty", password="7-chars"), "bad_request")


async def test_focus_after_login_skip_link_to_play_and_no_empty_tab_stops(
        site: LobbyServer, page: Page) -> None:
    # a fresh lobby: every ladder is empty, and no empty table is a Tab stop
    stops = []
    for _ in range(40):
        await page.keyboard.press("Tab")
        stops.append(await page.evaluate(
            "() => { const a = document.activeElement; return [a.tagName, a.id, a.className]; }"))
    assert not any("table-wrap" in cls for _, _, cls in stops), stops
    assert await page.locator(".table-wrap[tabindex]").count() == 0
    await expect(page.locator("#skip-play")).to_be_hidden()  # nothing to play before login

    await log_in(page, "alice", PASSWORD, register=True)
    await expect(page.locator("#play-heading")).to_be_focused()
    # from the top of the page (reloaded, the session resumed): the first stop skips to play
    await page.reload()
    await expect(page.locator("#me-name")).to_have_text("alice")
    await page.wait_for_selector("body[data-loaded]", state="attached")
    await page.keyboard.press("Tab")
    await expect(page.locator("#skip-play")).to_be_focused()
    await expect(page.locator("#skip-play")).to_be_visible()
    await page.keyboard.press("Enter")
    await expect(page.locator("#play-heading")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.locator("#sound-on")).to_be_focused()
    await page.click("#logout")
    await expect(page.locator("#skip-play")).to_be_hidden()
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await expect(page.locator("#play-heading")).to_be_focused()


async def test_phone_width_play_panel_and_desk_fit(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    bob, carol = await site.player("Bartholomew_Long"), await site.player("carol")
    await play(bob, carol, 5)
    admin = await site.admin()
    closed = await admin.call("event create", name="A rather long event name", ladder="scrabble")
    await admin.call("event import", new=True, event=closed["id"], csv=(
        f"{HEADER}\nA rather long event name,2026-03-14,Maximilian_Longname,bob,412,389,,\n"
        "A rather long event name,2026-03-14,carol,dave,350,371,,\n"))
    await admin.call("event close", event=closed["id"])
    opened = await admin.call("event create", name="Another long event name, still open",
                              ladder="foosball-doubles")
    await admin.call("event result", new=True, event=opened["id"], side_a="Maximilian_Longname+bob",
                     side_b="carol+dave", score_a=10, score_b=8)
    await admin.close()
    page = await open_page(browser, site.http_url, width=PHONE, height=800, errors=page_errors)
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await bob.call("invite", name=ADMIN, ladder="backgammon", length=11)
    await expect(page.locator("#invitations .stake tbody tr")).to_have_count(2)
    await page.fill("#invite-name", "carol")
    await expect(page.locator("#invite-stake .stake tbody tr")).to_have_count(2)
    await page.select_option("#browse-event", str(closed["id"]))
    await expect(page.locator("#browse-body .games-table tbody tr")).to_have_count(2)
    await fits_the_phone(page)
    await page.get_by_role("link", name="Director's desk").click()  # the desk, its own view
    await expect(page.locator("#event-games tbody tr")).to_have_count(1)
    await page.get_by_role("button", name="Correct").click()
    await page.click("#event-close")
    await expect(page.locator("#close-confirm")).to_contain_text("rates 1 game")
    await fits_the_phone(page)


async def fits_the_phone(page: Page) -> None:
    """Nothing on the view shown is wider than the phone; wide tables scroll inside."""
    sizes = await page.evaluate("""() => ({
        doc: document.documentElement.scrollWidth, body: document.body.scrollWidth,
        view: window.innerWidth,
        boxes: [...document.querySelectorAll(
            '.table-wrap, form, .invitation, .confirm, .match, #browse-body, .buttons, section')]
            .filter((e) => e.offsetParent !== null)
            .map((e) => [e.id || e.className, Math.round(e.getBoundingClientRect().right)]),
    })""")
    assert sizes["view"] == PHONE
    wide = await page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().right > window.innerWidth
                && !e.closest('.table-wrap'))
        .map((e) => `${e.tagName}#${e.id}.${e.className}`)""")
    assert wide == [], "\n".join(wide)
    assert sizes["doc"] <= PHONE and sizes["body"] <= PHONE, sizes
    assert [b for b in sizes["boxes"] if b[1] > PHONE] == [], sizes
    # the wide tables in the narrow panels scroll inside, and say so
    hints = page.locator(".scroll-hint:visible")
    assert await hints.count() >= 1


# Each stake table on the page: how wide its box is and how wide the table and caption are.
STAKE_FIT = """() => [...document.querySelectorAll('.stake')].filter((w) => w.offsetParent !== null)
  .map((w) => ({
    where: w.closest('[id]').id,
    box: w.clientWidth,
    table: w.querySelector('table').scrollWidth,
    right: Math.round(w.getBoundingClientRect().right),
    cells: Math.round(Math.max(...[...w.querySelectorAll('th, td, caption')]
      .map((c) => c.getBoundingClientRect().right))),
  }))"""


@pytest.mark.parametrize(("me", "inviter"), [("alice", "bob"),
                                             ("Maximilian_Longname", "Bartholomew_Long")])
async def test_phone_width_stake_tables_fit_the_invitation_and_the_match(
        site: LobbyServer, browser: Browser, page_errors: list[str], me: str,
        inviter: str) -> None:
    """At 390 px the stake table is whole (every column and its caption, no sideways
    scrolling) in the invitation box and in "Your match" alike, long names or short."""
    bob = await site.player(inviter)
    page = await open_page(browser, site.http_url, width=PHONE, height=800, errors=page_errors)
    await log_in(page, me, PASSWORD, register=True)
    await bob.call("invite", name=me, ladder="backgammon", length=11)
    await expect(page.locator("#invitations .stake tbody tr")).to_have_count(2)
    invitation = await page.evaluate(STAKE_FIT)
    await page.get_by_role("button", name=f"Join {inviter}").click()
    await expect(page.locator("#match-panel .stake tbody tr")).to_have_count(2)
    match = await page.evaluate(STAKE_FIT)
    assert [t["where"] for t in invitation] == ["invitations"], invitation
    assert [t["where"] for t in match] == ["match-panel"], match
    for t in invitation + match:
        assert t["table"] <= t["box"], t  # nothing to scroll to: the Loss column is in view
        assert t["cells"] <= t["right"] <= PHONE, t  # the caption too
