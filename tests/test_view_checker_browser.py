"""The view of a BFCL run in a real browser: on the sample page each attempt's category and, when
wrong, the error type and message BFCL's checker gave, all as text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import BrowserPage
from tests.helpers.reports import EVIL
from tests.helpers.view_runs import record, run_route, served, write_run

WRONG_COUNT = "simple_function_checker:wrong_count"


def bfcl_line(attempt: int, error_type: str | None = None, error: str | None = None) -> Any:
    """A samples.jsonl line of a BFCL attempt, right when its checker found no error."""
    found = {"category": "simple_python", "error_type": error_type, "error": error}
    return {**record("simple_python_0", attempt, error_type is None), "benchmark": found}


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    runs = tmp_path / "runs"
    lines = [bfcl_line(0), bfcl_line(1, WRONG_COUNT, EVIL)]
    write_run(runs / "bfcl", lines, settings={"agent.name": "bfcl"})
    async with served([runs]) as base:
        yield base


async def test_each_attempt_says_what_bfcls_checker_found(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/bfcl") + "/sample/simple_python_0")
    await expect(page.locator(".checker-category")).to_have_text(["simple_python"] * 2)
    await expect(page.locator(".checker-error-type")).to_have_text(["none: accepted", WRONG_COUNT])
    await expect(page.locator("#attempt-1 .checker-error")).to_have_text(EVIL)  # as text
    await expect(page.locator("#attempt-0 .checker-error")).to_have_count(0)
    await expect(page.locator(".injection-suite")).to_have_count(0)
    assert await page.locator("script").count() == 1  # the app's own, nothing injected
    assert browser.errors == []
