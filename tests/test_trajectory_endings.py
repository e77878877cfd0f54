"""Every ending of an attempt keeps its whole conversation and tool calls up to where it stopped."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from agents import RunConfig, Runner, function_tool

from agent_eval.agents import RunContext, Sampling, Trajectory, load_runner
from agent_eval.agents.calculator import calculator_tools
from agent_eval.agents.math_calculator import MathCalculatorAgent
from agent_eval.agents.recording import AttemptRecorder, as_message
from agent_eval.agents.sdk import sdk_agent
from agent_eval.data import Session, Turn, load_dataset
from agent_eval.results.files import RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig as EvalConfig
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.cli_runs import lines
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.records import kinds

QUESTION = SimpleNamespace(id="q1", question="A box holds 6 rows of 7 eggs. How many eggs?")
SESSION = Session("s1", [Turn("What is 2 + 3?", "5"), Turn("Now double it.", "10")])


@pytest.fixture
def context(make_client: MakeClient) -> Callable[[str], RunContext]:
    """A run context for session q1-0; its client closes after the test."""

    def make(base_url: str) -> RunContext:
        return RunContext(make_client(base_url, "q1-0"), "mock-model", "q1-0", 11, Sampling())

    return make


@pytest.fixture
async def scorer() -> AsyncIterator[RewardScorer]:
    async with RewardScorer(max_workers=1) as pool:
        yield pool


def multiply_call(a: float, b: float) -> ToolCall:
    return ToolCall("multiply", json.dumps({"a": a, "b": b}))


def outputs(messages: list[dict[str, Any]]) -> list[str]:
    """The tool results the model was given, in order."""
    return [m["output"] for m in messages if m.get("type") == "function_call_output"]


async def fail_second_call(worker: MockWorker, status: int = 400) -> None:
    """Let the first generation request through, then fail the next one with `status`."""
    await worker.gate.wait_for_arrivals(1)
    worker.behavior.update({"error_status": status, "error_count": 1, "hang": False})
    worker.gate.release()


@pytest.mark.parametrize("api", ["chat_completions", "responses"])
async def test_the_live_record_is_the_sdks_own_conversation(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    context: Callable[[str], RunContext],
    api: str,
) -> None:
    # What a failed attempt keeps is recorded live; it must read like a finished one's.
    (worker,) = await start_workers(1)
    calls = [multiply_call(6, 7), ToolCall("add", '{"a": 1, "b": 2}')]
    worker.script(Reply("Let me compute.", tool_calls=calls), Reply("Answer: 42"))
    base_url = await start_proxy([worker])
    agent = sdk_agent("a", "Solve it.", calculator_tools(), context(base_url), api)
    live = Trajectory()
    result = await Runner.run(
        agent, "What is 6 * 7?", hooks=AttemptRecorder(live),
        run_config=RunConfig(tracing_disabled=True),
    )  # fmt: skip
    assert live.messages == [as_message(item) for item in result.to_input_list()]
    assert [(c.name, c.result) for c in live.tool_calls] == [("multiply", "42.0"), ("add", "3.0")]


async def test_max_turns_keeps_every_call_and_result(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(*[Reply(tool_calls=[multiply_call(i, 2)]) for i in (1, 2, 3)])
    base_url = await start_proxy([worker])
    trajectory = await MathCalculatorAgent(max_turns=2).run(QUESTION, context(base_url))
    assert trajectory.error.kind == "max_turns"
    assert kinds(trajectory.messages) == [
        "user", "function_call", "function_call_output", "function_call", "function_call_output",
    ]  # fmt: skip
    assert trajectory.messages[0]["content"] == QUESTION.question
    assert outputs(trajectory.messages) == ["2.0", "4.0"]
    assert [call.result for call in trajectory.tool_calls] == ["2.0", "4.0"]
    assert len(trajectory.model_calls) == 2


async def test_upstream_error_mid_attempt_keeps_what_ran_before(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]))
    worker.behavior.hang = True
    base_url = await start_proxy([worker])
    failing = asyncio.ensure_future(fail_second_call(worker))
    trajectory = await MathCalculatorAgent().run(QUESTION, context(base_url))
    await failing
    assert trajectory.error.to_dict()["class"] == "infra"
    assert kinds(trajectory.messages) == ["user", "function_call", "function_call_output"]
    assert outputs(trajectory.messages) == ["42.0"]
    assert [call.name for call in trajectory.tool_calls] == ["multiply"]


async def test_failed_session_keeps_earlier_turns_and_the_failed_one(
    start_workers: StartWorkers, start_proxy: StartProxy, context: Callable[[str], RunContext]
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply("Answer: 5"), Reply(tool_calls=[multiply_call(5, 2)]))
    base_url = await start_proxy([worker])
    runner = load_runner("multi_turn_chat", tools=True, max_turns=1)
    trajectory = await runner.run(SESSION, context(base_url))
    assert trajectory.error.kind == "max_turns"
    assert trajectory.turn_outputs == ["Answer: 5", None]
    assert kinds(trajectory.messages) == [
        "user", "assistant", "user", "function_call", "function_call_output",
    ]  # fmt: skip
    assert outputs(trajectory.messages) == ["10.0"]


async def play_one(
    runner: Any,
    scorer: RewardScorer,
    client: Any,
    run_dir: Path,
    attempt_timeout: float = 600.0,
    limit: int = 1,
) -> list[AttemptRecord]:
    """Play the first `limit` gsm8k_mini samples once each, never again; the records written."""
    items = list(load_dataset("gsm8k_mini", limit=limit))
    settings = {"concurrency": 1, "attempt_timeout": attempt_timeout, "replays": 0}
    config = engine_config(EvalConfig.model_validate({"eval": settings}), "mock-model")
    await Engine(runner, scorer, client, config).run(items, RunDirectory(run_dir), len(items))
    return list(RunDirectory(run_dir).records())


async def test_attempt_timeout_keeps_what_ran_before(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
    scorer: RewardScorer,
    tmp_path: Path,
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]))
    worker.behavior.hang = True
    base_url = await start_proxy([worker])

    async def answer_first_only() -> None:
        await worker.gate.wait_for_arrivals(1)
        worker.gate.release()  # the second call arrives while `hang` is still set, and waits

    releasing = asyncio.ensure_future(answer_first_only())
    runner = MathCalculatorAgent()
    (record,) = await play_one(runner, scorer, make_client(base_url), tmp_path, 3.0)
    await releasing
    assert record.error_kind == "timeout"
    trajectory = record.trajectory
    assert kinds(trajectory["messages"]) == ["user", "function_call", "function_call_output"]
    assert [call["result"] for call in trajectory["tool_calls"]] == ["42.0"]
    assert (record.model_calls, record.tool_calls) == (1, 1)
    assert trajectory["final_output"] is None


def explode(a: float, b: float) -> float:
    """Multiply two numbers: a * b."""
    raise RuntimeError("the calculator broke")


async def test_runner_error_keeps_what_ran_before(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
    scorer: RewardScorer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A tool that raises instead of answering the model: a bug of the runner, not the model's.
    broken = function_tool(explode, name_override="multiply", failure_error_function=None)
    monkeypatch.setattr("agent_eval.agents.math_calculator.calculator_tools", lambda: [broken])
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]))
    base_url = await start_proxy([worker])
    (record,) = await play_one(MathCalculatorAgent(), scorer, make_client(base_url), tmp_path)
    assert record.error is not None and record.error["kind"] == "runner_error"
    assert "the calculator broke" in record.error["message"]
    assert kinds(record.trajectory["messages"]) == ["user", "function_call"]
    assert record.model_calls == 1


async def test_ctrl_c_mid_attempt_keeps_finished_attempts_whole(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    make_client: MakeClient,
    scorer: RewardScorer,
    tmp_path: Path,
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[multiply_call(6, 7)]))
    worker.behavior.hang = True
    base_url = await start_proxy([worker])
    runner = MathCalculatorAgent(max_turns=1)
    run = asyncio.ensure_future(play_one(runner, scorer, make_client(base_url), tmp_path, limit=2))
    await worker.gate.wait_for_arrivals(1)
    worker.gate.release()  # the first attempt ends at max_turns; the second's call is held
    await worker.gate.wait_for_arrivals(1)
    run.cancel()  # as Ctrl-C does
    with pytest.raises(asyncio.CancelledError):
        await run
    # Read as JSON, so a torn line fails here; the attempt in flight is not recorded.
    (record,) = lines(tmp_path)
    assert (record["sample_id"], record["error"]["kind"]) == ("gsm8k_mini-1", "max_turns")
    messages = record["trajectory"]["messages"]
    assert kinds(messages) == ["user", "function_call", "function_call_output"]
    assert outputs(messages) == ["42.0"]
