"""The sample page in a real browser: question, gold and agreement, tool calls in every shape,
what the model was given (system prompt, tools) folded, a multi-turn run's heatmap leading
into the turn it shows, and a command runner's program (tails, diff, check) shown as text."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_eval.agents import math_calculator, multi_turn_chat
from tests.helpers.browser import BrowserPage
from tests.helpers.cli_runs import agent_eval, finish
from tests.helpers.program_records import HOSTILE, STDERR, THOUGHT, program_record
from tests.helpers.proxy import StartWorkers
from tests.helpers.view_runs import record, run_route, served, write_run
from tests.helpers.view_samples import CRATES, answered, session_record, stopped_session


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


def two_setups() -> dict[str, Any]:
    """An attempt whose second model call was given no system prompt and no tools."""
    line = record("word_problems-1", 0, True)
    tool = {"name": "multiply", "description": "Multiply.", "parameters": {"type": "object"}}
    trajectory = line["trajectory"]
    trajectory["setups"] = [
        {"system_prompt": "Use the tools.", "tools": [tool]},
        {"system_prompt": None, "tools": []},
    ]
    for n, call in enumerate(trajectory["model_calls"]):
        call["setup"] = n
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
    write_run(runs / "setups", [two_setups()], finished=False)
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


# Each attempt's right edge, and how far its container and the page scroll sideways.
FIT = """() => {
  const boxes = [...document.querySelectorAll("#attempts .attempt")]
    .map((a) => a.getBoundingClientRect());
  const attempts = document.querySelector("#attempts"), whole = document.documentElement;
  return { rights: boxes.map((b) => b.right), tops: boxes.map((b) => b.top),
    inner: attempts.scrollWidth - attempts.clientWidth,
    page: whole.scrollWidth - whole.clientWidth, width: whole.clientWidth };
}"""


@pytest.mark.parametrize("width", [1280, 1024])
async def test_four_attempts_side_by_side_fit_the_page(
    url: str, browser: BrowserPage, width: int
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.set_viewport_size({"width": width, "height": 900})
    await page.goto(url + run_route("runs/single") + "/sample/word_problems-2")
    await expect(page.locator("#attempts .attempt")).to_have_count(4)
    fit = await page.evaluate(FIT)
    assert fit["page"] == 0 and fit["inner"] == 0
    assert all(right <= fit["width"] for right in fit["rights"])
    if width == 1280:  # all four in one row
        assert len(set(fit["tops"])) == 1
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


ANY = re.compile("")
"""Matches any value of an attribute: `not_to_have_attribute(name, ANY)` says it is absent."""


async def played(start_workers: StartWorkers, root: Path) -> None:
    """A math_calculator run and a multi_turn_chat run (tools on) of one sample each, played by
    `agent-eval run` against a mock worker into root/played/calculator and .../chat."""
    (worker,) = await start_workers(1)
    runs = {
        "calculator": ("--agent", "math_calculator", "--dataset", "word_problems"),
        "chat": ("--agent", "multi_turn_chat", "agent.options.tools=true"),
    }
    common = ("--limit", "1", "-n", "1", "--endpoint", worker.url)
    processes = [
        await agent_eval("run", *args, *common, "-o", str(root / "played" / name), cwd=root)
        for name, args in runs.items()
    ]
    for code, _, err in await asyncio.gather(*map(finish, processes)):
        assert code == 0, err


async def test_what_the_model_was_given_shows_folded(
    start_workers: StartWorkers, tmp_path: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    await played(start_workers, tmp_path)
    page = browser.page
    tools = ["add", "subtract", "multiply", "divide"]
    pages = [
        ("calculator", "word_problems-1", math_calculator.INSTRUCTIONS),
        ("chat", "eggs", multi_turn_chat.INSTRUCTIONS),
    ]
    async with served([tmp_path / "played"]) as url:
        for run, sample, instructions in pages:
            await page.goto(url + run_route("played/" + run) + "/sample/" + sample)
            prompt = page.locator("#attempt-0 details.system-prompt")
            words = len(instructions.split())
            await expect(prompt.locator("summary")).to_have_text(f"system prompt ({words} words)")
            await expect(prompt).not_to_have_attribute("open", ANY)  # folded until asked
            await expect(prompt.locator("pre")).to_be_hidden()
            await prompt.locator("summary").click()
            await expect(prompt.locator("pre")).to_have_text(instructions)
            await expect(prompt.locator("pre")).to_be_visible()
            given = page.locator("#attempt-0 details.tools")
            await expect(given.locator("summary")).to_have_text("tools: " + ", ".join(tools))
            await expect(given).not_to_have_attribute("open", ANY)
            await expect(given.locator(".tool-name")).to_have_count(4)
            await expect(given.locator(".tool-name").first).to_be_hidden()
            await given.locator("summary").click()
            await expect(given.locator(".tool-name")).to_have_text(tools)
            await expect(given.locator(".tool-description").first).to_have_text(
                "Add two numbers: a + b."
            )
            await expect(given.locator(".tool-parameters").first).to_contain_text('"required"')
    assert browser.errors == []


async def test_a_record_without_what_the_model_was_given_says_so(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/single") + "/sample/word_problems-1")
    await expect(page.locator("#attempt-0 .setups .note")).to_have_text(
        "the system prompt and tools the model was given are not in this record"
    )
    await expect(page.locator("#attempts details")).to_have_count(0)
    assert browser.errors == []


async def test_calls_given_different_setups_say_which_was_given_what(
    url: str, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/setups") + "/sample/word_problems-1")
    setups = page.locator("#attempt-0 .setup")
    await expect(setups.locator(".setup-calls")).to_have_text(
        ["given to model calls 0", "given to model calls 1"]
    )
    await expect(setups.nth(0).locator("summary")).to_have_text(
        ["system prompt (3 words)", "tools: multiply"]
    )
    await expect(setups.nth(1).locator(".note")).to_have_text(["no system prompt", "no tools"])
    assert browser.errors == []


async def test_a_command_attempt_shows_its_program_beside_its_calls(
    tmp_path: Path, browser: BrowserPage
) -> None:
    from playwright.async_api import expect

    write_run(tmp_path / "runs" / "command", [program_record("word_problems-1", 0)])
    async with served([tmp_path / "runs"]) as base:
        page = browser.page
        await page.goto(base + run_route("runs/command") + "/sample/word_problems-1")
        attempt = page.locator("#attempt-0")
        await expect(attempt.locator(".program-command")).to_have_text(
            "python agent.py --task {id}"
        )
        await expect(attempt.locator(".program-ending")).to_have_text("exit 1")
        await expect(attempt.locator(".program-duration")).to_have_text("2.50")
        await expect(attempt.locator(".program-check")).to_have_text(
            "pytest -q · exit 1 · score 0.00"
        )
        await expect(attempt.locator("pre.program-stderr")).to_have_text(STDERR)
        await expect(attempt.locator("pre.program-stdout")).to_contain_text(HOSTILE)
        await expect(attempt.locator(".diff .diff-add")).to_have_text(
            ["+    return 'hello, world'"]
        )
        await expect(attempt.locator(".diff .diff-del")).to_have_text(["-    return 'hi'"])
        await expect(attempt.locator(".diff .diff-hunk")).to_have_text(["@@ -1,2 +1,2 @@"])
        added = await attempt.locator(".diff-add").evaluate("n => getComputedStyle(n).color")
        removed = await attempt.locator(".diff-del").evaluate("n => getComputedStyle(n).color")
        assert added != removed
        # Next to what every attempt shows: the Anthropic tool loop, each call's worker.
        calls = attempt.locator(".messages .tool-call")
        await expect(calls.locator(":scope > .role")).to_have_text(["tool call multiply"])
        await expect(calls.locator(".tool-result")).to_have_text(["48.0"])
        await expect(attempt.locator(".messages details.reasoning pre")).to_have_text(THOUGHT)
        await expect(attempt.locator("tr.model-call td:nth-child(4)")).to_have_text(["w0", "w1"])
        # The program's output is text on the page, never markup it runs.
        assert await page.locator("#app script").count() == 0
        assert await page.title() != "owned"
        assert browser.errors == []


async def test_an_attempt_without_a_program_shows_none(url: str, browser: BrowserPage) -> None:
    from playwright.async_api import expect

    page = browser.page
    await page.goto(url + run_route("runs/single") + "/sample/word_problems-1")
    await expect(page.locator("#attempt-0 .answer")).to_have_text("48")
    await expect(page.locator(".program, .program-diff")).to_have_count(0)
    assert browser.errors == []
