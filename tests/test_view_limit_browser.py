"""The sample page of an attempt stopped past one of eval.limits, in a real browser: its error
shows, and a row names the limit it passed."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import record, run_route, served, write_run

MESSAGE = "the attempt went past its tokens limit (eval.limits.tokens=40); it used 1 model call(s)"


async def test_an_attempt_past_a_limit_names_the_limit(
    tmp_path: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    stopped = record("word_problems-1", 0, False)
    error = {"kind": "limit_exceeded", "class": "model", "message": MESSAGE, "worker": None}
    stopped["error"] = stopped["trajectory"]["error"] = {**error, "limit": "tokens"}
    finished = record("word_problems-1", 1, True)
    write_run(tmp_path / "runs" / "limits", [stopped, finished])
    async with served([tmp_path / "runs"]) as url:
        page = browser.page
        await page.goto(url + run_route("runs/limits") + "/sample/word_problems-1")
        await expect(page.locator("#attempt-0 .limit")).to_have_text("tokens")
        await expect(page.locator("#attempt-0 .error")).to_contain_text(MESSAGE)
        # An attempt that passed no limit has no such row.
        await expect(page.locator("#attempt-1 .answer")).to_have_text("48")
        await expect(page.locator("#attempt-1 .limit")).to_have_count(0)
    assert browser.errors == []
