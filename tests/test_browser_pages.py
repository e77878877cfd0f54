"""The browser tests share one Chromium per test process: each test's page still starts as in a
new browser (no storage or cookies of another test's), and its scripts' errors are still told."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.helpers.browser import BrowserPage, Chromium, browser_page
from tests.helpers.waits import eventually

if TYPE_CHECKING:
    from playwright.async_api import Page, Route

ORIGIN = "http://agent-eval.test/"


async def served(page: Page) -> None:
    """The page answers ORIGIN with an empty document (storage and cookies need an origin)."""

    async def fulfil(route: Route) -> None:
        await route.fulfill(content_type="text/html", body="<p>agent-eval</p>")

    await page.route(ORIGIN + "**", fulfil)
    await page.goto(ORIGIN)


async def left_behind(watched: BrowserPage) -> list[str | None]:
    return await watched.page.evaluate("[localStorage.getItem('left'), document.cookie]")


async def test_a_page_keeps_nothing_of_the_last_and_reports_its_own_errors(
    shared_chromium: Chromium,
) -> None:
    async with browser_page(shared_chromium) as first:
        await served(first.page)
        await first.page.evaluate(
            "localStorage.setItem('left', 'behind'); document.cookie = 'left=behind'"
        )
        assert await left_behind(first) == ["behind", "left=behind"]
        await first.page.evaluate("console.error('said'); setTimeout(() => { throw 'thrown' })")
        await eventually(lambda: len(first.errors) == 2, 10)  # the throw comes after evaluate
        assert first.errors == ["console: said", "uncaught: thrown"]
    async with browser_page(shared_chromium) as second:
        await served(second.page)
        assert await left_behind(second) == [None, ""]
        assert second.errors == []
