"""Fixtures for the web page tests: a real server, Debian's Chromium through Playwright.

The tests, their servers and the one browser share the session's event loop (each test
module sets ``pytestmark = pytest.mark.asyncio(loop_scope="session")``). Skipped only when
/usr/bin/chromium is missing outside CI; in CI (``CI`` set) a missing browser is an error,
not a skip.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright
from testkit.browser import browser_available, launch, open_page
from testkit.server_loop import LobbyServer


@pytest.fixture(scope="session", autouse=True)
def _need_chromium() -> None:
    if not browser_available() and not os.environ.get("CI"):
        pytest.skip("/usr/bin/chromium is missing (apt-get install chromium); CI installs it")


@pytest_asyncio.fixture(loop_scope="session")
async def site(db_path: Path) -> AsyncIterator[LobbyServer]:
    """A running server on the test's ``db_path``, in the session's loop."""
    s = LobbyServer(db_path)
    await s.start()
    try:
        yield s
    finally:
        await s.aclose()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def session_browser() -> AsyncIterator[Browser]:
    async with async_playwright() as pw:
        b = await launch(pw)
        try:
            yield b
        finally:
            await b.close()


@pytest_asyncio.fixture(loop_scope="session")
async def browser(session_browser: Browser) -> AsyncIterator[Browser]:
    """The shared browser; the pages a test opened (each in its own context) close after it."""
    yield session_browser
    for context in session_browser.contexts:
        await context.close()


@pytest.fixture
def page_errors() -> Iterator[list[str]]:
    """JavaScript errors on any page of the test; checked empty at its end."""
    errors: list[str] = []
    yield errors
    assert errors == []


@pytest_asyncio.fixture(loop_scope="session")
async def page(site: LobbyServer, browser: Browser, page_errors: list[str]) -> Page:
    """The page at 1280×900, loaded and connected, as a spectator."""
    return await open_page(browser, site.http_url, errors=page_errors)
