"""Real agent programs (examples/agents/) evaluated by `agent-eval run --agent command` over
scripted mock workers: each attempt is scored right, and its recorded trajectory is what the
worker logged it was asked and answered, call for call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.agent_programs import CHAT, MESSAGES, python_example
from tests.helpers.command_runs import (
    assert_trajectory_is_what_the_worker_saw,
    dataset,
    run_command,
)
from tests.helpers.proxy import StartWorkers

ROW = {"question": "A crate holds 16 bottles. How many bottles are in 3 crates?", "answer": "48"}
MULTIPLY = ToolCall("multiply", json.dumps({"a": 16, "b": 3}))
CALCULATE = ToolCall("calculator", json.dumps({"expression": "16 * 3"}))
FINAL = ToolCall("final_answer", json.dumps({"answer": "48"}))


@pytest.mark.parametrize(
    ("program", "route", "replies"),
    [
        ("smolagents_agent.py", CHAT, [Reply(tool_calls=[MULTIPLY]), Reply(tool_calls=[FINAL])]),
        ("openai_agents_sdk.py", CHAT, [Reply(tool_calls=[MULTIPLY]), Reply("48")]),
        ("anthropic_tool_loop.py", MESSAGES, [Reply(tool_calls=[CALCULATE]), Reply("48")]),
    ],
    ids=["smolagents", "agents-sdk", "anthropic"],
)
async def test_a_real_agent_is_scored_and_its_trajectory_is_the_workers(
    start_workers: StartWorkers, tmp_path: Path, program: str, route: str, replies: list[Reply]
) -> None:
    [worker] = await start_workers(1)
    worker.script(*replies)
    data = dataset(tmp_path / "data.jsonl", ROW)
    code, err, [record] = await run_command(
        python_example(program), data, [worker], tmp_path / "run"
    )
    assert code == 0, err
    worker.assert_script_used_up()
    assert (record["error"], record["answer"], record["reward"], record["correct"]) == (
        None, "48", 1.0, True
    )  # fmt: skip
    trajectory = record["trajectory"]
    assert_trajectory_is_what_the_worker_saw(trajectory, worker, route)
    # The tool ran in the agent and its result went back: as the call's result, or, from
    # smolagents, as a user turn (its final_answer is a call with no result).
    first = trajectory["tool_calls"][0]
    if program == "smolagents_agent.py":
        assert first["result"] == "" and "Observation:\\n48" in json.dumps(trajectory["messages"])
    else:
        assert float(first["result"]) == 48
    assert record["model_calls"] == 2 and record["prompt_tokens"] > 0
