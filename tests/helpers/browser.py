"""A real headless Chromium for tests, driven by Playwright: the system's, not Playwright's own.

Playwright's browser downloads are out of reach where these tests run, so it drives the Chromium
the OS packages install (Debian: `apt-get install chromium`); `AGENT_EVAL_CHROMIUM` names another.
Each test process starts Playwright and Chromium once (~0.75 s of CPU apiece) and gives each test
a browser context of its own: its own cookies, storage, cache and pages, as a new browser has.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from playwright.async_api import Browser, ConsoleMessage, Error, Page, Playwright

REQUIRE = "AGENT_EVAL_REQUIRE_BROWSER"
# Docker gives /dev/shm 64 MB, which a renderer can outgrow and crash; /tmp has room. Nothing else
# is needed: Playwright already passes --no-sandbox (root has no sandbox) and headless has no GPU.
LAUNCH_ARGS = ["--disable-dev-shm-usage"]
PATIENCE_MS = 30_000
"""How long a page's expectations wait for it: a test states what a page shows, not how soon (a
page that reads a benchmark's dataset takes seconds on a loaded machine)."""


@dataclass
class BrowserPage:
    """A page in headless Chromium, and the errors its scripts and console reported."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def on_page_error(self, error: Error) -> None:
        self.errors.append(f"uncaught: {error}")


def unavailable(reason: str) -> NoReturn:
    """Skip the test; fail it instead where CI set AGENT_EVAL_REQUIRE_BROWSER."""
    if os.environ.get(REQUIRE):
        pytest.fail(f"{reason}, but {REQUIRE} is set: browser tests must run here")
    pytest.skip(reason)


def chromium_path() -> str:
    """The Chromium executable to drive; skips (or fails) the test when there is none."""
    names = [os.environ.get("AGENT_EVAL_CHROMIUM") or "chromium", "chromium-browser"]
    for name in names:
        if found := shutil.which(name):
            return found
    unavailable(f"no Chromium found as {' or '.join(names)} (Debian: apt-get install chromium)")


@dataclass
class Chromium:
    """Playwright and the headless Chromium it drives, shared by the tests of one process."""

    playwright: Playwright
    executable: str
    running: Browser | None = None

    async def browser(self) -> Browser:
        """The running browser, launched anew if there is none (a test that crashed it)."""
        if self.running is None or not self.running.is_connected():
            self.running = await self.playwright.chromium.launch(
                executable_path=self.executable, headless=True, args=LAUNCH_ARGS
            )
        return self.running


@asynccontextmanager
async def chromium() -> AsyncIterator[Chromium]:
    """Playwright, with a Chromium launched on first use and closed on exit."""
    try:
        from playwright.async_api import async_playwright, expect
    except ImportError:
        unavailable("playwright is not installed (pip install -e '.[test]')")
    executable = chromium_path()
    expect.set_options(timeout=PATIENCE_MS)
    async with async_playwright() as playwright:
        shared = Chromium(playwright, executable)
        try:
            yield shared
        finally:
            if shared.running is not None:
                await shared.running.close()


@asynccontextmanager
async def browser_page(shared: Chromium) -> AsyncIterator[BrowserPage]:
    """A fresh page in a browser context of its own, closed on exit with all its pages."""
    context = await (await shared.browser()).new_context()
    try:
        watched = BrowserPage(await context.new_page())
        watched.page.on("console", watched.on_console)
        watched.page.on("pageerror", watched.on_page_error)
        yield watched
    finally:
        await context.close()
