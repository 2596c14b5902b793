"""Debian's Chromium driven by Playwright's async API, in the test's event loop."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Page, Playwright, expect

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def browser_available() -> bool:
    return CHROMIUM.exists()


async def launch(playwright: Playwright) -> Browser:
    return await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                                            headless=True)


async def open_page(browser: Browser, url: str, width: int = 1280, height: int = 900,
                    errors: list[str] | None = None, timezone: str | None = None) -> Page:
    """A page in a fresh context, loaded and connected (its ladders, the players online and
    the events listed, the session resumed when one was saved). ``timezone``: the browser's
    local time zone (an IANA name), when it must not be the machine's.

    Script errors and console errors go to ``errors``, except the browser's own notes of a
    failed WebSocket attempt while the server is down (the page retries).
    """
    context = await browser.new_context(viewport={"width": width, "height": height},
                                        timezone_id=timezone)
    page = await context.new_page()
    if errors is not None:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text)
                if m.type == "error" and "WebSocket connection to" not in m.text else None)
    await page.goto(url)
    await page.wait_for_selector(".connection.ok")
    await page.wait_for_selector("body[data-loaded]", state="attached")
    return page


async def log_in(page: Page, name: str, password: str, register: bool = False) -> None:
    """Log in (or register: the password typed twice) through the page's form."""
    await page.fill("#login-name", name)
    await page.fill("#login-password", password)
    if register:
        await page.click("#login-form button[value=register]")
        await page.fill("#login-password2", password)
    await page.click(f"#login-form button[value={'register' if register else 'login'}]")
    await expect(page.locator("#me-name")).to_have_text(name)
