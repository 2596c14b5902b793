"""The page shows a ladder's evaluation (the lobby's ``evaluate``): its scores by system, the
calibration chart and the log-loss by system as bars, asked for when opened and again on
demand, saying when results came in since; axe-core finds nothing."""

from __future__ import annotations

import pytest
from playwright.async_api import Browser, expect
from testkit.axe import axe_violations
from testkit.browser import open_page
from testkit.results import HEADER, today
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

NAMES = {"fibs": "FIBS", "baseline": "Always 0.5", "win_rate": "Win rates so far"}


def results(rows: list[tuple[str, str, int]]) -> str:
    return "\n".join([HEADER, *(f"Club,{today()},{a},{b},{n},0,{n}," for a, b, n in rows)]) + "\n"


async def test_a_ladders_evaluation_shows_the_scores_and_the_calibration_chart(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    admin, guest = await site.admin(), await site.client()
    eid = (await admin.call("event create", name="Club", ladder="backgammon"))["id"]
    # ann beats everyone, bea beats cid and dan, cid beats dan; now and then an upset
    games = [("ann", "bea", 3), ("ann", "cid", 5), ("bea", "cid", 1), ("cid", "dan", 7),
             ("bea", "dan", 3), ("ann", "dan", 1), ("dan", "ann", 1), ("bea", "cid", 5)] * 3
    await admin.call("event import", new=True, event=eid, csv=results(games))
    report = await guest.call("evaluate", ladder="backgammon")
    assert report["systems"][0]["games"] == len(games)

    page = await open_page(browser, site.http_url, errors=page_errors)
    panel = page.locator("details.evaluation[data-ladder='backgammon']")
    # it evaluates the ladder's own system (beside two baselines), named by its title
    await expect(panel.locator("summary")).to_have_text("How well FIBS predicts backgammon")
    await panel.locator("summary").click()
    rows = panel.locator("table.evaluation-table tbody tr")
    await expect(rows).to_have_count(3)
    for i, r in enumerate(report["systems"]):
        row = rows.nth(i)
        await expect(row.locator("th")).to_have_text(NAMES[r["system"]])
        await expect(row.locator("td[data-key='games']")).to_have_text(str(r["games"]))
        await expect(row.locator("td[data-key='log_loss']")).to_have_text(f"{r['log_loss']:.4f}")
        await expect(row.locator("td[data-key='brier']")).to_have_text(f"{r['brier']:.4f}")
    await expect(panel.locator(".verdict")).to_contain_text(
        f"Over {len(games)} scored games, FIBS predicted with a log-loss of "
        f"{report['systems'][0]['log_loss']:.4f}")
    # the chart: uPlot's canvas, a line per row and the diagonal in its legend
    figure = panel.locator("figure.calibration")
    await expect(figure.locator("canvas")).to_have_count(1)
    labels = figure.locator(".u-legend .u-series .u-label")
    await expect(labels).to_have_text(["Predicted", "Perfectly calibrated", *NAMES.values()])
    points = await page.evaluate("""() => {
        const b = document.querySelector("figure.calibration canvas").getBoundingClientRect();
        return [b.width, b.height]; }""")
    assert points[0] >= 240 and points[1] > 100
    assert await axe_violations(page) == []

    # one more result: the panel says so (the ladder's push), and asked again counts it
    status = panel.get_by_role("status")
    await expect(status).to_have_text("")
    await admin.call("event import", event=eid, csv=results([("dan", "bea", 3)]))
    await expect(status).to_have_text("New results have come in since: “Ask again” counts them.")
    await expect(rows.first.locator("td[data-key='games']")).to_have_text(str(len(games)))
    await panel.get_by_role("button", name="Ask again").click()
    await expect(rows.first.locator("td[data-key='games']")).to_have_text(str(len(games) + 1))
    await expect(status).to_have_text("")
    await expect(labels).to_have_count(5)  # the chart drawn again, not added to
    await expect(figure.locator("canvas")).to_have_count(1)
    await expect(panel.locator("figure.losses canvas")).to_have_count(1)


async def test_the_verdict_waits_for_enough_games(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    """Three games say nothing of a system: the verdict gives the count and no comparison
    with a coin until 100 games are scored, then gives it."""
    admin = await site.admin()
    eid = (await admin.call("event create", name="Club", ladder="backgammon"))["id"]
    await admin.call("event import", new=True, event=eid, csv=results([("ann", "bea", 1)] * 3))
    page = await open_page(browser, site.http_url, errors=page_errors)
    panel = page.locator("details.evaluation[data-ladder='backgammon']")
    await panel.locator("summary").click()
    verdict = panel.locator(".verdict")
    await expect(verdict).to_contain_text("Over 3 scored games, FIBS predicted")
    await expect(verdict).to_contain_text("too few games to tell")
    await expect(verdict).not_to_contain_text("than a coin.")

    await admin.call("event import", event=eid, csv=results([("ann", "bea", 1)] * 97))
    await panel.get_by_role("button", name="Ask again").click()
    await expect(verdict).to_contain_text("Over 100 scored games, FIBS predicted")
    await expect(verdict).to_contain_text(", better than a coin.")
    await expect(verdict).not_to_contain_text("too few")


# The bars drawn on the log-loss chart's canvas, read from its pixels: the runs of coloured
# (not grey) pixels along a line just above the chart's floor, as [first x, last x, colour].
BARS = """(plot) => {
    const canvas = plot.querySelector("canvas");
    const over = plot.querySelector(".u-over").getBoundingClientRect();
    const box = canvas.getBoundingClientRect();
    const scale = canvas.width / box.width;
    const y = Math.round((over.bottom - box.top - 3) * scale);
    const x0 = Math.round((over.left - box.left) * scale), x1 = Math.round((over.right - box.left) * scale);
    const px = canvas.getContext("2d").getImageData(x0, y, x1 - x0, 1).data;
    const runs = [];
    let run = null;
    for (let i = 0; i < x1 - x0; i++) {
        const [r, g, b, a] = px.slice(4 * i, 4 * i + 4);
        const coloured = a > 200 && Math.max(r, g, b) - Math.min(r, g, b) > 60;
        if (coloured && run && i === run[1] + 1) run[1] = i;
        else if (coloured) runs.push(run = [i, i, `${r},${g},${b}`]);
        else run = null;
    }
    return runs; }"""


async def test_on_a_phone_the_panel_names_its_system_and_draws_the_log_loss_as_bars(
        site: LobbyServer, browser: Browser, page_errors: list[str]) -> None:
    """As ``matchlobby evaluate --chart``: beside the calibration chart, a bar per row of the
    report in its own colour, the table's numbers its text alternative; at 390 px nothing
    scrolls sideways, and axe-core finds nothing."""
    admin, guest = await site.admin(), await site.client()
    eid = (await admin.call("event create", name="Club", ladder="backgammon"))["id"]
    games = [("ann", "bea", 3), ("bea", "cid", 1), ("ann", "cid", 5), ("cid", "ann", 1)] * 3
    await admin.call("event import", new=True, event=eid, csv=results(games))
    report = await guest.call("evaluate", ladder="backgammon")

    page = await open_page(browser, site.http_url, width=390, height=844, errors=page_errors)
    panel = page.locator("details.evaluation[data-ladder='backgammon']")
    await expect(panel.locator("summary")).to_have_text("How well FIBS predicts backgammon")
    await panel.locator("summary").click()
    figure = panel.locator("figure.losses")
    await expect(figure.locator("figcaption")).to_contain_text(f"Log-loss by system ({len(games)} games)")
    await expect(figure.locator(".u-legend .u-series .u-label")).to_have_text(
        ["System", *(NAMES[r["system"]] for r in report["systems"])])
    plot = figure.get_by_role("img")
    table = panel.locator("table.evaluation-table")
    assert await plot.get_attribute("aria-describedby") == await table.get_attribute("id")
    bars = await plot.evaluate(BARS)
    assert len(bars) == len(report["systems"]), bars
    assert len({colour for _, _, colour in bars}) == len(bars)

    sizes = await page.evaluate("""() => [document.documentElement.scrollWidth,
                                          document.body.scrollWidth]""")
    assert max(sizes) <= 390, sizes
    for chart in (panel.locator("figure.calibration canvas"), figure.locator("canvas")):
        box = await chart.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    assert await axe_violations(page) == []
