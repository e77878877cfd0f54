"""The proxy's record as an attempt's trajectory: equal to what a runner records itself, and
the engine's keys, opened per play and ended however the play ends."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from openai import APIStatusError, AsyncOpenAI, AuthenticationError

from agent_eval.agents import RunContext, Trajectory, load_runner
from agent_eval.agents.captured import (
    CapturedCall,
    calls_of,
    infra_failure,
    trajectory_from_calls,
)
from agent_eval.agents.trajectory import TrajectoryError
from agent_eval.data import Sample, load_dataset
from agent_eval.results.record import AttemptRecord
from agent_eval.rewards import RewardScorer
from agent_eval.run.capture import attempt_keys
from agent_eval.run.config import RunConfig
from agent_eval.run.engine import Engine
from agent_eval.run.limits import Limits
from agent_eval.run.parts import engine_config
from tests.helpers.attempts import ADMIN_TOKEN, attempt_client
from tests.helpers.proxy import StartProxy, StartWorkers


async def test_the_proxy_records_what_math_calculator_records_itself(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.two_step = True  # a calculator call, then the answer
    base_url = await start_proxy(workers, admin_token=ADMIN_TOKEN)
    [sample] = load_dataset("gsm8k_mini", limit=1)
    async with (
        attempt_client(base_url) as attempts,
        AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as client,
    ):
        opened = await attempts.open("gsm8k_mini-0-0")
        ctx = RunContext(client.with_options(api_key=opened.key), "mock-model", "s", seed=3)
        own = await load_runner("math_calculator").run(sample, ctx)
        record = await attempts.end(opened.key)
    captured = trajectory_from_calls(calls_of(record))
    assert own.error is None and len(own.model_calls) == 2
    assert len(captured.model_calls) == len(own.model_calls)
    for theirs, ours in zip(captured.model_calls, own.model_calls, strict=True):
        assert (theirs.worker, theirs.prompt_tokens, theirs.completion_tokens) == (
            ours.worker,
            ours.prompt_tokens,
            ours.completion_tokens,
        )
        assert theirs.cached_tokens == ours.cached_tokens and theirs.retries == ours.retries
    assert captured.setups == own.setups
    assert [(c.name, c.arguments, c.result) for c in captured.tool_calls] == [
        (c.name, c.arguments, c.result) for c in own.tool_calls
    ]
    assert captured.tool_calls and captured.tool_calls[0].result
    # The same conversation: the question first, the answer last, in each API's own shape.
    assert captured.messages[0] == {"role": "user", "content": sample.question}
    assert own.messages[0]["content"] == sample.question
    assert captured.messages[-1]["content"] == own.final_output


def _call(index: int, request: dict[str, Any], response: dict[str, Any] | None, **fields: Any):
    return CapturedCall.model_validate(
        {"index": index, "route": "/v1/responses", "status": 200, "latency_s": 0.1,
         "request": request, "response": response} | fields
    )  # fmt: skip


def test_a_responses_conversation_is_followed_through_previous_response_ids() -> None:
    tool = {"type": "function", "name": "add", "description": "a + b", "parameters": {}}
    call = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": "{}"}
    calls = [
        _call(0, {"instructions": "be brief", "tools": [tool], "input": "2 + 3?"},
              {"id": "r1", "output": [call]}, prompt_tokens=5, completion_tokens=2),
        _call(1, {"instructions": "be brief", "tools": [tool], "previous_response_id": "r1",
                  "input": [{"type": "function_call_output", "call_id": "c1", "output": "5"}]},
              {"id": "r2", "output": [{"type": "message", "content": [{"text": "5"}]}]}),
    ]  # fmt: skip
    trajectory = trajectory_from_calls(calls)
    assert [m.get("type", m.get("role")) for m in trajectory.messages] == [
        "user", "function_call", "function_call_output", "message"
    ]  # fmt: skip
    assert [(t.name, t.result) for t in trajectory.tool_calls] == [("add", "5")]
    assert [m.setup for m in trajectory.model_calls] == [0, 0]
    assert trajectory.setups[0].system_prompt == "be brief"
    assert trajectory.prompt_tokens == 5 and infra_failure(calls) is None


def test_a_messages_conversation_keeps_its_blocks_and_its_results_come_next_call() -> None:
    tool = {"name": "calculator", "description": "arithmetic", "input_schema": {"type": "object"}}
    system = [{"type": "text", "text": "be brief"}, {"type": "text", "text": "use tools"}]
    picture = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
    }
    asked = {"role": "user", "content": [{"type": "text", "text": "16 * 3?"}, picture]}
    use = {"type": "tool_use", "id": "tu1", "name": "calculator", "input": {"expression": "16*3"}}
    said = [{"type": "text", "text": "Let me work it out."}, use]
    result = {
        "type": "tool_result",
        "tool_use_id": "tu1",
        "content": [{"type": "text", "text": "48"}],
    }
    usage = {"input_tokens": 3, "cache_read_input_tokens": 8, "output_tokens": 4}
    first = {"system": system, "tools": [tool], "messages": [asked]}
    conversation = [
        asked,
        {"role": "assistant", "content": said},
        {"role": "user", "content": [result]},
    ]
    second = {**first, "messages": conversation}
    calls = [
        _call(0, first, {"id": "m1", "type": "message", "role": "assistant", "content": said,
                         "usage": usage}, route="/v1/messages", prompt_tokens=11, cached_tokens=8),
        _call(1, second, {"id": "m2", "type": "message", "role": "assistant",
                          "content": [{"type": "text", "text": "48"}]}, route="/v1/messages"),
    ]  # fmt: skip
    trajectory = trajectory_from_calls(calls)
    assert trajectory.messages == [
        *conversation,
        {"role": "assistant", "content": [{"type": "text", "text": "48"}]},
    ]
    assert [(t.name, json.loads(t.arguments), t.result) for t in trajectory.tool_calls] == [
        ("calculator", {"expression": "16*3"}, "48")
    ]
    [setup] = trajectory.setups
    assert setup.system_prompt == "be brief\nuse tools"
    assert [(t.name, t.parameters) for t in setup.tools] == [("calculator", {"type": "object"})]
    assert [(m.setup, m.prompt_tokens, m.cached_tokens) for m in trajectory.model_calls] == [
        (0, 11, 8), (0, 0, None)
    ]  # fmt: skip


def test_a_messages_server_tool_and_a_string_system_prompt_are_a_setup() -> None:
    request = {"system": "be brief", "tools": [{"type": "web_search_20250305"}], "messages": []}
    [call] = [_call(0, request, {"role": "assistant", "content": []}, route="/v1/messages")]
    [setup] = trajectory_from_calls([call]).setups
    assert setup.system_prompt == "be brief"
    assert [(t.name, t.parameters) for t in setup.tools] == [("web_search_20250305", None)]


def test_the_first_infra_failure_is_the_attempts_and_a_client_error_is_none() -> None:
    refused = {"code": "invalid_json", "message": "bad", "fault": "client"}
    lost = {"code": "no_healthy_worker", "message": "none up", "fault": "proxy"}
    broke = {"code": "upstream_error", "message": "500", "fault": "worker"}
    calls = [
        _call(0, {}, None, status=400, error=refused),
        _call(1, {}, None, status=503, error=lost),
        _call(2, {}, None, status=502, error=broke, worker="http://w"),
    ]
    assert infra_failure(calls[:1]) is None
    first = infra_failure(calls)
    assert first is not None and first.kind == "no_healthy_worker" and first.whose == "infra"
    later = infra_failure(calls[2:])
    assert later is not None and later.kind == "upstream_error" and later.worker == "http://w"
    assert trajectory_from_calls(calls).model_calls == []


class OwnClientProgram:
    """A program with its own client, as an unmodified agent has: only the key ties its calls
    to the attempt. It waits on `gate` between its calls when given one."""

    uses_attempt_keys = True

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate
        self.waiting = asyncio.Event()
        self.keys: list[str] = []

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        assert ctx.attempt_base_url is not None and ctx.api_key is not None
        self.keys.append(ctx.api_key)
        async with AsyncOpenAI(base_url=ctx.attempt_base_url, api_key="-", max_retries=0) as own:
            messages: list[Any] = [{"role": "user", "content": sample.question}]
            answer = await own.chat.completions.create(model="mock-model", messages=messages)
            if self.gate is not None:
                self.waiting.set()
                await self.gate.wait()
            messages += [answer.choices[0].message.model_dump(exclude_none=True)]
            messages += [{"role": "user", "content": "are you sure?"}]
            answer = await own.chat.completions.create(model="mock-model", messages=messages)
        return Trajectory(final_output=answer.choices[0].message.content)


class Sink:
    def __init__(self) -> None:
        self.records: list[AttemptRecord] = []

    async def append(self, record: AttemptRecord) -> None:
        self.records.append(record)


async def _engine_play(
    base_url: str, runner: Any, samples: list[Sample], everyone: bool = False, **settings: Any
) -> list[AttemptRecord]:
    config = engine_config(RunConfig.model_validate({"eval": settings}), "mock-model")
    sink = Sink()
    async with (
        RewardScorer(max_workers=1) as scorer,
        AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as client,
        attempt_keys(base_url, ADMIN_TOKEN, 60, everyone) as keys,
    ):
        engine = Engine(runner, scorer, client, config, keys=keys)
        await engine.play(samples, set(), sink)
    return sink.records


async def _refused(base_url: str, key: str) -> bool:
    async with AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0) as client:
        try:
            await client.models.list()
        except AuthenticationError as exc:
            return "has ended" in str(exc)
    return False


async def test_an_unmodified_programs_trajectory_is_the_proxys_record(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(2), admin_token=ADMIN_TOKEN)
    samples = list(load_dataset("gsm8k_mini", limit=3))
    program = OwnClientProgram()
    played = await _engine_play(base_url, program, samples, n_samples=2, concurrency=4)
    assert len(played) == 6 and len(set(program.keys)) == 6
    for record in played:
        trajectory = record.trajectory
        question = next(s.question for s in samples if s.id == record.sample_id)
        assert record.model_calls == 2 and record.prompt_tokens > 0
        assert trajectory["messages"][0] == {"role": "user", "content": question}
        assert trajectory["messages"][-1]["content"] == trajectory["final_output"]
        assert len({call["worker"] for call in trajectory["model_calls"]}) == 1
    assert all([await _refused(base_url, key) for key in program.keys])


async def test_a_play_stopped_by_its_timeout_ends_its_key_with_what_it_did(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    program = OwnClientProgram(gate=asyncio.Event())  # never set: the play times out
    samples = list(load_dataset("gsm8k_mini", limit=1))
    [record] = await _engine_play(
        base_url, program, samples, attempt_timeout=0.5, replays=0, n_samples=1
    )
    assert record.error is not None and record.error["kind"] == "timeout"
    assert record.model_calls == 1  # the call it made before it was stopped
    assert await _refused(base_url, program.keys[0])


async def test_cancelling_a_play_ends_its_key(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy(await start_workers(1), admin_token=ADMIN_TOKEN)
    program = OwnClientProgram(gate=asyncio.Event())
    samples = list(load_dataset("gsm8k_mini", limit=1))
    playing = asyncio.create_task(_engine_play(base_url, program, samples, n_samples=1))
    await asyncio.wait_for(program.waiting.wait(), 10)
    playing.cancel()  # as Ctrl-C cancels the run
    with pytest.raises(asyncio.CancelledError):
        await playing
    assert await _refused(base_url, program.keys[0])


class Keyless:
    """A runner that asks for no key: it gets none unless every runner does (eval.capture)."""

    def __init__(self) -> None:
        self.keys: list[str | None] = []

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        self.keys.append(ctx.api_key)
        return await load_runner("math_calculator").run(sample, ctx)


async def test_eval_capture_gives_every_runner_a_key_and_the_proxys_trajectory(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(1)
    workers[0].behavior.two_step = True
    base_url = await start_proxy(workers, admin_token=ADMIN_TOKEN)
    samples = list(load_dataset("gsm8k_mini", limit=2))
    alone, everyone = Keyless(), Keyless()
    await _engine_play(base_url, alone, samples, n_samples=1)
    played = await _engine_play(base_url, everyone, samples, everyone=True, n_samples=1)
    assert alone.keys == [None, None]
    assert len(everyone.keys) == 2 and None not in everyone.keys
    assert all([await _refused(base_url, key) for key in everyone.keys if key])
    for record in played:
        trajectory = record.trajectory
        assert record.error is None and record.model_calls == 2 and record.tool_calls == 1
        # The proxy's shape of the conversation: Chat Completions messages, not SDK items.
        assert [m["role"] for m in trajectory["messages"]] == [
            "user", "assistant", "tool", "assistant"
        ]  # fmt: skip
        assert trajectory["messages"][-1]["content"] == trajectory["final_output"]


class GivesUp:
    """A program that takes any error answer as its own failure, as many agents do."""

    uses_attempt_keys = True

    def __init__(self, calls: int = 1) -> None:
        self.calls = calls

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        async with AsyncOpenAI(base_url=ctx.base_url, api_key=ctx.api_key, max_retries=0) as own:
            try:
                for _ in range(self.calls):
                    await own.chat.completions.create(
                        model="mock-model", messages=[{"role": "user", "content": sample.question}]
                    )
            except APIStatusError:
                return Trajectory(error=TrajectoryError("max_turns", "gave up"))
        return Trajectory(final_output="done")


async def test_a_play_that_fails_after_an_infra_failure_fails_of_it(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], admin_token=ADMIN_TOKEN, retry={"max_retries": 0})
    worker.behavior.error_status = 500
    samples = list(load_dataset("gsm8k_mini", limit=1))
    [record] = await _engine_play(base_url, GivesUp(), samples, n_samples=1, replays=0)
    assert record.error is not None
    assert (record.error["kind"], record.error["class"]) == ("upstream_error", "infra")
    assert record.error["worker"] == worker.url and "gave up" in record.error["message"]


class CrashesAtOnce:
    """A program that fails of its own setup before it asks the model anything."""

    uses_attempt_keys = True

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory:
        error = TrajectoryError("agent_error", "ModuleNotFoundError: No module named 'mine'")
        return Trajectory(error=error)


async def test_a_play_that_fails_before_its_first_model_call_is_not_the_models_failure(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], admin_token=ADMIN_TOKEN)
    samples = list(load_dataset("gsm8k_mini", limit=1))
    [record] = await _engine_play(base_url, CrashesAtOnce(), samples, n_samples=1, replays=1)
    assert record.error is not None
    assert (record.error["kind"], record.error["class"]) == ("no_model_call", "infra")
    assert "ModuleNotFoundError" in record.error["message"]
    assert len(record.trajectory["replays"]) == 1  # played again, as infrastructure's failures are
    assert not record.scored


async def test_a_play_past_its_call_limit_ends_as_limit_exceeded(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    [worker] = await start_workers(1)
    base_url = await start_proxy([worker], admin_token=ADMIN_TOKEN)
    samples = list(load_dataset("gsm8k_mini", limit=1))
    config = engine_config(RunConfig.model_validate({"eval": {"n_samples": 1}}), "mock-model")
    sink = Sink()
    async with (
        RewardScorer(max_workers=1) as scorer,
        AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as client,
        attempt_keys(base_url, ADMIN_TOKEN, 60, False, Limits(model_calls=1)) as keys,
    ):
        await Engine(GivesUp(calls=2), scorer, client, config, keys=keys).play(samples, set(), sink)
    [record] = sink.records
    assert record.error is not None
    assert (record.error["kind"], record.error["class"]) == ("limit_exceeded", "model")
    assert (
        record.error["limit"] == "model_calls"
        and "eval.limits.model_calls" in record.error["message"]
    )
    assert record.model_calls == 1 and worker.stats.generation_requests == 1
