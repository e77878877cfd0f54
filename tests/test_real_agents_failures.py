"""How real agent programs fail through `agent-eval run --agent command`: a worker that dies
under them is the infrastructure's (replayed, then unscored), a call past
`eval.limits.model_calls` is the model's limit, and a program that crashes on its own is the
agent's error."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.agent_programs import python_example
from tests.helpers.command_runs import dataset, run_command
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually

ROW = {"question": "A crate holds 16 bottles. How many bottles are in 3 crates?", "answer": "48"}
CALCULATE = ToolCall("calculator", json.dumps({"expression": "16 * 3"}))
ANTHROPIC = python_example("anthropic_tool_loop.py")


async def test_a_worker_dying_mid_attempt_is_replayed_then_unscored_never_the_agents(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    worker.script(Reply(tool_calls=[CALCULATE]))
    # Each answer takes 3 s: the agent's second call is still waiting for one when it stops.
    worker.behavior.latency = 3.0
    data = dataset(tmp_path / "data.jsonl", ROW)
    run = run_command(
        ANTHROPIC, data, [worker], tmp_path / "run",
        "eval.replays=1", "eval.replay_backoff=0", "eval.max_unscored=1",
    )  # fmt: skip
    _, err, records = await _with_worker_stopped_after_one_call(run, worker)
    assert len(records) == 1, err
    [record] = records
    error = record["error"]
    assert error["class"] == "infra" and error["kind"] != "agent_error", error
    assert record["reward"] is None and record["correct"] is None
    assert len(record["trajectory"]["replays"]) == 1


async def _with_worker_stopped_after_one_call(
    run: Coroutine[Any, Any, tuple[int, str, list[dict[str, Any]]]], worker: MockWorker
) -> tuple[int, str, list[dict[str, Any]]]:
    """`run` with `worker` stopped once it answered its first call, for good."""
    running = asyncio.ensure_future(run)
    await eventually(lambda: len(worker.served()) >= 1, 120)
    await worker.stop()
    return await running


async def test_a_call_past_max_calls_is_the_models_limit_counted_wrong(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    worker.script(Reply(tool_calls=[CALCULATE]), Reply("48"))
    data = dataset(tmp_path / "data.jsonl", ROW)
    code, err, [record] = await run_command(
        ANTHROPIC, data, [worker], tmp_path / "run", "eval.limits.model_calls=1"
    )
    assert code == 0, err
    error = record["error"]
    assert (error["kind"], error["class"]) == ("limit_exceeded", "model"), error
    assert (record["reward"], record["correct"]) == (0.0, False)
    # The proxy refused the second call: the worker answered one.
    assert len(worker.served()) == 1 and record["model_calls"] == 1


async def test_a_program_crashing_on_its_own_is_the_agents_error_with_its_stderr(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    # The Agents SDK raises on a call to a tool its agent does not have.
    worker.script(Reply(tool_calls=[ToolCall("no_such_tool", "{}")]))
    data = dataset(tmp_path / "data.jsonl", ROW)
    program = python_example("openai_agents_sdk.py")
    code, err, [record] = await run_command(program, data, [worker], tmp_path / "run")
    assert code == 0, err
    error = record["error"]
    assert (error["kind"], error["class"]) == ("agent_error", "model"), error
    assert (record["reward"], record["correct"]) == (0.0, False)
    recorded = record["trajectory"]["program"]
    assert recorded["exit_code"] == 1 and "exited with code 1" in error["message"]
    said = "ModelBehaviorError: Tool no_such_tool not found"
    assert said in recorded["stderr_tail"] and said in error["message"]
    assert record["trajectory"]["replays"] == [] and record["model_calls"] == 1
