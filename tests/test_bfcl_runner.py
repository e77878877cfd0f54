"""The bfcl runner in process, through a real proxy over a mock worker: what it records of the
one model call, and how an attempt the infrastructure stops ends."""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from agent_eval.agents.base import RunContext
from agent_eval.agents.trajectory import Trajectory
from agent_eval.benchmarks.bfcl import runner
from agent_eval.benchmarks.bfcl.datasets import bfcl_items
from agent_eval.benchmarks.bfcl.runner import BfclAgent
from agent_eval.data.records import Sample
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers


async def test_the_call_its_tools_and_the_answer_are_recorded(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.script(Reply(tool_calls=[ToolCall("math_factorial", '{"number": 5}')]))
    client = make_client(await start_proxy([worker]))
    sample = list(zip(bfcl_items("simple"), range(2), strict=False))[1][0]
    trajectory = await BfclAgent().run(sample, RunContext(client, "mock-model", "s-1", seed=1))
    assert trajectory.error is None
    assert json.loads(trajectory.final_output or "") == {
        "bfcl_category": "simple_python", "mode": "fc",
        "result": [{"math_factorial": '{"number": 5}'}],
    }  # fmt: skip
    (call,) = trajectory.model_calls
    assert call.worker == worker.url and call.prompt_tokens > 0 and call.setup == 0
    assert [t.name for t in trajectory.setups[0].tools] == ["math_factorial"]
    assert [(c.name, c.arguments) for c in trajectory.tool_calls] == [
        ("math_factorial", '{"number": 5}')
    ]
    assert [m["role"] for m in trajectory.messages] == ["user", "assistant"]
    sent = worker.requests_to("/v1/chat/completions")[0]
    assert sent["seed"] == 1 and sent["temperature"] == 0.0


async def test_an_unreachable_proxy_ends_the_attempt_as_a_connection_error(
    make_client: MakeClient,
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/v1")
    sample = next(bfcl_items("simple"))
    trajectory = await BfclAgent().run(sample, RunContext(client, "mock-model", "s-0", seed=0))
    assert trajectory.final_output is None
    assert trajectory.error is not None and trajectory.error.kind == "connection_error"
    assert trajectory.messages == sample.messages and trajectory.model_calls == []


async def test_a_multi_turn_sample_is_played_by_the_multi_turn_part_with_the_options(
    monkeypatch: pytest.MonkeyPatch, make_client: MakeClient
) -> None:
    """A sample whose category is multi_turn_* is played turn by turn, with the runner's options."""
    given: list[Any] = []

    async def play_multi_turn(sample: Sample, ctx: RunContext, options: Any) -> Trajectory:
        given.append(options)
        return ctx.trajectory

    monkeypatch.setattr(runner, "play_multi_turn", play_multi_turn)
    sample = next(bfcl_items("multi_turn_base"))
    ctx = RunContext(make_client("http://127.0.0.1:9/v1"), "mock-model", "s-0", seed=0)
    assert await BfclAgent(mode="prompt", max_steps=5).run(sample, ctx) is ctx.trajectory
    assert [(o.mode, o.max_steps) for o in given] == [("prompt", 5)]
