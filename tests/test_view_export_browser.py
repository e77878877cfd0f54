"""A run's static copy (`agent-eval view RUN --export DIR`) opened from file:// in Chromium, with no
server: the run page, its attempts page by page, a sample, the plots."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_eval.cli import app
from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import record, write_run

ODD = "set/1 <b>?#%"
CRATES = "A crate holds 16 bottles. How many in 3 crates?"
ROWS = "#rows-table tr[data-index]"
ATTEMPTS = 60


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The copy of a finished run of 60 attempts, one at a sample whose id is no file name."""
    attempts = [record(f"q{i // 3:02d}", i % 3, i % 4 != 0) for i in range(ATTEMPTS - 1)]
    attempts.append(record(ODD, 0, True))
    attempts[4]["trajectory"]["messages"][0]["content"] = "How many pomegranates in 3 crates?"
    write_run(tmp_path / "runs" / "r1", attempts)
    out = tmp_path / "copy"
    result = CliRunner().invoke(app, ["view", str(tmp_path / "runs" / "r1"), "--export", str(out)])
    assert result.exit_code == 0, result.output
    return out


async def test_the_copy_opens_on_the_run_page_without_a_server(
    copy: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto((copy / "index.html").as_uri())
    await expect(page.locator("h1")).to_have_text("r1")
    await expect(page.locator("#row-count")).to_have_text(f"{ATTEMPTS} attempts")
    await expect(page.locator(ROWS)).to_have_count(50)
    first = await page.locator(ROWS).nth(4).locator("td").all_inner_texts()
    assert first[:3] == ["q01", "How many pomegranates in 3 crates?", "19"]
    await expect(page.locator('#headline section[data-dimension="quality"]')).to_be_visible()
    images = page.locator("#figures img.figure")
    await expect(images).to_have_count(4)
    widths = await images.evaluate_all(
        "all => Promise.all(all.map((img) => img.decode().then(() => img.naturalWidth, () => 0)))"
    )
    assert all(width > 0 for width in widths)
    await page.click("#page-next")
    await expect(page.locator(ROWS)).to_have_count(ATTEMPTS - 50)
    await expect(page.locator(f"{ROWS} >> nth=-1 >> td >> nth=0")).to_have_text(ODD)
    assert browser.errors == []


async def test_a_samples_page_opens_from_the_list(copy: Path, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto((copy / "index.html").as_uri())
    await page.click("#page-next")
    await page.locator(f"{ROWS} a", has_text=ODD).click()
    await expect(page.locator("#attempts .attempt")).to_have_count(1)
    await expect(page.locator("#question")).to_have_text(CRATES)
    await expect(page.locator("#attempts .tool-args").first).to_have_text('{"a": 16, "b": 3}')
    await page.go_back()
    await expect(page.locator("#pager")).to_contain_text("page 2 of 2")  # where the user was
    await page.click("#page-prev")
    await page.locator(f"{ROWS} a", has_text="q00").first.click()
    await expect(page.locator("#attempts .attempt")).to_have_count(3)
    assert browser.errors == []


async def test_what_the_copy_does_not_hold_says_so(copy: Path, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto((copy / "index.html").as_uri())
    await expect(page.locator(ROWS)).to_have_count(50)
    await page.select_option("#filter-outcome", "wrong")
    await expect(page.locator("#row-count")).to_contain_text("not in this static copy")
    await page.goto((copy / "index.html").as_uri() + "#/")
    await expect(page.locator("#runs-table tr[data-run]")).to_have_count(1)
    assert browser.errors == []
