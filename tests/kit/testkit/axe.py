"""axe-core (the copy the axe-playwright-python package ships) run on a page: its violations."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from playwright.async_api import Page

_SOURCE: str | None = None


def _axe_source() -> str:
    global _SOURCE
    if _SOURCE is None:
        _SOURCE = (files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")
    return _SOURCE


async def axe_violations(page: Page) -> list[dict[str, Any]]:
    """Every axe-core rule's violations on the page as it is now: rule id, impact and the
    offending nodes' selectors (an empty list is a pass)."""
    if not await page.evaluate("() => Boolean(window.axe)"):
        # evaluated through the debugging protocol: the page's CSP forbids inline scripts
        await page.evaluate(_axe_source() + "\n;undefined")
    # The page as it is painted: a layout change (a panel shown, a table grown) reaches the
    # page's ResizeObservers (which make a box that scrolls a Tab stop) in the rendering step
    # of the next frame; two frames on, every observation due has been delivered.
    result: list[dict[str, Any]] = await page.evaluate("""async () => {
        await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
        const r = await window.axe.run(document, { resultTypes: ["violations"] });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact,
            nodes: v.nodes.map((n) => n.target.join(" ")) }));
    }""")
    return result
