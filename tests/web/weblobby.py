"""Helpers for the web page's tests and its screenshot script.

A real lobby server runs in the test's event loop on a free port with a real
SQLite file; Debian's Chromium is driven by Playwright's async API in the same
loop; players are driven through :class:`clients.LobbyClient`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page, Playwright
from sharedkit import (
    FAST_HASHING,
    HEADER,
    PASSWORD,
    ROOT,
    LobbyServer,
    admin_template,
    name_of,
    start_match,
)

from clients import LobbyClient
from server.config import Config

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ADMIN = "director"
ADMIN_PASSWORD = "director-secret"

__all__ = [  # this folder's helpers, and the shared ones (tests/kit/sharedkit.py) its tests use
    "ADMIN", "ADMIN_PASSWORD", "CHROMIUM", "CHROMIUM_ARGS", "HEADER", "PASSWORD", "ROOT", "Site",
    "browser_available", "launch", "make_template", "name_of", "open_page", "play",
]


def browser_available() -> bool:
    return CHROMIUM.exists()


def make_template(folder: Path) -> Path:
    """A database holding only the admin account (made by ``matchlobby user add --admin``),
    and the fast-hashing config beside it."""
    db, _ = admin_template(folder, admin=ADMIN, password=ADMIN_PASSWORD)
    return db


async def launch(playwright: Playwright) -> Browser:
    return await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                            headless=True)


class Site(LobbyServer[LobbyClient]):
    """One lobby server on a free port, and the Python clients talking to it."""

    admin_name = ADMIN
    admin_password = ADMIN_PASSWORD

    def __init__(self, db: Path) -> None:
        super().__init__(db, LobbyClient)

    async def start(self, port: int = 0) -> Site:
        await self.serve(Config(database=str(self.db), password=FAST_HASHING), port)
        return self

    async def restart(self) -> None:
        """Stop the server (dropping every connection) and start it again on the same port."""
        assert self.server is not None and self.port is not None
        await self.stop()
        await self.start(self.port)

    @property
    def http_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.port}/"


async def play(winner: LobbyClient, loser: LobbyClient, length: int = 1,
               ladder: str = "backgammon") -> dict[str, Any]:
    """``winner`` invites ``loser``, who joins and resigns; returns the ``match_finished`` reply."""
    await start_match(winner, loser, length, ladder)
    data: dict[str, Any] = await loser.call("resign")
    assert data["winner"] == name_of(winner) and data["rated"], data
    return data


async def open_page(browser: Browser, url: str, width: int = 1280, height: int = 900,
                    errors: list[str] | None = None) -> Page:
    """A page in a fresh context, loaded and connected (its ladders shown).

    Script errors and console errors go to ``errors``, except the browser's own notes of a
    failed WebSocket attempt while the server is down (the page retries).
    """
    context = await browser.new_context(viewport={"width": width, "height": height})
    page = await context.new_page()
    if errors is not None:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text)
                if m.type == "error" and "WebSocket connection to" not in m.text else None)
    await page.goto(url)
    await page.wait_for_selector(".connection.ok")
    await page.wait_for_selector("section.ladder table")
    return page
