"""Runs on disk and a served view, as the browser tests of `agent-eval view` use them."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web
from aiohttp.test_utils import TestClient

from agent_eval.metrics import summarize
from agent_eval.report.runs import load_run
from agent_eval.results.files import RunDirectory
from agent_eval.results.summary import summary_json
from agent_eval.run.config import load_run_config, save_run_config
from agent_eval.view.server import create_app
from tests.helpers.browser import BrowserPage
from tests.helpers.run_files import valid_record, valid_summary

# One attempt in the shape a real run writes: messages as the Agents SDK dumps them, a tool call
# with its arguments and result, and two model calls on different workers.
TEMPLATE: dict[str, Any] = {
    "schema": 1,
    "sample_id": "s1",
    "attempt": 0,
    "seed": 1,
    "session_id": "s1-0",
    "reward": 1.0,
    "correct": True,
    "answer": "48",
    "turn_rewards": None,
    "turn_answers": None,
    "challenge_turns": None,
    "latency_s": 3.5,
    "prompt_tokens": 900,
    "completion_tokens": 40,
    "model_calls": 2,
    "tool_calls": 1,
    "tool_errors": 0,
    "error": None,
    "trajectory": {
        "final_output": "48",
        "messages": [
            {"content": "A crate holds 16 bottles. How many in 3 crates?", "role": "user"},
            {
                "arguments": '{"a": 16, "b": 3}',
                "call_id": "c1",
                "name": "multiply",
                "type": "function_call",
                "id": "fc_1",
                "status": "completed",
            },
            {"call_id": "c1", "output": "48.0", "type": "function_call_output"},
            {
                "id": "msg_1",
                "content": [{"annotations": [], "text": "48", "type": "output_text"}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            },
        ],
        "tool_calls": [{"name": "multiply", "arguments": '{"a": 16, "b": 3}', "result": "48.0"}],
        "model_calls": [
            {"latency_s": 1.5, "prompt_tokens": 440, "completion_tokens": 20, "worker": "w0"},
            {"latency_s": 2.0, "prompt_tokens": 460, "completion_tokens": 20, "worker": "w1"},
        ],
        "error": None,
    },
}


def record(sample: str, attempt: int, correct: bool, answer: str | None = None) -> dict[str, Any]:
    """An attempt at `sample`, right or wrong; its answer 48 or 19 unless given."""
    line = copy.deepcopy(TEMPLATE)
    line.update(sample_id=sample, attempt=attempt, correct=correct, reward=float(correct))
    line["session_id"] = f"{sample}-{attempt}"
    line["answer"] = answer if answer is not None else "48" if correct else "19"
    return line


def variant(
    original: str, kind: str, attempt: int, correct: bool, answer: str | None = None
) -> dict[str, Any]:
    """An attempt at the `kind` variant of sample `original`, as a run with --perturb writes it."""
    line = record(f"{original}~{kind}", attempt, correct, answer)
    line.update(variant_of=original, perturbation=kind)
    return line


def write_run(
    path: Path,
    records: list[dict[str, Any]],
    finished: bool = True,
    settings: dict[str, Any] | None = None,
) -> None:
    """A run folder: config.yaml (these settings over a math_calculator run), samples.jsonl and,
    once finished, summary.json."""
    path.mkdir(parents=True)
    flags = {"agent.name": "math_calculator", "model.name": "qwen-test", **(settings or {})}
    save_run_config(load_run_config(None, flags, [f"output.dir={path}"]), path)
    append(path, records)
    if finished:
        finish(path)


def finish(path: Path) -> None:
    """summary.json as the engine writes it, over a wall time of 20 s; checked against its
    schema."""
    scores = (record.score() for record in RunDirectory(path).records())
    summary = summary_json(summarize(scores, 20.0))
    (path / "summary.json").write_text(json.dumps(valid_summary(summary)))


def append(run: Path, records: list[dict[str, Any]]) -> None:
    """Add attempts to a run's samples.jsonl, as a running run does; each checked against the
    line's schema."""
    with (run / "samples.jsonl").open("a") as samples:
        samples.writelines(json.dumps(valid_record(line)) + "\n" for line in records)


def run_route(run_id: str) -> str:
    """The hash route of a run's page, as the app builds it."""
    return "#/run/" + quote(run_id, safe="")


async def cells(browser: BrowserPage, selector: str) -> list[list[str]]:
    """The text of each cell of each row `selector` finds."""
    rows = await browser.page.locator(selector).all()
    return [await row.locator("td").all_inner_texts() for row in rows]


@asynccontextmanager
async def served(roots: list[Path]) -> AsyncIterator[str]:
    """The view's app serving `roots` on a free local port; yields its URL."""
    runner = web.AppRunner(create_app(roots), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/"
    finally:
        await runner.cleanup()


async def get_json(client: TestClient[Any, Any], url: str, status: int = 200) -> Any:
    """The JSON the view's API answers `url` with, checking the status it answers with."""
    response = await client.get(url)
    assert response.status == status, await response.text()
    assert response.headers["Content-Type"].startswith("application/json")
    return await response.json()


def stopped(line: dict[str, Any]) -> dict[str, Any]:
    """The attempt stopped by a timeout: unscored, neither right nor wrong."""
    line.update(correct=False, reward=0.0, answer=None)
    line["error"] = {"kind": "timeout", "class": "infra", "message": "slow"}
    return line


def perturbed(first: str = "p1", broken_answer: str = "19") -> list[dict[str, Any]]:
    """Four originals at two attempts each, their numbers variants (p3's did not replay), then
    their distractor variants (p4 has none); `first` names p1, `broken_answer` is what p1's
    numbers variant answers at attempt 0, where it breaks."""
    return [
        record(first, 0, True),
        record(first, 1, True),
        record("p2", 0, True),
        record("p2", 1, False),
        record("p3", 0, False),
        record("p3", 1, False),
        record("p4", 0, True),
        stopped(record("p4", 1, True)),
        variant(first, "numbers", 0, False, broken_answer),  # broke
        variant(first, "numbers", 1, True),
        variant("p2", "numbers", 0, True),
        variant("p2", "numbers", 1, True),  # fixed
        variant("p4", "numbers", 0, True),
        variant("p4", "numbers", 1, True),  # its original attempt is unscored: no pair
        variant(first, "distractor", 0, False),  # broke
        variant(first, "distractor", 1, False),  # broke
        variant("p2", "distractor", 0, True),
        stopped(variant("p2", "distractor", 1, True)),  # unscored: no pair
        variant("p3", "distractor", 0, True),  # fixed
        variant("p3", "distractor", 1, False),
    ]


def write_summary(path: Path) -> None:
    """summary.json as the engine writes it, with a wall time."""
    scores = load_run(path).scores
    (path / "summary.json").write_bytes(json.dumps(summarize(scores, 20.0).to_dict()).encode())
