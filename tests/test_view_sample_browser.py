"""The sample page in a real browser: question, gold and agreement, tool calls in every shape,
and a multi-turn run's heatmap leading into the turn it shows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import BrowserPage
from tests.test_view_sample import CRATES, answered, session_record, stopped_session
from tests.view_runs import record, run_route, served, write_run


def untyped_calls() -> dict[str, Any]:
    """An attempt whose tool calls have no `type`: a bare {name, arguments} as some SDKs dump,
    and chat-completions `tool_calls` on an assistant message answered by a `role: tool` one."""
    line = record("word_problems-1", 0, True)
    line["trajectory"]["messages"] = [
        {"role": "user", "content": CRATES},
        {"name": "multiply", "arguments": '{"a": 16, "b": 3}', "call_id": "c1"},
        {"call_id": "c1", "output": "48.0", "type": "function_call_output"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 48, "b": 0}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "48.0"},
        {"role": "assistant", "content": "48"},
    ]
    return line


TWO_EACH = ["19", "48", "19", "48"]
"""Answers that tie 2-2 for the most votes: neither is the majority."""


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A run on the shipped word problems, one with untyped tool calls, one of sessions."""
    runs = tmp_path / "runs"
    attempts = [
        answered("word_problems-1", 0, "48", True),
        answered("word_problems-1", 1, "48", True),
        answered("word_problems-1", 2, "19", False),
    ]
    attempts += [answered("word_problems-2", i, a, a == "48") for i, a in enumerate(TWO_EACH)]
    write_run(runs / "single", attempts, finished=False, settings={"dataset.name": "word_problems"})
    write_run(
        runs / "untyped",
        [untyped_calls()],
        finished=False,
        settings={"dataset.name": "word_problems"},
    )
    sessions = [
        session_record("eggs", 0, ["84", "168", "168", "148"]),
        session_record("eggs", 1, ["84", "168", "160", "140"]),
    ]
    write_run(runs / "chat", sessions, finished=False, settings={"agent.name": "multi_turn_chat"})
    down = [sessions[0], stopped_session(1, schema=2), stopped_session(2, schema=1)]
    write_run(runs / "down", down, finished=False, settings={"agent.name": "multi_turn_chat"})
    return runs


@pytest.fixture
async def url(root: Path) -> AsyncIterator[str]:
    async with served([root]) as base:
        yield base


async def test_the_question_gold_and_agreement_show(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/single") + "/sample/word_problems-1")
    await expect(page.locator("#question")).to_have_text(CRATES)
    await expect(page.locator("#attempts .gold")).to_have_text(["48", "48", "48"])
    await expect(page.locator("#attempt-2 .answer")).to_have_text("19")
    await expect(page.locator("#attempts .agreement")).to_have_text(
        [
            "agrees with 1 of 2 others (majority)",
            "agrees with 1 of 2 others (majority)",
            "agrees with 0 of 2 others",
        ]
    )
    assert await page.locator("#gold-note").count() == 0
    assert browser.errors == []


async def test_a_tie_for_the_most_votes_shows_as_a_tie(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/single") + "/sample/word_problems-2")
    tied = "agrees with 1 of 3 others (tied for the majority with 1 other answer)"
    await expect(page.locator("#attempts .agreement")).to_have_text([tied] * 4)
    assert browser.errors == []


async def test_a_tool_call_without_a_type_shows_whole(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/untyped") + "/sample/word_problems-1")
    calls = page.locator("#attempt-0 .messages .tool-call")
    await expect(calls.locator(":scope > .role")).to_have_text(
        ["tool call multiply", "tool call add"]
    )
    await expect(calls.locator(".tool-args")).to_have_text(
        ['{"a": 16, "b": 3}', '{"a": 48, "b": 0}']
    )
    await expect(calls.locator(".tool-result")).to_have_text(["48.0", "48.0"])
    # Each result shows once, beside its call; an assistant message that only calls is not shown.
    await expect(page.locator("#attempt-0 .messages .tool-result")).to_have_count(2)
    await expect(page.locator("#attempt-0 .messages .role-assistant pre")).to_have_text("48")
    assert browser.errors == []


async def test_a_heatmap_cell_opens_its_turn(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/chat"))
    heatmap = page.locator("#session-heatmap")
    rows = heatmap.locator("tbody tr")
    await expect(rows).to_have_count(2)
    shades = (
        await rows.nth(1).locator("td.cell").evaluate_all("cells => cells.map(c => c.className)")
    )
    assert shades == [
        "cell reward-full",
        "cell reward-full",
        "cell reward-none challenge",
        "cell reward-none",
    ]
    await rows.nth(1).locator('td.cell[data-turn="2"] a').click()
    await expect(page).to_have_url(url + run_route("runs/chat") + "/sample/eggs/attempt/1/turn/2")
    attempt = page.locator("#attempt-1")
    await expect(attempt).to_have_class("attempt wrong focused")
    await expect(page.locator(".attempt.focused")).to_have_count(1)
    focused = page.locator(".turn.focused")
    await expect(focused).to_have_count(1)
    await expect(attempt.locator(".turn.focused")).to_have_attribute("data-turn", "2")
    await expect(focused.locator(".turn-answer")).to_have_text("160")
    await expect(focused.locator(".turn-gold")).to_have_text("168")
    await expect(focused.locator(".turn-reward")).to_have_text("0.00")
    await expect(focused.locator(".role-user pre")).to_have_text("Are you sure? Check again.")
    await expect(focused).to_be_in_viewport()
    challenges = page.locator("#attempts .turn.challenge")
    await expect(challenges).to_have_count(2)  # turn 2 of each attempt
    assert {await c.get_attribute("data-turn") for c in await challenges.all()} == {"2"}
    # Turn 1's messages hold its tool call, with the call's result.
    turn = attempt.locator('.turn[data-turn="1"]')
    await expect(turn.locator(".tool-call .tool-result")).to_have_text("168.0")
    assert browser.errors == []


async def test_an_unscored_session_shows_as_unscored_not_wrong(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/down"))
    rows = page.locator("#session-heatmap tbody tr")
    await expect(rows).to_have_count(3)
    missing = ["cell reward-missing"] * 2 + ["cell reward-missing challenge", "cell reward-missing"]
    for row in (1, 2):  # the outage's attempts, as schema 2 and as schema 1 wrote them
        cells = rows.nth(row).locator("td.cell")
        assert await cells.evaluate_all("cells => cells.map(c => c.className)") == missing
    await page.goto(url + run_route("runs/down") + "/sample/eggs")
    await expect(page.locator("#attempt-0")).to_have_class("attempt correct")
    for n in (1, 2):
        attempt = page.locator(f"#attempt-{n}")
        await expect(attempt).to_have_class("attempt unscored")
        await expect(attempt.locator(".verdict .reward")).to_have_text("")
        await expect(attempt.locator(".verdict td", has_text="unscored")).to_have_count(1)
    assert browser.errors == []
