"""Save the docs/screenshot-*.png pictures from a real page.

    .venv/bin/python tests/web/make_screenshots.py [OUTPUT_DIR]

Seeds a fresh lobby through the WebSocket protocol (live backgammon matches,
a Scrabble event, a foosball league day), then spreads the rating history's
timestamps over the past weeks (the matches were all played within seconds,
which would make a dull chart), restarts the server and photographs the page
in Debian's Chromium: the ladders just after a live match (its rows
highlighted), alice's profile with her rating chart, bob's play panel with an
invitation and what it puts at stake, the director's desk (#desk) with an open
event's results and its close to confirm, and bob's play panel in a live match at phone
width (390 px), Resign set apart from Abort.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kit"))  # testkit
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from playwright.async_api import async_playwright
from testkit.browser import launch, log_in, open_page
from testkit.cli import admin_template
from testkit.clients import play
from testkit.constants import PASSWORD, ROOT
from testkit.db import spread_history
from testkit.results import HEADER
from testkit.server_loop import LobbyServer

BACKGAMMON = [  # (winner, loser, length)
    ("alice", "bob", 5), ("carol", "dave", 3), ("alice", "carol", 7), ("bob", "erik", 3),
    ("dave", "alice", 5), ("erik", "carol", 1), ("alice", "erik", 9), ("bob", "dave", 5),
    ("carol", "bob", 3), ("alice", "dave", 3), ("erik", "bob", 5), ("alice", "bob", 11),
]
SCRABBLE = """Brno Open,{d},alice,bob,412,389,,
Brno Open,{d},carol,dave,350,371,,
Brno Open,{d},alice,carol,398,402,,
Brno Open,{d},bob,dave,420,330,,
"""
DIRECTOR = ("director", "director-secret")  # who runs the events
FOOSBALL = [("alice+bob", "carol+dave", 10, 7), ("erik+alice", "bob+carol", 10, 8),
            ("carol+dave", "erik+bob", 10, 6)]


async def seed(site: LobbyServer) -> None:
    names = ["alice", "bob", "carol", "dave", "erik"]
    players = {n: await site.player(n) for n in names}
    for winner, loser, length in BACKGAMMON:
        await play(players[winner], players[loser], length)
    admin = await site.admin()
    today = datetime.now(UTC).date().isoformat()
    event = await admin.call("event create", name="Brno Open", ladder="scrabble")
    await admin.call("event import", new=True, event=event["id"],
                     csv=HEADER + "\n" + SCRABBLE.format(d=today))
    await admin.call("event close", event=event["id"])
    event = await admin.call("event create", name="League day 1", ladder="foosball-doubles")
    for a, b, sa, sb in FOOSBALL:
        await admin.call("event result", new=True, event=event["id"], side_a=a, side_b=b,
                         score_a=sa, score_b=sb)
    await admin.call("event close", event=event["id"])


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    saved: list[Path] = []
    with tempfile.TemporaryDirectory() as tmp:
        db, _ = admin_template(Path(tmp), admin=DIRECTOR[0], password=DIRECTOR[1])
        site = LobbyServer(db, admin=DIRECTOR)
        await site.start()
        await seed(site)
        await site.aclose()
        spread_history(db)
        site = LobbyServer(db, admin=DIRECTOR)
        await site.start()
        try:
            async with async_playwright() as pw:
                browser = await launch(pw)
                page = await open_page(browser, site.http_url, width=1280, height=860)
                await page.wait_for_selector("tr[data-player='alice']")
                carol, alice = await site.login("carol"), await site.login("alice")
                await play(carol, alice, 5)
                await page.wait_for_selector("tr.moved")
                saved.append(out / "screenshot-ladder.png")
                await page.screenshot(path=str(saved[-1]))
                await page.close()

                page = await open_page(browser, site.http_url + "#player=alice", width=1100,
                                       height=900)
                await page.wait_for_selector("figure.history canvas")
                saved.append(out / "screenshot-profile.png")
                await page.locator("#profile").screenshot(path=str(saved[-1]))
                await page.close()

                # bob on the page, invited by alice: the invitation with what is at stake
                dave = await site.login("dave")
                # tall enough for the whole panel: scrolled, the sticky status line would cover it
                page = await open_page(browser, site.http_url, width=1280, height=1500)
                await log_in(page, "bob", PASSWORD)
                await page.fill("#invite-name", "dave")
                await page.fill("#invite-length", "7")
                await page.wait_for_selector("#invite-stake .stake")
                await page.click("#invite-form button[type=submit]")
                await alice.call("invite", name="bob", ladder="backgammon", length=5)
                await page.wait_for_selector("#invitations .stake")
                saved.append(out / "screenshot-invitation.png")
                await page.locator("#play").screenshot(path=str(saved[-1]))
                await page.close()

                # the director's desk: an open event's results, a close waiting to be confirmed
                director = await site.login(*DIRECTOR)
                event = await director.call("event create", name="Brno Open, day 2",
                                            ladder="scrabble")
                await director.call("event import", event=event["id"], csv=HEADER + "\n"
                                    + SCRABBLE.replace("Brno Open", "\"Brno Open, day 2\"")
                                    .format(d=datetime.now(UTC).date().isoformat()))
                await director.close()
                page = await open_page(browser, site.http_url + "#desk", width=1280,
                                       height=900)
                await log_in(page, *DIRECTOR)
                await page.wait_for_selector("#event-games tbody tr")
                await page.click("#event-close")
                await page.wait_for_selector("#close-confirm .confirm")
                saved.append(out / "screenshot-desk.png")
                await page.locator("#admin").screenshot(path=str(saved[-1]))
                await page.close()

                # a phone: bob's play panel at 390 px, in a match he joined from the page
                page = await open_page(browser, site.http_url, width=390, height=844)
                await log_in(page, "bob", PASSWORD)
                await dave.call("invite", name="bob", ladder="backgammon", length=5)
                await page.get_by_role("button", name="Join dave").click()
                await page.locator("#match-panel").get_by_role("button", name="Resign…").wait_for()
                await page.locator("#play-heading").evaluate("h => h.scrollIntoView()")
                saved.append(out / "screenshot-phone.png")
                await page.screenshot(path=str(saved[-1]))  # the screen, as the phone shows it
                await browser.close()
        finally:
            await site.aclose()
    print("saved " + ", ".join(str(p) for p in saved))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs"))
