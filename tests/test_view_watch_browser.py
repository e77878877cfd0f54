"""The watch page in a browser: points link to their runs; new checkpoints appear as made."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.helpers.browser import BrowserPage
from tests.helpers.view_runs import cells, served
from tests.helpers.watches import (
    age,
    bounded_steps,
    checkpoint,
    schedule,
    three_steps,
    written,
)

# Long enough for a loaded browser; the page polls every second.
WAIT_MS = 10_000


def watch_route(watch_id: str) -> str:
    """The hash route of a watch directory's page."""
    return "#/watch/" + quote(watch_id, safe="")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A finished watch directory of three checkpoints, and a running one of the same three."""
    runs = tmp_path / "runs"
    three_steps(runs / "done")
    age(*written(runs / "done"))
    three_steps(runs / "live")
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    async with served([root]) as base:
        yield base


async def test_each_point_links_to_its_steps_run(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url)
    await page.locator('#runs-table tr[data-run="runs/done"] a').click()
    await expect(page).to_have_url(url + watch_route("runs/done"))
    await expect(page.locator("#watch-status")).to_have_text("3 checkpoints, finished")
    probes = page.locator("#curve a.point.probe")
    await expect(probes).to_have_count(3)
    assert [await p.get_attribute("data-step") for p in await probes.all()] == ["100", "200", "300"]
    fulls = page.locator("#curve a.point.full")
    assert [await p.get_attribute("data-step") for p in await fulls.all()] == ["100", "200"]
    await expect(page.locator("#curve .whisker")).to_have_count(2)
    await expect(fulls.nth(1).locator("title")).to_have_text(
        "step 200: full evaluation 80.0% [58.4%, 91.9%]"
    )
    assert await cells(browser, "#checkpoints tr[data-step]") == [
        ["100", "50.0%", "", "first", "60.0% [38.7%, 78.1%]", "probe full"],
        ["200", "90.0%", "+0.400", "change", "80.0% [58.4%, 91.9%]", "probe full"],
        ["300", "90.0%", "0.000", "none (none)", "", "probe"],
    ]
    await page.locator('#curve a.point.full[data-step="200"]').click()
    await expect(page).to_have_url(url + "#/run/" + quote("runs/done/step-200/full", safe=""))
    await expect(page.locator("#rows-table tr[data-index]")).to_have_count(5)
    assert browser.errors == []


async def test_a_probe_point_links_to_the_probe(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + watch_route("runs/done"))
    await page.locator('#curve a.point.probe[data-step="200"]').click()
    await expect(page.locator("h1")).to_have_text("runs/done/step-200/probe")
    await expect(page.locator("#rows-table tr[data-index]")).to_have_count(2)
    assert browser.errors == []


async def test_a_running_watch_shows_new_checkpoints(
    url: str, root: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + watch_route("runs/live"))
    rows = page.locator("#checkpoints tr[data-step]")
    await expect(rows).to_have_count(3)
    await expect(page.locator("#watch-status")).to_have_text("3 checkpoints, running")
    assert checkpoint(schedule(root / "live"), 400, (4, 10), (7, 20))
    await expect(rows).to_have_count(4, timeout=WAIT_MS)
    assert (await cells(browser, '#checkpoints tr[data-step="400"]'))[0][:4] == [
        "400",
        "40.0%",
        "-0.500",
        "change",
    ]
    await expect(page.locator('#curve a.point.full[data-step="400"]')).to_have_count(1)
    await expect(page.locator("#curve a.point.probe")).to_have_count(4)
    assert browser.errors == []


async def test_a_bounded_watch_shows_its_forecast_band_and_verdicts(
    url: str, root: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    entries = bounded_steps(root / "bounded")
    age(*written(root / "bounded"))
    page = browser.page
    await page.goto(url + watch_route("runs/bounded"))
    await expect(page.locator("#watch-status")).to_have_text("4 checkpoints, finished")
    band = page.locator("#curve .forecast")
    await expect(band.locator("polygon")).to_have_count(1)
    forecast = entries[-1]["forecast"]
    plateau = forecast["plateau"]
    levelling = "" if plateau is None else f"; plateau {100 * plateau:.1f}%"
    if forecast["settles_at"] is not None:
        levelling += f", settled by step {forecast['settles_at']}"
    await expect(band.locator("title")).to_have_text(
        f"forecast ({forecast['curve']}): {100 * forecast['mean'][-1]:.1f}% at step 500, 90% "
        f"band {100 * forecast['low'][-1]:.1f}% to {100 * forecast['high'][-1]:.1f}%{levelling}"
    )
    await expect(page.locator("#curve .legend")).to_contain_text("forecast (90% band)")
    # The unprobed first checkpoint has no probe point; the others have one each.
    await expect(page.locator("#curve a.point.probe")).to_have_count(3)
    rows = await cells(browser, "#checkpoints tr[data-step]")
    assert [row[2].split(" ")[0] for row in rows] == [
        "", *(e["comparisons"]["reference"]["verdict"].split(" ")[0] for e in entries[1:]),
    ]  # fmt: skip
    assert browser.errors == []


async def test_a_corrupt_line_shows_its_number(url: str, root: Path, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    with (root / "done" / "decisions.jsonl").open("a") as decisions:
        decisions.write("not json\n")
    page = browser.page
    await page.goto(url + watch_route("runs/done"))
    await expect(page.locator("#error")).to_contain_text("decisions.jsonl line 4 is not a decision")
