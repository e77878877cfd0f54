"""Robustness in a browser: the run page's accuracy per perturbation kind and the samples that
break, each side a link to its sample page; a variant's page linking back to its original."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from agent_eval.metrics import wilson_interval
from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import cells, perturbed, record, run_route, served, variant, write_run

HOSTILE = "<img src=x onerror=\"window.pwned='id'\">&'"
"""p1's sample id: markup, quotes and an ampersand, never a slash (ids are one URL segment)."""
ANSWER = '<b id="bold">19</b><img src=x onerror="window.pwned=\'answer\'">'
DROPS = ("[-50.0%, 100.0%]", "[-50.0%, 50.0%]")
"""The bootstrap intervals summary.json gives the drops of the perturbed run's two kinds."""
MANY = 23
"""Originals of the run whose broken pairs fill more than one page (of 20)."""


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def interval(right: int, n: int) -> str:
    found = wilson_interval(right, n)
    return f"{pct(found.value)} [{pct(found.low)}, {pct(found.high)}]"


def sample_route(run: str, sample: str, attempt: int | None = None) -> str:
    """The hash route of a sample's page, as the app's sampleHref builds it."""
    route = run_route(run) + "/sample/" + quote(sample, safe="~'()*!")
    return route if attempt is None else f"{route}/attempt/{attempt}"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs / "perturbed", perturbed(HOSTILE, ANSWER))
    many = [record(f"m{i:02d}", 0, True) for i in range(MANY)]
    many += [variant(f"m{i:02d}", "names", 0, False) for i in range(MANY)]
    write_run(runs / "many", many)
    write_run(runs / "plain", [record("s1", 0, True), record("s2", 0, False)])
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    async with served([root]) as base:
        yield base


async def open_run(browser: BrowserPage, url: str, run: str) -> None:
    from playwright.async_api import expect

    await browser.page.goto(url + run_route(run))
    await expect(browser.page.locator("#row-count")).not_to_be_empty()


async def test_the_robustness_part_shows_accuracy_per_kind(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_run(browser, url, "runs/perturbed")
    await expect(page.locator("#robustness")).to_be_visible()
    rows = page.locator("#robustness-kinds tr[data-kind]")
    await expect(rows).to_have_count(3)
    assert await cells(browser, "#robustness-kinds tr[data-kind]") == [
        ["originals", interval(4, 7), "7", "", "", "", "", "", "", ""],
        # summary.json's figures, kinds by name, each drop with its bootstrap interval.
        ["distractor", interval(2, 5), "5", "3", "1", "5", "2", "1", f"+20.0% {DROPS[0]}", "1.00"],
        ["numbers", interval(5, 6), "6", "3", "1", "5", "1", "1", f"0.0% {DROPS[1]}", "1.00"],
    ]
    await expect(page.locator("#robust-accuracy .num")).to_have_text(interval(2, 6))
    await expect(page.locator("#robustness .caption")).to_contain_text("from summary.json")
    assert browser.errors == []


async def test_a_broken_pairs_links_open_the_original_and_the_variant(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_run(browser, url, "runs/perturbed")
    pairs = page.locator("#broken tr.broken-pair")
    await expect(page.locator("#broken-count")).to_have_text(
        "3 pairs right on the original, wrong on the variant"
    )
    await expect(pairs).to_have_count(3)
    first = pairs.nth(0)
    await expect(first.locator("td").nth(0)).to_have_text("numbers")
    await expect(first.locator(".original .answer")).to_have_text("48")
    await expect(first.locator(".variant .answer")).to_have_text(ANSWER)
    await expect(pairs.locator(".variant a")).to_have_text(
        [f"{HOSTILE}~numbers", f"{HOSTILE}~distractor", f"{HOSTILE}~distractor"]
    )

    await first.locator(".original a").click()
    await expect(page.locator("h1")).to_have_text(HOSTILE)
    await expect(page.locator("#attempt-0")).to_have_class("attempt correct focused")
    assert page.url == url + sample_route("runs/perturbed", HOSTILE, 0)

    await page.go_back()
    await pairs.nth(0).locator(".variant a").click()
    await expect(page.locator("h1")).to_have_text(f"{HOSTILE}~numbers")
    await expect(page.locator("#attempt-0")).to_have_class("attempt wrong focused")
    await expect(page.locator("#attempt-0 .answer")).to_have_text(ANSWER)
    assert page.url == url + sample_route("runs/perturbed", f"{HOSTILE}~numbers", 0)
    assert await page.evaluate("window.pwned") is None
    assert await page.locator("#bold").count() == 0
    assert browser.errors == []


async def test_a_variants_page_links_back_to_its_original(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + sample_route("runs/perturbed", f"{HOSTILE}~distractor"))
    await expect(page.locator("#variant-of")).to_have_text(f"a distractor variant of {HOSTILE}")
    await expect(page.locator("#variants")).to_have_count(0)
    await page.click("#original-link")
    await expect(page.locator("h1")).to_have_text(HOSTILE)
    await expect(page.locator("#variant-of")).to_have_count(0)
    rows = page.locator("#variants-table tr[data-variant]")
    await expect(rows.locator(".variant-link")).to_have_text(
        [f"{HOSTILE}~numbers", f"{HOSTILE}~distractor"]
    )
    assert await cells(browser, "#variants-table tr[data-variant]") == [
        ["numbers", f"{HOSTILE}~numbers", "#0 wrong#1 correct"],
        ["distractor", f"{HOSTILE}~distractor", "#0 wrong#1 wrong"],
    ]
    await rows.nth(0).locator(".attempt-outcome").nth(1).click()
    await expect(page.locator("h1")).to_have_text(f"{HOSTILE}~numbers")
    await expect(page.locator("#attempt-1")).to_have_class("attempt correct focused")
    assert await page.evaluate("window.pwned") is None
    assert browser.errors == []


async def test_the_attempts_filter_to_originals_or_one_kind(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_run(browser, url, "runs/perturbed")
    await expect(page.locator("#row-count")).to_have_text("20 attempts")
    await page.select_option("#filter-perturbation", "numbers")
    await expect(page.locator("#row-count")).to_have_text("6 attempts")
    kinds = page.locator("#rows-table td.kind")
    await expect(kinds).to_have_text(["numbers"] * 6)
    await page.select_option("#filter-perturbation", "original")
    await expect(page.locator("#row-count")).to_have_text("8 attempts")
    await expect(kinds).to_have_text(["original"] * 8)
    assert browser.errors == []


async def test_a_run_without_variants_shows_no_robustness(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_run(browser, url, "runs/plain")
    await expect(page.locator("#row-count")).to_have_text("2 attempts")
    await expect(page.locator("#robustness")).to_be_hidden()
    await expect(page.locator("#filter-perturbation")).to_be_hidden()
    await expect(page.locator("#rows-table td.kind")).to_have_count(0)
    assert browser.errors == []


async def test_broken_pairs_past_a_page_are_paged(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_run(browser, url, "runs/many")
    pairs = page.locator("#broken tr.broken-pair .original a")
    await expect(page.locator("#broken-count")).to_have_text(
        f"{MANY} pairs right on the original, wrong on the variant"
    )
    await expect(pairs).to_have_count(20)
    await page.click("#broken-next")
    await expect(pairs).to_have_text([f"m{i:02d}" for i in range(20, MANY)])
    await page.click("#broken-prev")
    await expect(pairs).to_have_count(20)
    await expect(pairs.nth(0)).to_have_text("m00")
    assert browser.errors == []
