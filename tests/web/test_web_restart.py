"""A server restarting gracefully, as the page tells it: the notice with the wait it names,
then connected again and still logged in (``resume``)."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Page, expect
from testkit.browser import log_in
from testkit.constants import PASSWORD
from testkit.server_loop import LobbyServer

pytestmark = pytest.mark.asyncio(loop_scope="session")

NOTICE = re.compile(r"^The server is restarting; reconnecting in [1-3] s…$")


async def test_the_page_tells_of_a_restart_and_comes_back_logged_in(site: LobbyServer,
                                                                     page: Page) -> None:
    await log_in(page, "alice", PASSWORD, register=True)
    assert site.server is not None
    await site.server.drain()
    await expect(page.locator("#status")).to_have_text(NOTICE)
    await expect(page.locator("#connection")).to_have_text(NOTICE)  # not "Connection lost"
    await site.restart()
    await expect(page.locator("#connection")).to_have_text(re.compile("^Connected"),
                                                           timeout=15000)
    await expect(page.locator("#status")).to_have_text("Reconnected.")
    await expect(page.locator("#me-name")).to_have_text("alice")
