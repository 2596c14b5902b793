"""The web page shows every ladder by the columns the server describes: labels, rounding,
help texts, which ladders take live matches; a system no client knows included (Zeta,
tests/kit/testkit/zeta.py, configured on a real server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect
from testkit.browser import log_in, open_page
from testkit.clients import play
from testkit.constants import PASSWORD
from testkit.fibs import FibsModel
from testkit.results import HEADER
from testkit.server_loop import LobbyServer, with_ladders
from testkit.zeta import LADDER, with_zeta

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def zeta_site(db_path: Path) -> AsyncIterator[LobbyServer]:
    """The default ladders and a Zeta ladder (``go``)."""
    s = LobbyServer(db_path, configure=with_zeta)
    await s.start()
    try:
        yield s
    finally:
        await s.aclose()


async def headings(page: Page, ladder: str) -> list[str]:
    return await page.locator(f"section[data-ladder='{ladder}'] thead th").all_inner_texts()


async def option_values(page: Page, select: str) -> list[str]:
    return await page.locator(f"{select} option").evaluate_all("os => os.map((o) => o.value)")


async def test_each_ladder_follows_its_description_and_explains_its_columns(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    await play(alice, bob, 3)
    admin = await site.admin()
    event = await admin.call("event create", name="Club night", ladder="scrabble")
    await admin.call("event import", new=True, event=event["id"], csv=(
        f"{HEADER}\nClub night,2026-03-14,alice,bob,412,389,,\n"
        "Club night,2026-03-14,bob,carol,350,371,,\n"))
    await admin.call("event close", event=event["id"])
    described: list[dict[str, Any]] = (await admin.call("ladders"))["ladders"]
    page = await open_page(browser, site.http_url + "#player=alice", errors=page_errors)

    for ladder in described:
        name = ladder["ladder"]
        assert await headings(page, name) == [
            "Rank", "Player", *(c["label"] for c in ladder["columns"]), "Active"]
        await expect(page.locator(f"section[data-ladder='{name}'] h3 .tag")).to_have_text(
            ladder["system_title"])
        # every explained column: a title on its heading, an entry in the ladder's legend
        explained = [c for c in ladder["columns"] if c.get("help")]
        for c in explained:
            heading = page.locator(f"section[data-ladder='{name}'] thead th",
                                   has_text=c["label"])
            await expect(heading).to_have_attribute("title", c["help"])
        section_legend = page.locator(f"section[data-ladder='{name}'] details.legend")
        assert await section_legend.locator("dt").all_text_contents() == [
            c["label"] for c in explained]
        assert await section_legend.locator("dd").all_text_contents() == [
            c["help"] for c in explained]
    # only the ladders that take live matches can be chosen for an invitation
    assert await option_values(page, "#invite-ladder") == [
        x["ladder"] for x in described if x["live"]] == ["backgammon"]
    assert await page.locator("#event-ladder option").all_inner_texts() == [
        f"{x['ladder']} ({x['system_title']})" for x in described]

    # the legend opens from the keyboard and shows ČAS's Strength explained
    cas = next(x for x in described if x["ladder"] == "scrabble")
    strength = cas["columns"][0]
    assert (strength["key"], strength["label"]) == ("rating", "Strength")
    legend = page.locator("section[data-ladder='scrabble'] details.legend")
    await legend.locator("summary").focus()
    await page.keyboard.press("Enter")
    await expect(legend.locator("dd").first).to_be_visible()
    await expect(legend.locator("dd").first).to_have_text(strength["help"])

    # the profile: the rating as its ladder shows it, titled with what it is; the other columns
    await expect(page.locator("#profile-heading")).to_have_text("Player profile: alice")
    whois = await admin.call("whois", name="alice")
    mine = {r["ladder"]: r for r in whois["ratings"]}
    scrabble = page.locator(".ratings-table tr[data-ladder='scrabble']")
    await expect(scrabble.locator("td.rating")).to_have_text(str(mine["scrabble"]["rating"]))
    await expect(scrabble.locator("td.rating")).to_have_attribute(
        "title", f"Strength: {strength['help']}")
    r = mine["scrabble"]
    await expect(scrabble.locator("td.wrap")).to_have_text(
        f"Paluba {r['paluba']}, Dansa {r['dansa']}, Peklo {r['peklo']:.1f}")
    await expect(scrabble.locator("td.wrap span[data-key='peklo']")).to_have_attribute(
        "title", cas["columns"][3]["help"])
    backgammon = page.locator(".ratings-table tr[data-ladder='backgammon']")
    await expect(backgammon.locator("td.rating")).to_have_text(f"{mine['backgammon']['rating']:.2f}")
    await expect(backgammon.locator("td.wrap")).to_have_text(
        f"Experience {mine['backgammon']['experience']}")


async def test_a_system_no_client_knows(zeta_site: LobbyServer, browser: Browser,
                                        page_errors: list[str]) -> None:
    """Zeta rates like FIBS (numbers from RATINGS.md §1 through :class:`FibsModel`) and shows
    an integer Score, a one-place Elo, a yes/no and a text: the page shows what it is told."""
    site = zeta_site
    alice, bob = await site.player("alice"), await site.player("bob")
    fibs = FibsModel()
    await play(alice, bob, 3, ladder=LADDER)
    fibs.play("alice", "bob", 3)
    await play(bob, alice, 1, ladder=LADDER)
    fibs.play("bob", "alice", 1)
    page = await open_page(browser, site.http_url + "#player=alice", errors=page_errors)

    assert await headings(page, LADDER) == [
        "Rank", "Player", "Score", "Elo", "Ahead", "Tier", "Played", "Active"]
    await expect(page.locator(f"section[data-ladder='{LADDER}'] h3 .tag")).to_have_text(
        "Zeta (made up)")
    rows = page.locator(f"section[data-ladder='{LADDER}'] tbody tr")
    await expect(rows).to_have_count(2)
    for i, name in enumerate(fibs.ranking()):
        rating = fibs.players[name].rating
        await expect(rows.nth(i)).to_have_attribute("data-player", name)
        assert await rows.nth(i).locator("td").all_inner_texts() == [
            str(i + 1), str(int(rating)), f"{rating:.1f}", "yes" if rating > 1500 else "no",
            "upper" if rating >= 1500 else "lower", "2", "yes"]
    assert await option_values(page, "#invite-ladder") == ["backgammon", LADDER]
    assert "go (Zeta (made up))" in await page.locator("#event-ladder option").all_inner_texts()

    # alice's profile: Zeta's whole-number history, and the chart of it
    figure = page.locator(f"figure.history[data-ladder='{LADDER}']")
    await expect(figure).to_have_attribute("data-points", "2")
    (b1, a1), (b2, a2) = fibs.players["alice"].history
    assert await figure.locator("details tbody tr").evaluate_all(
        "trs => trs.map((tr) => [...tr.cells].slice(-3).map((td) => td.textContent))") == [
        [str(int(b1)), str(int(a1)), f"+{int(a1) - int(b1)}"],
        [str(int(b2)), str(int(a2)), f"−{int(b2) - int(a2)}"]]
    profile = page.locator(f".ratings-table tr[data-ladder='{LADDER}']")
    await expect(profile.locator("td.rating")).to_have_text(str(int(a2)))
    await expect(profile.locator("td.rating")).to_have_attribute(
        "title", "Score: Whole points of the rating.")
    await expect(profile.locator("td.wrap")).to_have_text(
        f"Elo {a2:.1f}, Ahead {'yes' if a2 > 1500 else 'no'}, "
        f"Tier {'upper' if a2 >= 1500 else 'lower'}")

    # a live match on it from the page: the result in the ladder's own rounding
    await log_in(page, "carol", PASSWORD, register=True)
    await expect(page.locator("#invite-ladder option")).to_have_count(2)
    await bob.call("invite", name="carol", ladder=LADDER, length=1)
    await page.get_by_role("button", name="Join bob").click()
    await expect(page.locator("#match-panel")).to_contain_text(f"on {LADDER}")
    await page.locator("#match-panel").get_by_role("button", name="Resign…").click()
    await page.locator("#match-panel").get_by_role("button", name="Yes, resign").click()  # it asks first
    before, after = fibs.play("bob", "carol", 1)["carol"]  # the reply's unrounded numbers
    shown = f"{round(after)} (−{round(before - after)})"
    await expect(page.locator("#status")).to_contain_text(f"Your rating: {shown}.")
    await expect(page.locator("#last-result li[data-player='carol']")).to_have_text(
        f"carol: {round(before)} → {shown}")


ELO_CONFIG = """
[[ladders]]
name = "club"
system = "elo"
"""


async def test_an_outside_systems_default_columns_are_explained(
        db_path: Path, browser: Browser, page_errors: list[str]) -> None:
    """The Elo test plugin (tests/plugins/elo) keeps the base class's columns, Rating and
    Games: its ladder explains them as the others explain theirs."""
    config = db_path.with_name("elo.toml")
    config.write_text(ELO_CONFIG, encoding="utf-8")
    site = LobbyServer(db_path, configure=with_ladders(config))
    await site.start()
    try:
        columns = (await (await site.client()).call("ladders"))["ladders"][0]["columns"]
        page = await open_page(browser, site.http_url, errors=page_errors)
        legend = page.locator("section[data-ladder='club'] details.legend")
        await expect(legend.locator("summary")).to_have_text("What the columns mean")
        await legend.locator("summary").click()
        await expect(legend.locator("dt")).to_have_text(["Rating", "Games"])
        await expect(legend.locator("dd")).to_have_text([c["help"] for c in columns])
        await expect(legend.locator("dd").first).to_contain_text("rating on this ladder")
    finally:
        await site.aclose()
