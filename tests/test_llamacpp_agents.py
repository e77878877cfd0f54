"""The embedded llama.cpp worker speaks OpenAI tool calling: its format, then whole agent runs."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from agents import Agent, MaxTurnsExceeded, ModelSettings, RunConfig, RunHooks, Runner
from agents import function_tool as tool
from agents.items import ModelResponse
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI

from agent_eval.agents import load_runner
from agent_eval.backends.llamacpp_chat import render
from agent_eval.backends.llamacpp_server import fit_messages
from agent_eval.data import load_dataset
from agent_eval.results.files import RunDirectory
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig as EvalConfig
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config
from tests.helpers.llamacpp import MODEL, MULTIPLY, QUESTION
from tests.helpers.proxy import FAST_HEALTH, StartProxy

# The Responses API's flat tool shape.
MULTIPLY_TOOL = {"type": "function", **MULTIPLY["function"]}
CALL = {"id": "call_1", "type": "function", "function": {"name": "multiply", "arguments": "{}"}}


def test_the_prompt_carries_tools_calls_and_their_results() -> None:
    prompt = render(
        [
            {"role": "user", "content": [{"type": "text", "text": "What is 12 times 7?"}]},
            {"role": "assistant", "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "84"},
        ],
        [MULTIPLY],
    )
    system, user, assistant, result, answer = prompt.split("<|im_start|>")[1:]
    assert system.startswith("system\n\n\nYou have access") and "functions.multiply:" in system
    assert '"description": "Multiply two numbers."' in system
    assert user == "user\nWhat is 12 times 7?<|im_end|>\n"
    assert assistant == "assistant\nfunctions.multiply:\n{}<|im_end|>\n"
    assert result == "user\nfunctions.multiply returned:\n84<|im_end|>\n"
    assert answer == "assistant\n"


def test_without_tools_the_prompt_is_plain_chatml() -> None:
    prompt = render(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}], []
    )
    assert prompt == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_openai_message_shapes_are_fitted_and_anything_else_passes_untouched() -> None:
    body = {
        "messages": [
            {"role": "developer", "content": "Use tools."},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
        ]
    }
    fitted = orjson.loads(fit_messages(orjson.dumps(body)))
    assert fitted["messages"] == [
        {"role": "system", "content": "Use tools."},
        {"role": "assistant", "tool_calls": [CALL]},
    ]
    for odd in (b"not json", b"[1, 2]", b'{"messages": 3}', b'{"prompt": "x"}'):
        assert fit_messages(odd) == odd


def _client(base_url: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0)


async def test_a_tool_round_trip_in_the_shapes_the_agents_sdk_sends(embedded_url: str) -> None:
    async with _client(embedded_url + "/v1") as client:
        first = await client.chat.completions.create(
            model=MODEL, messages=QUESTION, tools=[MULTIPLY], tool_choice="required", seed=1
        )
        (call,) = first.choices[0].message.tool_calls
        assert call.function.name == "multiply" and first.choices[0].finish_reason == "tool_calls"
        assert set(json.loads(call.function.arguments)) == {"a", "b"}
        history = [
            {"role": "developer", "content": "You solve arithmetic with tools."},
            *QUESTION,
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": "84"},
        ]
        # tool_choice left out, as the Agents SDK does: OpenAI's default with tools is auto.
        second = await client.chat.completions.create(
            model=MODEL, messages=history, tools=[MULTIPLY], seed=1, max_tokens=48
        )
    message = second.choices[0].message
    assert message.tool_calls or message.content, "auto answered with neither words nor a call"
    assert second.usage.prompt_tokens > first.usage.prompt_tokens


async def test_streams_carry_words_or_calls(embedded_url: str) -> None:
    async with _client(embedded_url + "/v1") as client:
        words = await client.chat.completions.create(
            model=MODEL, messages=QUESTION, tools=[MULTIPLY], tool_choice="none",
            max_tokens=16, stream=True,
        )  # fmt: skip
        text = "".join([chunk.choices[0].delta.content or "" async for chunk in words])
        calls = await client.chat.completions.create(
            model=MODEL, messages=QUESTION, tools=[MULTIPLY], tool_choice="required", stream=True
        )
        chunks = [chunk async for chunk in calls]
    assert text.strip()
    (call,) = chunks[0].choices[0].delta.tool_calls
    assert call.function.name == "multiply" and json.loads(call.function.arguments)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
}


@pytest.mark.parametrize("schema", [ANSWER_SCHEMA, None], ids=["schema", "any-json"])
async def test_a_json_response_format_without_tools_answers_json_of_its_schema(
    embedded_url: str, schema: dict[str, Any] | None
) -> None:
    response_format: dict[str, Any] = {"type": "json_object"}
    if schema is not None:
        response_format["schema"] = schema
    async with _client(embedded_url + "/v1") as client:
        answer = await client.chat.completions.create(
            model=MODEL, messages=QUESTION, response_format=response_format,  # type: ignore[arg-type]
            max_tokens=48, seed=1, temperature=0,
        )  # fmt: skip
    value = json.loads(answer.choices[0].message.content or "")
    assert schema is None or type(value["answer"]) is int, value


async def test_agents_play_whole_trajectories_through_the_proxy(
    embedded_url: str, start_proxy: StartProxy, tmp_path: Path
) -> None:
    # Fast probes (1 s timeout) while the worker generates: /health must not wait behind it.
    base_url = await start_proxy([embedded_url], health={**FAST_HEALTH, "path": "/health"})
    # Two turns: a call, its result read back, then words or another call. A chat turn's
    # answer needs words, not many: the model runs on to the limit (50 tokens a turn at 96).
    configs = [
        engine_config(
            EvalConfig.model_validate({"eval": {"concurrency": 2}, "sampling": {"max_tokens": n}}),
            MODEL,
        )
        for n in (96, 24)
    ]
    async with _client(base_url) as client, RewardScorer(max_workers=1) as scorer:
        math = Engine(load_runner("math_calculator", max_turns=2), scorer, client, configs[0])
        problems = list(load_dataset("gsm8k_mini", limit=2))
        await math.run(problems, RunDirectory(tmp_path / "math"), total=2)
        chat = Engine(load_runner("multi_turn_chat"), scorer, client, configs[1])
        sessions = list(load_dataset("sessions_mini", limit=2))
        await chat.run(sessions, RunDirectory(tmp_path / "chat"), total=2)
    math_records = _records(tmp_path / "math")
    assert len(math_records) == 2
    calls = [call for r in math_records for call in r["trajectory"]["tool_calls"]]
    assert calls and all(
        call["name"] in {"add", "subtract", "multiply", "divide"} for call in calls
    )
    assert any(_is_number(call["result"]) for call in calls), calls
    assert all(r["error"] is None or r["error"]["kind"] == "max_turns" for r in math_records)
    assert all(r["prompt_tokens"] > 0 for r in math_records)
    assert any(r["model_calls"] == 2 for r in math_records), "no tool result was read back"
    chat_records = {r["sample_id"]: r for r in _records(tmp_path / "chat")}
    for session in sessions:
        record = chat_records[session.id]
        assert record["error"] is None
        outputs = record["trajectory"]["turn_outputs"]
        assert len(outputs) == len(session.turns) and all(outputs)
        assert len(record["turn_rewards"]) == len(session.turns)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


async def test_responses_are_translated_for_the_embedded_worker(
    embedded_url: str, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy([embedded_url], health={**FAST_HEALTH, "path": "/health"})
    async with _client(base_url) as client:
        first = await client.responses.create(
            model=MODEL, input=QUESTION, tools=[MULTIPLY_TOOL], tool_choice="required"
        )
        (call,) = [item for item in first.output if item.type == "function_call"]
        assert call.name == "multiply" and set(json.loads(call.arguments)) == {"a", "b"}
        result = {"type": "function_call_output", "call_id": call.call_id, "output": "84"}
        history = [*QUESTION, call.model_dump(exclude_none=True), result]
        stream = await client.responses.create(
            model=MODEL, input=history, tools=[MULTIPLY_TOOL], max_output_tokens=48, stream=True
        )
        events = [event async for event in stream]
    final = events[-1]
    assert final.type in {"response.completed", "response.incomplete"}, final
    assert final.response.output, "the answer after the tool result is empty"
    assert final.response.usage and first.usage
    assert final.response.usage.input_tokens > first.usage.input_tokens
    workers_url = base_url.removesuffix("/v1") + "/workers"
    async with aiohttp.ClientSession() as http, http.get(workers_url) as answer:
        (worker,) = (await answer.json())["workers"]
    assert worker["responses_api"] == "translated"


class ModelCalls(RunHooks):
    """The input items of each model call of a run, and its answers."""

    def __init__(self) -> None:
        self.inputs: list[list[dict]] = []
        self.answers: list[ModelResponse] = []

    async def on_llm_start(self, context, agent, system_prompt, input_items) -> None:  # type: ignore[no-untyped-def]
        self.inputs.append([dict(item) for item in input_items])

    async def on_llm_end(self, context, agent, response) -> None:  # type: ignore[no-untyped-def]
        self.answers.append(response)


async def test_the_agents_sdk_in_its_default_mode_runs_tools_on_the_embedded_worker(
    embedded_url: str, start_proxy: StartProxy
) -> None:
    base_url = await start_proxy([embedded_url], health={**FAST_HEALTH, "path": "/health"})
    ran: list[tuple[float, float]] = []

    @tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        ran.append((a, b))
        return a * b

    calls = ModelCalls()
    async with _client(base_url) as client:
        agent = Agent(
            name="calc",
            instructions="Use the multiply tool.",
            tools=[multiply],
            model=MODEL,
            model_settings=ModelSettings(tool_choice="required", max_tokens=64),
        )
        # OpenAIProvider's default is the Responses API, as in unmodified Agents SDK code.
        config = RunConfig(model_provider=OpenAIProvider(openai_client=client))
        config.tracing_disabled = True
        # The 135M model may call the tool again instead of answering; the round trip is the point.
        with contextlib.suppress(MaxTurnsExceeded):
            await Runner.run(
                agent, QUESTION[0]["content"], run_config=config, hooks=calls, max_turns=3
            )
    assert ran, "the tool never ran"
    returned = [
        i for items in calls.inputs[1:] for i in items if i.get("type") == "function_call_output"
    ]
    assert returned and len(calls.answers) == len(calls.inputs) >= 2
    assert all((answer.response_id or "").startswith("resp_") for answer in calls.answers)
