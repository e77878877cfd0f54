"""`agent-eval view` in a real browser: runs listed, rows filtered, transcripts shown as text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import append, cells, record, run_route, served, write_run

SCRIPT = "<script>window.__pwned=1</script>"
IMAGE = '<img src=x onerror="window.__pwned=1">'
HOSTILE = SCRIPT + IMAGE
# Long enough for a loaded browser; the live page polls every second.
WAIT_MS = 10_000


def hostile_record() -> dict[str, Any]:
    """An attempt whose id, question, answer and tool call are markup that would run script."""
    line = record(HOSTILE, 0, False)
    line["answer"] = HOSTILE
    trajectory = line["trajectory"]
    trajectory["messages"][0]["content"] = HOSTILE
    trajectory["messages"][1]["arguments"] = HOSTILE
    trajectory["messages"][2]["output"] = HOSTILE
    trajectory["tool_calls"] = [{"name": HOSTILE, "arguments": HOSTILE, "result": HOSTILE}]
    trajectory["final_output"] = HOSTILE
    return line


DONE = [
    record("s1", 0, True),
    record("s1", 1, False),
    record("s2", 0, False),
    record("s3", 0, True),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A folder of runs: one finished, one running, one hostile."""
    runs = tmp_path / "runs"
    write_run(runs / "done", DONE)
    write_run(runs / "live", DONE[:2], finished=False)
    write_run(runs / "hostile", [hostile_record(), record("s1", 0, True)])
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    """The view's app serving `root` on a free local port."""
    async with served([root]) as base:
        yield base


async def test_runs_page_lists_each_run(root: Path, url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url)
    await expect(page.locator("#runs-table tr[data-run]")).to_have_count(3)
    done = page.locator('tr[data-run="runs/done"]')
    await expect(done.locator(".status")).to_have_text("finished")
    texts = await done.locator("td").all_inner_texts()
    agent, model, attempts, accuracy = texts[1], texts[2], texts[4], texts[5]
    assert (agent, model, attempts) == ("math_calculator", "qwen-test", "4")
    written = json.loads((root / "done" / "summary.json").read_text())["quality"]["accuracy"]
    shown = [f"{100 * written[key]:.1f}%" for key in ("value", "low", "high")]
    assert accuracy == f"{shown[0]} [{shown[1]}, {shown[2]}]"
    live = page.locator('tr[data-run="runs/live"]')
    await expect(live.locator(".status")).to_have_text("running")
    assert browser.errors == []


async def test_filtering_wrong_answers_shows_only_them(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/done"))
    await expect(page.locator("#row-count")).to_have_text("4 attempts")
    await page.select_option("#filter-outcome", "wrong")
    await expect(page.locator("#row-count")).to_have_text("2 attempts")
    rows = page.locator("#rows-table tr[data-index]")
    await expect(rows).to_have_count(2)
    shown = [row[:5] for row in await cells(browser, "#rows-table tr[data-index]")]
    asked = "A crate holds 16 bottles. How many in 3 crates?"
    assert shown == [["s1", asked, "19", "1", "wrong"], ["s2", asked, "19", "0", "wrong"]]
    assert await page.locator("#rows-table tr.wrong").count() == 2
    assert browser.errors == []


async def test_a_sample_shows_its_tool_calls_and_workers(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/done"))
    await page.locator('#rows-table tr[data-index="2"] a').click()
    await expect(page.locator("#attempts > section")).to_have_count(1)
    attempt = page.locator("#attempt-0")
    await expect(attempt.locator(".answer")).to_have_text("19")
    tool = attempt.locator(":scope > .tool-call")
    await expect(tool.locator(".tool-args")).to_have_text('{"a": 16, "b": 3}')
    await expect(tool.locator(".tool-result")).to_have_text("48.0")
    calls = await cells(browser, "#attempt-0 tr.model-call")
    assert [row[3] for row in calls] == ["w0", "w1"]
    assert [row[4] for row in calls] == ["no tokens recorded"] * 2
    # The transcript's own tool call and output show as such, not as empty messages.
    messages = attempt.locator(".messages")
    await expect(messages.locator(".tool-call .tool-args")).to_have_text('{"a": 16, "b": 3}')
    await expect(messages.locator(".tool-output .tool-result")).to_have_text("48.0")
    await expect(messages.locator(".role-assistant pre")).to_have_text("48")
    await expect(attempt.locator(".final-output")).to_have_text("48")
    assert browser.errors == []


async def test_a_running_runs_count_grows(url: str, root: Path, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/live"))
    count = page.locator("#row-count")
    await expect(count).to_have_text("2 attempts")
    append(root / "live", [record("s2", 0, True), record("s3", 0, False)])
    await expect(count).to_have_text("4 attempts", timeout=WAIT_MS)
    await expect(page.locator("#rows-table tr[data-index]")).to_have_count(4)
    assert browser.errors == []


async def test_hostile_text_shows_verbatim_and_never_runs(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/hostile"))
    link = page.locator('#rows-table tr[data-index="0"] a')
    await expect(link).to_have_text(HOSTILE)
    await link.click()
    await expect(page.locator("h1")).to_have_text(HOSTILE)
    attempt = page.locator("#attempt-0")
    await expect(attempt.locator(".answer")).to_have_text(HOSTILE)
    await expect(attempt.locator(":scope > .tool-call .role")).to_have_text(HOSTILE)
    for selector in (".tool-args", ".tool-result"):
        await expect(attempt.locator(selector)).to_have_text([HOSTILE, HOSTILE])
    await expect(attempt.locator(".role-user pre")).to_have_text(HOSTILE)
    await expect(attempt.locator(".final-output")).to_have_text(HOSTILE)
    assert await page.evaluate("typeof window.__pwned") == "undefined"
    assert await page.locator("#app script, #app img").count() == 0
    assert browser.errors == []


async def test_a_missing_run_shows_an_error(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/absent"))
    await expect(page.locator("#error")).to_contain_text("runs/absent")


async def test_a_poll_answered_after_leaving_is_ignored(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import Route, expect

    page = browser.page
    await page.goto(url + run_route("runs/live"))
    await expect(page.locator("#row-count")).to_have_text("2 attempts")
    held: asyncio.Queue[Route] = asyncio.Queue()
    await page.route("**/api/runs/runs/live/summary", held.put_nowait)
    poll = await asyncio.wait_for(held.get(), WAIT_MS / 1000)
    await page.evaluate("location.hash = '#/'")
    await expect(page.locator("#runs-table")).to_be_visible()
    async with page.expect_event("requestfinished"):
        await poll.continue_()
    # Let the poll's callback run to its end, then make sure it broke nothing.
    await page.evaluate("new Promise((done) => setTimeout(done, 200))")
    await expect(page.locator("#runs-table tr[data-run]")).to_have_count(3)
    assert browser.errors == []
