"""A run's page in a browser: headline by dimension, plots, errors, workers, the samples table."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_eval.failures import failure_class
from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import (
    append,
    cells,
    record,
    run_route,
    served,
    write_run,
    write_summary,
)

WAIT_MS = 10_000  # the live page polls every second; room for a loaded machine
ATTEMPTS = 120
ROWS = "#rows-table tr[data-index]"
LONG_QUESTION = "Count\nthe crates twice. " * 30


def attempt(i: int) -> dict[str, Any]:
    """The i-th attempt of the big run: every column varies with i, none sorts as the file does."""
    line = record(f"q{i // 3:03d}", i % 3, i % 4 != 0)
    calls = 1 + i % 3
    workers = ["w-a", "w-b"] if i % 2 == 0 else ["w-b", "w-a"]
    template = line["trajectory"]["model_calls"][0]
    line["trajectory"]["model_calls"] = [
        {**template, "worker": workers[n % 2]} for n in range(calls)
    ]
    line.update(model_calls=calls, tool_calls=i % 4, prompt_tokens=100 + 10 * i)
    line["latency_s"] = 1 + (37 * i % ATTEMPTS) / 10  # 37 is prime to 120: all distinct
    if i // 3 == 5:
        line["trajectory"]["messages"][0]["content"] = "How many pomegranates in 3 crates?"
    if i // 3 == 6:
        line["trajectory"]["messages"][0]["content"] = LONG_QUESTION
    if i == 100:
        line["answer"] = "31337"
    kind = {7: "timeout", 3: "max_turns"}.get(i % 10)
    if kind:
        line["correct"], line["reward"], line["answer"] = False, 0.0, None
        line["error"] = {"kind": kind, "class": failure_class(kind), "message": "stopped"}
    return line


BIG = [attempt(i) for i in range(ATTEMPTS)]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    write_run(runs / "big", BIG, finished=False)
    write_summary(runs / "big")
    write_run(runs / "live", BIG[:4], finished=False)
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    async with served([root]) as base:
        yield base


async def column(browser: BrowserPage, n: int) -> list[str]:
    """The n-th cell of each row shown."""
    return [row[n] for row in await cells(browser, ROWS)]


async def open_big(browser: BrowserPage, url: str) -> None:
    from playwright.async_api import expect

    await browser.page.goto(url + run_route("runs/big"))
    await expect(browser.page.locator("#row-count")).to_have_text(f"{ATTEMPTS} attempts")


async def searched(browser: BrowserPage, url: str, text: str, count: int) -> None:
    """The big run's page searched for `text`, once it shows the `count` attempts found."""
    from playwright.async_api import expect

    await open_big(browser, url)
    await browser.page.fill("#search", text)
    await browser.page.press("#search", "Enter")
    await expect(browser.page.locator("#row-count")).to_have_text(f"{count} attempts")


