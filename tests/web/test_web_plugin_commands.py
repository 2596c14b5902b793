"""The plugins' commands on the page: a form for each command `help` lists that the page has no
view of (the test plugins' ``h2h`` and ``streak``), made from its usage alone, and the reply
shown whatever its shape (nested objects as term lists, a list of like objects as a table),
a refusal in the form's feedback line; axe-core finds nothing to fix."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect
from testkit.axe import axe_violations
from testkit.browser import open_page
from testkit.clients import start_match
from testkit.constants import ROOT
from testkit.outside import outside_commands
from testkit.results import results_text, today
from testkit.server_loop import LobbyServer

from server.plugins import command_table

pytestmark = pytest.mark.asyncio(loop_scope="session")

PHONE = 390


async def cells(page: Page, selector: str) -> list[list[str]]:
    rows: list[list[str]] = await page.locator(selector).evaluate(
        "(t) => [...t.rows].map((r) => [...r.cells].map((c) => c.textContent))")
    return rows


async def test_a_plugin_command_runs_from_its_form_and_shows_its_nested_reply(
        site: LobbyServer, page: Page) -> None:
    alice, bob = await site.players("alice", "bob")
    for winner, loser in ((alice, bob), (alice, bob), (bob, alice)):
        await start_match(winner, loser)
        await loser.resign()
    admin = await site.admin()
    eid = (await admin.call("event create", name="Open", ladder="scrabble"))["id"]
    await admin.call("event import", new=True, event=eid, csv=results_text([
        f"Open,{today()},bob,alice,400,300,,", f"Open,{today()},alice,bob,350,350,,"]))
    await admin.call("event close", event=eid)
    await page.reload()
    await expect(page.locator("body[data-loaded=true]")).to_have_count(1)

    section = page.locator("#plugin-commands")
    await expect(section).to_be_visible()
    form = section.locator("form[data-command=h2h]")
    await expect(form.get_by_role("heading")).to_have_text("h2h A B")
    await expect(form.locator(".hint")).to_have_text(
        "Two players' wins against each other on each ladder. For: Anyone.")
    assert await section.locator("form").evaluate_all(
        "(fs) => fs.map((f) => f.dataset.command)") == ["h2h", "streak"]  # only the plugins'
    await form.get_by_label("A", exact=True).fill("alice")
    await form.get_by_label("B", exact=True).fill("Bob")
    await form.get_by_role("button", name="Run h2h").click()
    reply = form.locator(".plugin-reply")
    await expect(reply.locator("table")).to_have_count(1)
    fields = reply.locator(":scope > dl > dt")
    await expect(fields).to_have_text(["players", "total", "ladders"])
    await expect(reply.locator(":scope > dl > dd").first).to_have_text("alice, bob")
    total = reply.locator(":scope > dl > dd").nth(1).locator("dl")
    await expect(total.locator("dt")).to_have_text(["alice", "bob"])
    await expect(total.locator("dd")).to_have_text(["2", "2"])
    assert await cells(page, "#plugin-commands form[data-command=h2h] table") == [
        ["ladder", "wins alice", "wins bob", "draws", "last"],
        ["backgammon", "2", "1", "0", today()],
        ["scrabble", "0", "1", "1", today()],
    ]
    # at 1280 px the section is in the wide column: its table needs no sideways scrolling
    wrap = form.locator(".table-wrap")
    assert await wrap.evaluate("w => w.scrollWidth <= w.clientWidth")
    assert (await section.bounding_box() or {}).get("width", 0) > 600
    assert await axe_violations(page) == []

    # a refusal is shown in the form, and the last reply goes
    await form.get_by_label("B", exact=True).fill("nobody")
    await form.get_by_role("button", name="Run h2h").click()
    await expect(form.locator(".feedback")).to_contain_text("nobody")
    await expect(form.locator(".feedback")).to_have_class("feedback error")
    await expect(reply).to_be_empty()

    streak = section.locator("form[data-command=streak]")
    await streak.get_by_label("Name", exact=True).fill("bob")
    await streak.get_by_role("button", name="Run streak").click()
    await expect(streak.locator(".plugin-reply table")).to_have_count(1)
    assert await cells(page, "#plugin-commands form[data-command=streak] table") == [
        ["ladder", "current", "best"], ["backgammon", "1", "1"], ["scrabble", "0", "1"]]
    assert await axe_violations(page) == []


async def test_more_commands_fit_a_phone(site: LobbyServer, browser: Browser,
                                         page_errors: list[str]) -> None:
    """At 390 px the section spans the screen and the page does not scroll sideways."""
    page = await open_page(browser, site.http_url, width=PHONE, height=844, errors=page_errors)
    section = page.locator("#plugin-commands")
    await expect(section).to_be_visible()
    box = await section.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE


async def test_the_pages_own_commands_are_the_projects() -> None:
    """The page's list of the commands it has views of (js/plugin_commands.js) names only
    commands of the lobby and its ratings plugin: an outside plugin's is always offered."""
    source = (ROOT / "clients" / "web" / "js" / "plugin_commands.js").read_text(encoding="utf-8")
    listed = set(re.findall(r'"([a-z ]+)"', source[source.index("new Set(["):source.index("]);")]))
    table = set(command_table())
    assert listed <= table, listed - table
    assert not listed & set(outside_commands())
    assert len(listed) == len(table) - len(outside_commands())  # as it is now: all of them
