"""The page's sessions in a real Chromium: other sessions offered to end at login, "Log out
everywhere", and a new password that logs the page out without a reload."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Page, expect
from testkit.browser import log_in
from testkit.cli import run_cli_async
from testkit.clients import RecordingClient, expect_error
from testkit.constants import HELLO, PASSWORD
from testkit.server_loop import LobbyServer

from server.app import RunningServer, start_server

pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(loop_scope="session")
async def other_server(site: LobbyServer) -> AsyncIterator[RunningServer]:
    """A second server on the site's database: a login there does not replace the page's."""
    node = await start_server(site.config(), host="127.0.0.1", port=0)
    try:
        yield node
    finally:
        await node.stop()


async def client_of(node: RunningServer, site: LobbyServer) -> RecordingClient:
    c = RecordingClient(f"ws://127.0.0.1:{node.port}/ws", reconnect=False)
    site.clients.append(c)
    assert await c.connect() == HELLO
    return c


async def saved_token(page: Page) -> str | None:
    token: str | None = await page.evaluate(
        "() => JSON.parse(localStorage.getItem('matchlobby.session') || 'null')?.token ?? null")
    return token


async def test_a_login_offers_to_end_the_other_sessions_and_logs_out_everywhere(
        site: LobbyServer, page: Page, other_server: RunningServer) -> None:
    first = await site.player("alice")
    assert first.session is not None
    old = first.session.token
    await first.close()
    await log_in(page, "alice", PASSWORD)
    offer = page.locator("#other-sessions")
    await expect(offer).to_be_visible()
    await expect(offer).to_contain_text("You have 1 other session open")
    await offer.get_by_role("button", name="End them").click()
    await expect(page.locator("#status")).to_have_text(
        "Ended 1 other session; you stay logged in here.")
    await expect(offer).to_be_hidden()
    await expect(page.locator("#me-name")).to_have_text("alice")
    c = await site.client()
    await expect_error(c.call("resume", token=old), "forbidden")
    mine = await saved_token(page)
    assert mine is not None

    # logged in on another server too; "Log out everywhere" on the page ends both
    there = await client_of(other_server, site)
    await there.login("alice", PASSWORD)
    await page.get_by_role("button", name="Log out everywhere").click()
    await expect(page.locator("#status")).to_have_text("Logged out everywhere: 2 sessions ended.")
    await expect(page.locator("#login-form")).to_be_visible()
    told = (await there.next_push("logged_out", timeout=10))["data"]
    assert told["cause"] == "logout_all"
    await expect_error(there.call("invitations"), "not_logged_in")
    await expect_error(c.call("resume", token=mine), "forbidden")
    assert await saved_token(page) is None
    await page.reload()
    await page.wait_for_selector("body[data-loaded]", state="attached")
    await expect(page.locator("#login-form")).to_be_visible()


async def test_a_new_password_logs_the_page_out(site: LobbyServer, page: Page,
                                               fast_config: Path) -> None:
    await log_in(page, "alice", PASSWORD, register=True)
    await expect(page.locator("#other-sessions")).to_be_hidden()  # none other: nothing offered
    done = await run_cli_async(["user", "add", "alice", "--db", str(site.db), "--config",
                                str(fast_config)], site.db.parent, "a-new-secret\n")
    assert done.returncode == 0, done.stderr
    await expect(page.locator("#status")).to_have_text(
        "Your password was changed; log in again with the new one.")
    await expect(page.locator("#login-form")).to_be_visible()
    await expect(page.locator("#play")).to_be_hidden()
    assert await saved_token(page) is None
    await expect(page.locator("#connection")).to_have_class("connection ok")  # still connected
    await log_in(page, "alice", "a-new-secret")


async def test_a_ban_logs_the_page_out_and_keeps_saying_why(site: LobbyServer, page: Page,
                                                            fast_config: Path) -> None:
    """The ban's connection is closed; the page reconnects as a spectator's and the reason
    stays on screen (not "Reconnected."), and a login there is refused saying why."""
    await log_in(page, "dora", PASSWORD, register=True)
    await page.evaluate("() => { delete document.body.dataset.loaded; }")
    done = await run_cli_async(["user", "ban", "dora", "--until", "2099-01-15", "--reason",
                                "spam in shouts", "--db", str(site.db), "--config",
                                str(fast_config)], site.db.parent)
    assert done.returncode == 0, done.stderr
    why = "You have been banned until 2099-01-15: spam in shouts"
    await expect(page.locator("#status")).to_have_text(why)
    await expect(page.locator("#login-form")).to_be_visible()
    await page.wait_for_selector("body[data-loaded]", state="attached")  # reconnected
    await expect(page.locator("#connection")).to_have_class("connection ok")
    await expect(page.locator("#status")).to_have_text(why)
    assert await saved_token(page) is None
    await page.fill("#login-name", "dora")
    await page.fill("#login-password", PASSWORD)
    await page.click("#login-form button[value=login]")
    await expect(page.locator("#status")).to_contain_text(
        "The account dora is banned until 2099-01-15: spam in shouts")
    await expect(page.locator("#login-form")).to_be_visible()
