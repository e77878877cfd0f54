"""`agent-eval report`'s page in a real browser: a run's hostile names show as text, never run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.run.config import load_run_config, save_run_config
from tests.helpers.browser import BrowserPage
from tests.helpers.reports import make_run, record, report

SCRIPT = "<script>window.__pwned=1</script>"
IMAGE = '<img src=x onerror="window.__pwned=1">'


@pytest.fixture
def hostile_run(tmp_path: Path) -> Path:
    """A finished run whose dataset, sample ids and answers are markup that would run script."""
    records = [
        record(SCRIPT, 0, correct=False, answer=IMAGE),
        record(IMAGE, 0, correct=False, answer=SCRIPT),
        record("s2", 0, correct=True),
    ]
    run = make_run(tmp_path / "hostile", records, n_samples=1)
    # The dataset's name is in the page's title and heading: make it hostile too.
    flags = {"eval.n_samples": 1, "agent.name": "math_calculator", "dataset.name": SCRIPT + IMAGE}
    save_run_config(load_run_config(None, flags, [f"output.dir={run}"]), run)
    summary = {"efficiency": {"throughput": {"wall_time_s": 2.0}}}
    (run / "summary.json").write_text(json.dumps(summary))
    return run


async def test_hostile_names_show_as_text_and_never_run(
    hostile_run: Path, browser: BrowserPage
) -> None:
    result = report(hostile_run)
    assert result.exit_code == 0, result.output
    page = browser.page
    await page.goto((hostile_run / "report.html").as_uri())

    title = f"math_calculator on {SCRIPT}{IMAGE}"
    assert await page.title() == f"agent-eval report: {title}"
    assert await page.locator("h1").inner_text() == title
    rows = page.locator("#never-solved tr:has(td)")
    shown = [await row.locator("td").all_inner_texts() for row in await rows.all()]
    assert sorted(shown) == sorted([[SCRIPT, IMAGE], [IMAGE, SCRIPT]])
    assert await page.evaluate("typeof window.__pwned") == "undefined"
    assert await page.locator("body script, body img").count() == 0
    assert browser.errors == []
