"""Real OpenAI clients through the proxy: chat, completions, responses, streaming, tool calls."""

from __future__ import annotations

import json

import aiohttp

from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers


async def test_chat_completion_through_proxy(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers)
    answer = await make_client(base_url).chat.completions.create(
        model="mock-model", messages=[{"role": "user", "content": "two plus two"}]
    )
    assert answer.choices[0].message.content.endswith("two plus two")
    assert answer.usage.total_tokens > 0
    assert answer.system_fingerprint in {"w0", "w1"}


async def test_tool_calls_pass_through_intact(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    call = ToolCall("multiply", json.dumps({"a": 6, "b": 7}))
    worker.script(Reply(tool_calls=[call]), Reply(tool_calls=[call]))
    base_url = await start_proxy([worker])
    messages = [{"role": "user", "content": "6 times 7?"}]
    plain = await make_client(base_url).chat.completions.create(
        model="mock-model", messages=messages
    )
    assert plain.choices[0].finish_reason == "tool_calls"
    (got,) = plain.choices[0].message.tool_calls
    assert (got.id, got.function.name, json.loads(got.function.arguments)) == (
        call.id,
        "multiply",
        {"a": 6, "b": 7},
    )

    stream = await make_client(base_url).chat.completions.create(
        model="mock-model", messages=messages, stream=True
    )
    names, arguments, finish = "", "", None
    async for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            names += delta_call.function.name or ""
            arguments += delta_call.function.arguments or ""
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert (names, json.loads(arguments), finish) == ("multiply", {"a": 6, "b": 7}, "tool_calls")
    worker.assert_script_used_up()


async def test_streaming_arrives_chunk_by_chunk(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.stream_chunks = 5
    worker.behavior.chunk_delay = 0.05
    base_url = await start_proxy([worker])
    stream = await make_client(base_url).chat.completions.create(
        model="mock-model",
        messages=[{"role": "user", "content": "count to five slowly please"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    pieces = [
        c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content
    ]
    assert len(pieces) == 5, "the stream was buffered into fewer chunks"
    assert "".join(pieces).endswith("count to five slowly please")


async def test_completions_and_responses_routes(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers)
    openai = make_client(base_url)
    text = await openai.completions.create(model="mock-model", prompt="once upon a time")
    assert text.choices[0].text
    response = await openai.responses.create(model="mock-model", input="what is seven")
    assert response.output_text.endswith("what is seven")
    events = [
        event.type
        async for event in await openai.responses.create(
            model="mock-model", input="hi", stream=True
        )
    ]
    assert events[0] == "response.created" and events[-1] == "response.completed"


async def test_models_lists_what_healthy_workers_serve(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = [*await start_workers(1, model="alpha"), *await start_workers(1, model="beta")]
    base_url = await start_proxy(workers)
    listed = await make_client(base_url).models.list()
    assert sorted(m.id for m in listed.data) == ["alpha", "beta"]


async def test_requests_route_by_model_when_workers_differ(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    alpha = (await start_workers(1, model="alpha"))[0]
    beta = (await start_workers(1, model="beta"))[0]
    base_url = await start_proxy([alpha, beta])
    openai = make_client(base_url)
    for _ in range(4):
        answer = await openai.chat.completions.create(
            model="beta", messages=[{"role": "user", "content": "x"}]
        )
        assert answer.model == "beta"
    assert beta.stats.generation_requests == 4
    assert alpha.stats.generation_requests == 0
    async with aiohttp.ClientSession() as http:
        body = {"model": "gamma", "messages": [{"role": "user", "content": "x"}]}
        async with http.post(f"{base_url}/chat/completions", json=body) as response:
            error = (await response.json())["error"]
    assert response.status == 404
    assert error["code"] == "model_not_found" and "alpha" in error["message"]


async def test_session_header_keeps_a_conversation_on_one_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(3)
    base_url = await start_proxy(workers)
    for session in ("alice", "bob", "carol", "dave"):
        openai = make_client(base_url, session)
        seen = set()
        for turn in range(4):
            answer = await openai.chat.completions.create(
                model="mock-model", messages=[{"role": "user", "content": f"turn {turn}"}]
            )
            seen.add(answer.system_fingerprint)
        assert len(seen) == 1, f"session {session} visited {seen}"


async def test_agents_sdk_runs_through_proxy(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

    (worker,) = await start_workers(1)
    worker.script(
        Reply(tool_calls=[ToolCall("add", json.dumps({"a": 2, "b": 3}))]),
        Reply("The answer is 5."),
    )
    base_url = await start_proxy([worker])

    @function_tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    agent = Agent(
        name="calc",
        instructions="Use the tools.",
        tools=[add],
        model=OpenAIChatCompletionsModel(model="mock-model", openai_client=make_client(base_url)),
    )
    result = await Runner.run(agent, "2 + 3?", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "The answer is 5."
    tool_outputs = [
        item.output for item in result.new_items if item.type == "tool_call_output_item"
    ]
    assert tool_outputs == [5.0]
    worker.assert_script_used_up()