async def test_a_header_sorts_and_a_second_click_reverses(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    latencies = sorted(line["latency_s"] for line in BIG)
    header = page.locator('th[data-sort="latency_s"]')
    await header.click()
    await expect(header).to_contain_text("▲")
    assert [float(x) for x in await column(browser, 10)] == latencies[:50]
    await header.click()
    await expect(header).to_contain_text("▼")
    assert [float(x) for x in await column(browser, 10)] == latencies[::-1][:50]
    workers = page.locator('th[data-sort="workers"]')
    await workers.click()
    await expect(workers).to_contain_text("▲")
    firsts = [text.split(", ")[0] for text in await column(browser, 11)]
    assert firsts == ["w-a"] * 50  # the 60 attempts that called w-a first come first
    await workers.click()
    await expect(workers).to_contain_text("▼")
    firsts = [text.split(", ")[0] for text in await column(browser, 11)]
    assert firsts == ["w-b"] * 50
    assert browser.errors == []


async def test_next_page_shows_the_next_fifty(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    pager = page.locator("#pager")
    await expect(pager).to_contain_text("page 1 of 3")
    await page.click("#page-next")
    await expect(pager).to_contain_text("page 2 of 3")
    indexes = await page.locator(ROWS).evaluate_all("rows => rows.map((r) => r.dataset.index)")
    assert indexes == [str(i) for i in range(50, 100)]
    await page.click("#page-next")
    await expect(pager).to_contain_text("page 3 of 3")
    await expect(page.locator(ROWS)).to_have_count(20)
    await page.click("#page-prev")
    await expect(page.locator(f"{ROWS} >> nth=0")).to_have_attribute("data-index", "50")
    assert browser.errors == []


async def test_the_worker_filter_keeps_attempts_that_called_it(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    await page.select_option("#filter-worker", "w-b")
    # Attempts with two or three calls used both workers; one call used w-a on even rows.
    called = [i for i, line in enumerate(BIG) if line["model_calls"] > 1 or i % 2 == 1]
    await expect(page.locator("#row-count")).to_have_text(f"{len(called)} attempts")
    assert all("w-b" in text for text in await column(browser, 11))
    assert browser.errors == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [("POMEGRANATES", [15, 16, 17]), ("31337", [100])],  # a question, an answer
)
async def test_search_finds_question_and_answer_text(
    url: str, browser: BrowserPage, text: str, expected: list[int]
) -> None:
    page = browser.page
    await searched(browser, url, text, len(expected))
    indexes = await page.locator(ROWS).evaluate_all("rows => rows.map((r) => r.dataset.index)")
    assert indexes == [str(i) for i in expected]
    assert browser.errors == []


async def test_each_row_shows_its_question_and_answer(url: str, browser: BrowserPage) -> None:
    await searched(browser, url, "pomegranates", 3)
    shown = [row[1:3] for row in await cells(browser, ROWS)]
    # The parsed answer, or the final output where none was parsed (17 timed out).
    answers = [BIG[i]["answer"] or BIG[i]["trajectory"]["final_output"] for i in (15, 16, 17)]
    assert BIG[17]["answer"] is None
    assert shown == [["How many pomegranates in 3 crates?", answer] for answer in answers]
    assert browser.errors == []


async def test_a_long_question_is_shortened_to_one_line(url: str, browser: BrowserPage) -> None:
    page = browser.page
    await searched(browser, url, "crates twice", 3)
    cell = page.locator(f"{ROWS} td.question").first
    text = await cell.inner_text()
    flat = " ".join(LONG_QUESTION.split())
    assert text == flat[:199] + "…" and len(text) == 200
    height = await cell.evaluate("td => td.getBoundingClientRect().height")
    link = await page.locator(f"{ROWS} td a").first.evaluate("a => a.offsetHeight")
    assert height < 2 * link  # one line, not the whole question wrapped
    assert browser.errors == []


async def test_range_filters_bound_each_column(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    bounds = {
        "#min-model_calls": "2",
        "#max-model_calls": "2",
        "#min-tool_calls": "1",
        "#max-tokens": "1200",
        "#min-latency_s": "2",
        "#max-latency_s": "9",
    }
    for selector, value in bounds.items():
        await page.fill(selector, value)
        await page.press(selector, "Enter")

    def kept(line: dict[str, Any]) -> bool:
        tokens = line["prompt_tokens"] + line["completion_tokens"]
        return (line["model_calls"], line["tool_calls"] >= 1, tokens <= 1200) == (2, True, True)

    expected = [i for i, line in enumerate(BIG) if kept(line) and 2 <= line["latency_s"] <= 9]
    assert expected  # the bounds leave some attempts, not none
    await expect(page.locator("#row-count")).to_have_text(f"{len(expected)} attempts")
    indexes = await page.locator(ROWS).evaluate_all("rows => rows.map((r) => r.dataset.index)")
    assert indexes == [str(i) for i in expected]
    assert set(await column(browser, 7)) == {"2"}
    assert browser.errors == []


async def test_the_reports_plots_show_as_images(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    images = page.locator("#figures img.figure")
    # accuracy, latency, prompt and completion tokens: no workers.json here
    await expect(images).to_have_count(4)
    # decode() settles once the image is loaded: its width then, 0 for a broken image.
    widths = await images.evaluate_all(
        "all => Promise.all(all.map((img) => img.decode().then(() => img.naturalWidth, () => 0)))"
    )
    assert len(widths) == 4 and all(width > 0 for width in widths)
    captions = await page.locator("#figures figcaption").all_inner_texts()
    assert captions[1].startswith("Latency per attempt: p50")
    assert browser.errors == []


async def test_an_error_kind_filters_the_samples_to_it(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    await expect(page.locator("#errors tr[data-kind]")).to_have_count(2)  # drawn after the rows
    kinds = await cells(browser, "#errors tr[data-kind]")
    assert kinds == [["max_turns", "12", "model"], ["timeout", "12", "infrastructure"]]
    await page.click('#errors tr[data-kind="timeout"] button')
    await expect(page.locator("#filter-outcome")).to_have_value("timeout")
    await expect(page.locator("#row-count")).to_have_text("12 attempts")
    assert set(await column(browser, 6)) == {"timeout"}
    await expect(page.locator("#workers tr[data-worker]")).to_have_count(2)
    # Every attempt of two or more calls called both; one call went to w-a on even rows.
    workers = await cells(browser, "#workers tr[data-worker]")
    assert workers == [["w-a", "100", "", "", "", ""], ["w-b", "100", "", "", "", ""]]
    assert browser.errors == []


async def test_a_finished_runs_headline_has_three_dimensions(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await open_big(browser, url)
    sections = page.locator("#headline section[data-dimension]")
    await expect(sections).to_have_count(3)
    dimensions = await sections.evaluate_all("all => all.map((s) => s.dataset.dimension)")
    assert dimensions == ["quality", "stability", "efficiency"]
    await expect(page.locator("#headline .run-status")).to_have_text("finished · from summary.json")
    quality = page.locator('#headline section[data-dimension="quality"]')
    await expect(quality.locator("th")).to_contain_text(["accuracy", "pass@1", "mean reward"])
    efficiency = page.locator('#headline section[data-dimension="efficiency"]')
    await expect(efficiency).to_contain_text("attempts/s")  # the wall time of summary.json
    assert browser.errors == []


async def test_a_running_runs_headline_follows_its_attempts(
    url: str, root: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/live"))
    accuracy = page.locator('#headline section[data-dimension="quality"] tr >> nth=0')
    await expect(accuracy).to_contain_text("0.500 ±")  # attempt 3 stopped by max_turns: wrong
    await expect(page.locator("#headline section[data-dimension]")).to_have_count(3)
    await expect(page.locator("#headline .run-status")).to_contain_text("running · rebuilt")
    await expect(page.locator("#figures img.figure")).to_have_count(4)
    append(root / "live", BIG[4:8])
    await expect(accuracy).to_contain_text("0.571 ±", timeout=WAIT_MS)  # 4 of 7: 7 timed out
    await expect(page.locator("#errors tr[data-kind]")).to_have_count(2, timeout=WAIT_MS)
    assert browser.errors == []
