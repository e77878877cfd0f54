"""The compare page in a real browser: two runs picked, their flips listed, each transcript a click
away, and hostile names shown as text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import cells, record, served, write_run

# A folder name cannot hold "/", so the run id's markup has none; the sample id's can.
HOSTILE_ID = '<img src=x onerror="window.__pwned=1">'
HOSTILE = "<script>window.__pwned=1</script>" + HOSTILE_ID


# B fixes s1#1 and breaks s2#0; each answer names its run, so a transcript shows whose it is.
BEFORE = [
    record("s1", 0, True, "A: 48"),
    record("s1", 1, False, "A: 19"),
    record("s2", 0, True, "A: 7"),
]
AFTER = [
    record("s1", 0, True, "B: 48"),
    record("s1", 1, True, "B: 48"),
    record("s2", 0, False, "B: 8"),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two runs that flip, one that shares no sample with them, a watch directory, a hostile run."""
    runs = tmp_path / "runs"
    write_run(runs / "before", BEFORE)
    write_run(runs / "after", AFTER)
    write_run(runs / "other", [record("x1", 0, True), record("x2", 0, False)])
    (runs / "watch").mkdir()
    (runs / "watch" / "decisions.jsonl").write_text("")
    write_run(runs / HOSTILE_ID, [record(HOSTILE, 0, True, HOSTILE)])
    write_run(runs / "plain", [record(HOSTILE, 0, False, "19")])
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    async with served([root]) as base:
        yield base


def compare_route(a: str, b: str) -> str:
    """The hash route of the compare page, as the runs page builds it."""
    return f"#/compare/{quote(a, safe='')}/{quote(b, safe='')}"


async def test_two_picked_runs_show_their_flips(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url)
    button = page.locator("#compare")
    await expect(button).to_be_disabled()
    await expect(page.locator('tr[data-run="runs/watch"] input.pick')).to_have_count(0)
    for run in ("runs/before", "runs/other", "runs/after"):
        await page.locator(f'#runs-table tr[data-run="{run}"] input.pick').check()
    await expect(button).to_be_disabled()  # three picked
    await page.locator('#runs-table tr[data-run="runs/other"] input.pick').uncheck()
    await expect(button).to_be_enabled()
    await button.click()
    await expect(page).to_have_url(url + compare_route("runs/before", "runs/after"))
    await expect(page.locator("#flips-a tr[data-sample]")).to_have_count(1)
    assert await cells(browser, "#flips-a tr[data-sample]") == [
        ["s2", "0", "A: 7", "B: 8", "1.00", "0.00", "A B"]
    ]
    assert await cells(browser, "#flips-b tr[data-sample]") == [
        ["s1", "1", "A: 19", "B: 48", "0.00", "1.00", "A B"]
    ]
    accuracy = await cells(browser, '#compare-metrics tr[data-metric="accuracy"]')
    assert accuracy[0][:4] == ["accuracy", "0.667", "0.667", "+0.000"]
    await expect(page.locator("#compare-method")).to_contain_text("3 attempts at 2 shared samples")
    assert browser.errors == []


async def test_each_flip_links_to_both_transcripts(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + compare_route("runs/before", "runs/after"))
    flipped = page.locator('#flips-b tr[data-sample="s1"]')
    await flipped.locator("a.transcript-a").click()
    await expect(page).to_have_url(url + "#/run/runs%2Fbefore/sample/s1/attempt/1")
    await expect(page.locator("h1")).to_have_text("s1")
    await expect(page.locator("#attempts")).to_contain_text("A: 19")
    await page.go_back()
    await flipped.locator("a.transcript-b").click()
    await expect(page).to_have_url(url + "#/run/runs%2Fafter/sample/s1/attempt/1")
    await expect(page.locator("#attempts")).to_contain_text("B: 48")
    await expect(page.locator("#attempts")).not_to_contain_text("A: 19")
    assert browser.errors == []


async def test_no_flips_and_no_pairs_are_said_plainly(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + compare_route("runs/before", "runs/before"))
    await expect(page.locator("#no-flips")).to_contain_text("Nothing flipped")
    await page.goto(url + compare_route("runs/before", "runs/other"))
    await expect(page.locator("#no-pairs")).to_contain_text("share no attempt")
    await expect(page.locator("#flips-a, #flips-b")).to_have_count(0)
    await page.goto(url + compare_route("runs/before", "runs/absent"))
    await expect(page.locator("#error")).to_contain_text("runs/absent")


async def test_hostile_names_show_as_text(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    hostile = "runs/" + HOSTILE_ID
    await page.goto(url + compare_route(hostile, "runs/plain"))
    await expect(page.locator("#run-a")).to_have_text(hostile)
    await expect(page.locator("#flips-a tr[data-sample]")).to_have_count(1)
    assert await cells(browser, "#flips-a tr[data-sample]") == [
        [HOSTILE, "0", HOSTILE, "19", "1.00", "0.00", "A B"]
    ]
    await page.locator("#flips-a a.transcript-a").click()
    await expect(page.locator("h1")).to_have_text(HOSTILE)
    assert await page.evaluate("typeof window.__pwned") == "undefined"
    assert await page.locator("#app script, #app img").count() == 0
    assert browser.errors == []
