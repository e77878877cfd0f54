"""The mock's sampling knobs: answers right only at low temperature or with enough tokens."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam
from openai.types.responses import FunctionToolParam, ResponseInputParam

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig
from agent_eval.run.config import load_run_config
from agent_eval.run.evaluation import evaluate, plan
from agent_eval.schedulers.local import LocalScheduler
from agent_eval.testing.mock_backend import MockBackend
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.worker_state import Behavior
from tests.helpers.observer import QuietObserver

QUESTION = "What is 2 + 3?"
ADD: ChatCompletionFunctionToolParam = {"type": "function", "function": {"name": "add"}}
ARGUMENTS = json.dumps({"a": 2.0, "b": 3.0})
RIGHT, WRONG = "Answer: 5.0", "Answer: 6.0"


@pytest.fixture
async def worker() -> AsyncIterator[MockWorker]:
    async with MockWorker(name="w-knobs", behavior=Behavior(two_step=True)) as mock:
        yield mock


@pytest.fixture
async def client(worker: MockWorker) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(base_url=f"{worker.url}/v1", api_key="unused", max_retries=0) as sdk:
        yield sdk


async def chat_answer(client: AsyncOpenAI, **sampling: Any) -> tuple[str, int]:
    """The final answer after the calculator's result, and its completion tokens."""
    messages: list[ChatCompletionMessageParam] = [
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": ARGUMENTS},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "5.0"},
    ]
    completion = await client.chat.completions.create(
        model="m", messages=messages, tools=[ADD], **sampling
    )
    assert completion.usage is not None
    return completion.choices[0].message.content or "", completion.usage.completion_tokens


async def responses_answer(client: AsyncOpenAI, **sampling: Any) -> tuple[str, int]:
    """As `chat_answer`, through the Responses API."""
    items: ResponseInputParam = [
        {"role": "user", "content": QUESTION},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": ARGUMENTS},
        {"type": "function_call_output", "call_id": "c1", "output": "5.0"},
    ]
    tool: FunctionToolParam = {"type": "function", "name": "add", "parameters": {}, "strict": False}
    response = await client.responses.create(model="m", input=items, tools=[tool], **sampling)
    assert response.usage is not None
    return response.output_text, response.usage.output_tokens


@pytest.mark.parametrize(
    ("temperature", "answer"), [(0.2, RIGHT), (0.5, RIGHT), (0.9, WRONG), (None, WRONG)]
)
async def test_answers_are_wrong_above_the_temperature(
    worker: MockWorker, client: AsyncOpenAI, temperature: float | None, answer: str
) -> None:
    worker.behavior.wrong_above_temperature = 0.5
    sampling = {} if temperature is None else {"temperature": temperature}  # None: OpenAI's 1.0
    for ask in (chat_answer, responses_answer):
        text, _ = await ask(client, **sampling)
        assert text.splitlines()[-1] == answer, ask.__name__


@pytest.mark.parametrize(("budget", "answer"), [(32, WRONG), (64, RIGHT), (128, RIGHT)])
async def test_answers_fill_the_budget_and_are_right_only_when_it_is_enough(
    worker: MockWorker, client: AsyncOpenAI, budget: int, answer: str
) -> None:
    worker.behavior.needs_tokens = 64
    asked = [
        (chat_answer, {"max_tokens": budget}),
        (chat_answer, {"max_completion_tokens": budget}),
        (responses_answer, {"max_output_tokens": budget}),
    ]
    for ask, sampling in asked:
        text, tokens = await ask(client, temperature=1.5, **sampling)
        assert text.splitlines()[-1] == answer, sampling
        assert tokens == len(text.split()) == budget, sampling


@pytest.mark.parametrize(
    ("needs", "sampling"), [(None, {"max_tokens": 128}), (64, {})], ids=["no-need", "no-budget"]
)
async def test_the_answer_is_plain_and_right_without_a_need_or_a_budget(
    worker: MockWorker, client: AsyncOpenAI, needs: int | None, sampling: dict[str, int]
) -> None:
    worker.behavior.needs_tokens = needs
    text, tokens = await chat_answer(client, **sampling)
    assert text == f"The calculator says 5.0.\n{RIGHT}" and tokens == 6


async def test_the_control_api_sets_the_knobs(worker: MockWorker) -> None:
    update = {"wrong_above_temperature": 0.5, "needs_tokens": 64}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{worker.url}/mock/behavior", json=update) as response,
    ):
        assert response.status == 200
    assert (worker.behavior.wrong_above_temperature, worker.behavior.needs_tokens) == (0.5, 64)


async def test_the_flags_reach_workers_the_scheduler_starts(tmp_path: Path) -> None:
    flags = ["--two-step", "--wrong-above-temperature", "0.5", "--needs-tokens", "64"]
    async with LocalScheduler(tmp_path) as scheduler:
        (started,) = await scheduler.launch(
            MockBackend(), WorkerConfig(extra_args=flags), Allocation("mock")
        )
        await scheduler.wait_ready(timeout=60)
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{started.url}/mock/behavior") as response,
        ):
            behavior = await response.json()
    knobs = ("two_step", "wrong_above_temperature", "needs_tokens")
    assert [behavior[k] for k in knobs] == [True, 0.5, 64]


def write_sums(path: Path, rows: int = 4) -> Path:
    """Questions "What is i + 1?" whose gold answer is their sum."""
    lines = [{"question": f"What is {i} + 1?", "answer": f"#### {i + 1}"} for i in range(rows)]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


async def run_summary(worker: MockWorker, tmp_path: Path, *overrides: str) -> dict[str, Any]:
    """summary.json of math_calculator on four sums against `worker`."""
    run_dir = tmp_path / "-".join(overrides)
    given = [
        f"rollout.endpoints=['{worker.url}']",
        f"dataset.name={write_sums(tmp_path / 'sums.jsonl')}",
        "agent.name=math_calculator",
        f"output.dir={run_dir}",
        *overrides,
    ]
    await evaluate(plan(load_run_config(None, {}, given)), QuietObserver())
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    return summary


@pytest.mark.parametrize(("temperature", "accuracy"), [(0.2, 1.0), (0.9, 0.0)])
async def test_math_calculator_is_right_only_at_low_temperature(
    worker: MockWorker, tmp_path: Path, temperature: float, accuracy: float
) -> None:
    worker.behavior.wrong_above_temperature = 0.5
    summary = await run_summary(worker, tmp_path, f"sampling.temperature={temperature}")
    assert summary["quality"]["accuracy"]["value"] == accuracy
    assert summary["quality"]["accuracy"]["n"] == 4


async def test_math_calculator_trades_tokens_for_accuracy(
    worker: MockWorker, tmp_path: Path
) -> None:
    worker.behavior.needs_tokens = 64
    short = await run_summary(worker, tmp_path, "sampling.max_tokens=32")
    long = await run_summary(worker, tmp_path, "sampling.max_tokens=128")
    assert (short["quality"]["accuracy"]["value"], long["quality"]["accuracy"]["value"]) == (0, 1)
    tokens = [s["efficiency"]["tokens"]["mean_completion"] for s in (short, long)]
    # Each attempt: the call to add (its arguments, compact JSON, one word), then the budget.
    assert tokens == [1 + 32, 1 + 128]
