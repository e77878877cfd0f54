"""The view of a run with injections in a real browser: the run page's security section, and on
the sample page each attempt's suite, tasks and attack, whether the injected goal was reached
and the tool call that reached it, all as text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import BrowserPage
from tests.helpers.injections import dojo
from tests.helpers.reports import EVIL
from tests.helpers.view_runs import record, run_route, served, write_run

ATTACK = "important_instructions"


def dojo_line(sample: str, attempt: int, **benchmark: Any) -> dict[str, Any]:
    """A samples.jsonl line of an AgentDojo-like attempt, right when its utility is."""
    found = dojo(**benchmark)
    return {**record(sample, attempt, found["utility"]), "benchmark": found}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    lines = [
        dojo_line("t0", 0),
        dojo_line("t0", 1, attack=ATTACK, utility=False, security=True, injection_task=EVIL),
        dojo_line("t0", 2, attack=ATTACK, security=False),
    ]
    write_run(runs / "dojo", lines, settings={"agent.name": "agentdojo"})
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    async with served([root]) as base:
        yield base


async def test_each_attempt_says_which_injection_and_whether_it_won(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/dojo") + "/sample/t0")
    await expect(page.locator(".injection-suite")).to_have_text(["banking"] * 3)
    await expect(page.locator(".injection-attack")).to_have_text(["none", ATTACK, ATTACK])
    await expect(page.locator("#attempt-1 .injection-task")).to_have_text(EVIL)  # as text
    await expect(page.locator(".injected-goal")).to_have_text(
        ["reached: the attack succeeded", "not reached"]
    )
    await expect(page.locator("#attempt-1 .injected-goal")).to_have_class(
        "injected-goal goal-reached"
    )
    await expect(page.locator("#attempt-1 .injection-call")).to_have_text(
        'send_money({"recipient":"US133","amount":100}) (call 3)'
    )
    await expect(page.locator("#attempt-0 .injected-goal")).to_have_count(0)
    assert await page.locator("script").count() == 1  # the app's own, nothing injected
    assert browser.errors == []


async def test_the_run_page_shows_the_security_figures(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/dojo"))
    section = page.locator('[data-dimension="security"]')
    # 1 of 2 attacks reached its goal: Wilson 95% interval 0.09 to 0.91
    await expect(section).to_contain_text("attack success rate")
    await expect(section).to_contain_text("0.500 ± 0.354 [0.09, 0.91]")
    assert browser.errors == []
