"""Real agent programs (examples/agents/) run unmodified against the proxy over a scripted
mock worker: each ends with the right answer, and the proxy's record of the attempt is what
the worker logged it was asked and answered."""

from __future__ import annotations

import json
from pathlib import Path

from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.agent_programs import (
    CHAT,
    assert_record_is_what_the_worker_saw,
    python_example,
    recorded,
    run_agent,
)
from tests.helpers.proxy import StartProxy, StartWorkers

SAMPLE = {"question": "A crate holds 16 bottles. How many bottles are in 3 crates?"}
MULTIPLY = ToolCall("multiply", json.dumps({"a": 16, "b": 3}))
CALCULATE = ToolCall("calculator", json.dumps({"expression": "16 * 3"}))


async def test_smolagents_tool_calling_agent(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], record_dir=tmp_path / "record")
    final = ToolCall("final_answer", json.dumps({"answer": "48"}))
    worker.script(Reply(tool_calls=[MULTIPLY]), Reply(tool_calls=[final]))
    finished = await run_agent(
        python_example("smolagents_agent.py"), base_url, SAMPLE, tmp_path / "work"
    )
    assert (finished.returncode, finished.answer) == (0, "48"), finished.stderr
    worker.assert_script_used_up()
    [first, second] = worker.served(CHAT)
    assert SAMPLE["question"] in json.dumps(first.request["messages"])
    # smolagents hands the tool's result back as a user turn; 16 * 3 ran in the agent.
    assert _messages(second.request)[-1]["content"] == [
        {"type": "text", "text": "Observation:\n48"}
    ]
    assert_record_is_what_the_worker_saw(recorded(tmp_path / "record"), worker.served())


def _messages(request: dict[str, object]) -> list[dict[str, object]]:
    messages = request["messages"]
    assert isinstance(messages, list)
    return messages


async def test_openai_agents_sdk_over_chat_completions(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], record_dir=tmp_path / "record")
    worker.script(Reply(tool_calls=[MULTIPLY]), Reply("48"))
    finished = await run_agent(
        python_example("openai_agents_sdk.py"), base_url, SAMPLE, tmp_path / "work"
    )
    assert (finished.returncode, finished.answer) == (0, "48"), finished.stderr
    worker.assert_script_used_up()
    [first, second] = worker.served(CHAT)
    assert first.request["messages"][-1] == {"role": "user", "content": SAMPLE["question"]}
    result = _messages(second.request)[-1]
    assert (result["role"], result["tool_call_id"]) == ("tool", MULTIPLY.id)
    assert float(str(result["content"])) == 48
    assert_record_is_what_the_worker_saw(recorded(tmp_path / "record"), worker.served())


async def test_anthropic_sdk_tool_loop(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], record_dir=tmp_path / "record")
    worker.script(Reply(tool_calls=[CALCULATE]), Reply("48"))
    finished = await run_agent(
        python_example("anthropic_tool_loop.py"), base_url, SAMPLE, tmp_path / "work"
    )
    assert (finished.returncode, finished.answer) == (0, "48"), finished.stderr
    worker.assert_script_used_up()
    [first, second] = worker.served()
    assert SAMPLE["question"] in json.dumps(first.request["messages"])
    # The calculator ran in the agent: its result goes back under the model's call id.
    assert _tool_result(second.request) == (CALCULATE.id, "48")
    assert_record_is_what_the_worker_saw(recorded(tmp_path / "record"), worker.served())


def _tool_result(request: dict[str, object]) -> tuple[object, object]:
    """The id and content of the tool result a request ends with, chat or Messages shaped."""
    last = _messages(request)[-1]
    if last["role"] == "tool":
        return last["tool_call_id"], last["content"]
    [block] = last["content"]  # type: ignore[misc]
    return block["tool_use_id"], block["content"]
