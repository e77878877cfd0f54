"""Responses API <-> Chat Completions translation, checked against the openai SDK's own parsers."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx2
import openai
import orjson
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from agent_eval.proxy.fields import InvalidType, UnsupportedField
from agent_eval.proxy.responses.errors import PreviousResponseNotFound
from agent_eval.proxy.responses.events import StreamTranslator
from agent_eval.proxy.responses.native import NativeFailure
from agent_eval.proxy.responses.request import to_chat_request
from agent_eval.proxy.responses.response import to_response
from agent_eval.proxy.responses.translation import Translation
from agent_eval.proxy.upstream.assemble import StreamAssembler
from agent_eval.proxy.upstream.sse import SSEReader, encode_event
from agent_eval.proxy.upstream.streaming import Passthrough
from agent_eval.testing.replies import Reply, ReplyMeta, ToolCall, response_stream

EVENTS = TypeAdapter(ResponseStreamEvent)
WEATHER_TOOL = {
    "type": "function",
    "name": "weather",
    "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "strict": True,
}
RESPONSE_ID = "resp_abc"
MAX_EVENT_BYTES = 1 << 20


def chat_answer(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A non-streamed Chat Completions answer."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "qwen",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 11,
            "completion_tokens": 7,
            "total_tokens": 18,
            "prompt_tokens_details": {"cached_tokens": 4},
        },
    }


def tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(delta: dict[str, Any] | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    """A `chat.completion.chunk` with one choice."""
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish_reason}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "qwen",
        "choices": [choice],
    }


USAGE_CHUNK = {
    "id": "chatcmpl-1",
    "object": "chat.completion.chunk",
    "created": 1700000000,
    "model": "qwen",
    "choices": [],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
}


def call_delta(index: int, **fields: Any) -> dict[str, Any]:
    """A chunk carrying one piece of tool call `index`."""
    call: dict[str, Any] = {"index": index}
    if "id" in fields:
        call |= {"id": fields["id"], "type": "function"}
    call["function"] = {key: fields[key] for key in ("name", "arguments") if key in fields}
    return chunk({"tool_calls": [call]})


TEXT_CHUNKS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hel"}),
    chunk({"content": "lo"}),
    chunk(finish_reason="stop"),
    USAGE_CHUNK,
]
TOOL_CHUNKS = [
    chunk({"role": "assistant", "content": "Checking."}),
    call_delta(0, id="call_a", name="weather", arguments=""),
    call_delta(0, arguments='{"city":'),
    call_delta(1, id="call_b", name="weather", arguments='{"city": "Oslo"}'),
    call_delta(0, arguments=' "Paris"}'),
    chunk(finish_reason="tool_calls"),
    USAGE_CHUNK,
]


def translate(chunks: Iterable[dict[str, Any]], request: dict[str, Any]) -> list[dict[str, Any]]:
    translator = StreamTranslator(request, RESPONSE_ID)
    events = [event for piece in chunks for event in translator.feed(piece)]
    return events + translator.finish()


def sdk_client(handler: Any) -> openai.OpenAI:
    """An openai client whose HTTP requests `handler` answers."""
    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    return openai.OpenAI(base_url="http://proxy.test/v1", api_key="k", http_client=http)


def serving(body: bytes, content_type: str, seen: list[dict[str, Any]]) -> Any:
    """A handler that records the request body and answers `body`."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/responses"
        seen.append(json.loads(request.content))
        return httpx2.Response(200, content=body, headers={"content-type": content_type})

    return handle


def sse_body(chunks: Iterable[dict[str, Any]], request: dict[str, Any]) -> bytes:
    return b"".join(encode_event(event) for event in translate(chunks, request))


# Requests


def test_string_input_and_instructions() -> None:
    chat = to_chat_request({"model": "m", "instructions": "Be brief.", "input": "Hi"})
    assert chat == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
    }


def test_message_items_roles_and_parts() -> None:
    chat = to_chat_request(
        {
            "model": "m",
            "input": [
                {"role": "developer", "content": "Rules."},
                {"type": "message", "role": "system", "content": "More rules."},
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "line 1"},
                        {"type": "input_text", "text": "line 2"},
                    ],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "ok", "annotations": []}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "what is this?"},
                        {"type": "input_image", "image_url": "https://x/cat.png", "detail": "low"},
                    ],
                },
            ],
        }
    )
    assert chat["messages"] == [
        {"role": "system", "content": "Rules."},
        {"role": "system", "content": "More rules."},
        {"role": "user", "content": "line 1\nline 2"},
        {"role": "assistant", "content": "ok"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/cat.png", "detail": "low"}},
            ],
        },
    ]


def test_tool_round_trip_items_become_tool_calls_and_tool_messages() -> None:
    chat = to_chat_request(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "Weather in Paris and Oslo?"},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "message", "role": "assistant", "content": "Checking."},
                {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "weather", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                {
                    "type": "function_call_output",
                    "call_id": "c2",
                    "output": [{"type": "input_text", "text": "rain"}],
                },
                {"type": "function_call", "call_id": "c3", "name": "weather", "arguments": "{}"},
            ],
        }
    )
    calls = [tool_call(c, "weather", "{}") for c in ("c1", "c2", "c3")]
    assert chat["messages"] == [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "content": "Checking.", "tool_calls": calls[:2]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "c2", "content": "rain"},
        {"role": "assistant", "content": None, "tool_calls": calls[2:]},
    ]


def test_tools_flattened_and_sampling_settings() -> None:
    chat = to_chat_request(
        {
            "model": "m",
            "input": "hi",
            "tools": [WEATHER_TOOL],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_output_tokens": 64,
            "parallel_tool_calls": False,
            "store": False,
            "metadata": {"k": "v"},
            "client_metadata": {"session_id": "s-1"},
            "seed": 7,
            "top_k": 20,
            "stop": ["\n\n"],
        }
    )
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Weather in a city",
                "parameters": WEATHER_TOOL["parameters"],
                "strict": True,
            },
        }
    ]
    assert (chat["temperature"], chat["top_p"], chat["max_tokens"]) == (0.2, 0.9, 64)
    assert chat["parallel_tool_calls"] is False
    # Extra sampling fields SGLang, vLLM and llama.cpp accept pass as they are.
    assert (chat["seed"], chat["top_k"], chat["stop"]) == (7, 20, ["\n\n"])
    assert not {"store", "metadata", "client_metadata"} & chat.keys()


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ({"type": "function", "name": "x"}, {"type": "function", "function": {"name": "x"}}),
    ],
)
def test_tool_choice(choice: Any, expected: Any) -> None:
    chat = to_chat_request({"model": "m", "input": "hi", "tool_choice": choice})
    assert chat["tool_choice"] == expected


@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ({"type": "text"}, None),
        ({"type": "json_object"}, {"type": "json_object"}),
        (
            {"type": "json_schema", "name": "city", "schema": {"type": "object"}, "strict": True},
            {
                "type": "json_schema",
                "json_schema": {"name": "city", "schema": {"type": "object"}, "strict": True},
            },
        ),
    ],
)
def test_text_format(fmt: dict[str, Any], expected: dict[str, Any] | None) -> None:
    chat = to_chat_request({"model": "m", "input": "hi", "text": {"format": fmt}})
    assert chat.get("response_format") == expected


def test_streaming_asks_for_usage() -> None:
    chat = to_chat_request({"model": "m", "input": "hi", "stream": True})
    assert chat["stream"] is True
    assert chat["stream_options"] == {"include_usage": True}


def test_background_false_is_accepted() -> None:
    assert "background" not in to_chat_request({"model": "m", "input": "hi", "background": False})


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"tools": [WEATHER_TOOL, {"type": "web_search"}]}, "tools[1]"),
        ({"tools": [{"type": "file_search", "vector_store_ids": ["v"]}]}, "tools[0]"),
        ({"tools": [{"type": "computer_use_preview"}]}, "tools[0]"),
        ({"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}, "tools[0]"),
        ({"tools": [{"type": "mcp", "server_label": "s"}]}, "tools[0]"),
        ({"tool_choice": {"type": "web_search_preview"}}, "tool_choice"),
        ({"background": True}, "background"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt"),
        ({"frobnicate": 1}, "frobnicate"),
        ({"text": {"format": {"type": "grammar"}}}, "text.format.type"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
        ({"input": [{"type": "web_search_call", "id": "ws_1"}]}, "input[0].type"),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role"),
        ({"input": [{"content": "x"}]}, "input[0].role"),
        (
            {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0].call_id",
        ),
        ({"tools": [{"type": "function"}]}, "tools[0].name"),
        ({"tools": [{"name": "f"}]}, "tools[0].type"),
        ({"text": {"format": {"name": "x"}}}, "text.format.type"),
        ({"tool_choice": {"name": "f"}}, "tool_choice.type"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "file_id": "f"}]}]},
            "input[0].content[0].type",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "input[0].content[0].file_id",
        ),
        (
            {
                "input": [
                    {
                        "type": "function_call_output",
                        "call_id": "c",
                        "output": [{"type": "input_image", "image_url": "https://x/a.png"}],
                    }
                ]
            },
            "input[0].output",
        ),
    ],
)
def test_unsupported_fields_are_named(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(UnsupportedField) as raised:
        to_chat_request({"model": "m", "input": "hi"} | extra)
    assert raised.value.field == field
    assert f"`{field}`" in raised.value.message


def test_an_unknown_previous_response_is_a_404_saying_what_to_send() -> None:
    with pytest.raises(PreviousResponseNotFound) as raised:
        Translation.of({"model": "m", "input": "hi", "previous_response_id": "resp_1"})
    assert (raised.value.status, raised.value.field) == (404, "previous_response_id")
    assert "'resp_1'" in raised.value.message and "whole conversation" in raised.value.message


def test_a_tool_without_a_type_is_said_to_miss_it() -> None:
    with pytest.raises(UnsupportedField) as raised:
        to_chat_request({"model": "m", "input": "hi", "tools": [{"name": "f"}]})
    assert "missing" in raised.value.message and "None" not in raised.value.message


def test_a_namespace_of_tools_is_not_called_built_in() -> None:
    group = {"type": "namespace", "name": "agents", "tools": [WEATHER_TOOL]}
    with pytest.raises(UnsupportedField) as raised:
        to_chat_request({"model": "m", "input": "hi", "tools": [WEATHER_TOOL, group]})
    assert raised.value.field == "tools[1]"
    assert "namespace" in raised.value.message and "OpenAI's servers" not in raised.value.message


def message(content: Any) -> dict[str, Any]:
    return {"input": [{"role": "user", "content": content}]}


def call(**fields: Any) -> dict[str, Any]:
    return {
        "input": [
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"} | fields
        ]
    }


def tool(**fields: Any) -> dict[str, Any]:
    return {"tools": [{"type": "function", "name": "f"} | fields]}


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"input": 3}, "input"),
        ({"input": {"role": "user"}}, "input"),
        ({"input": ["hi"]}, "input[0]"),
        ({"input": [None]}, "input[0]"),
        ({"input": [{"type": 5, "role": "user", "content": "x"}]}, "input[0].type"),
        ({"input": [{"role": ["user"], "content": "x"}]}, "input[0].role"),
        (message(5), "input[0].content"),
        (message({"type": "input_text"}), "input[0].content"),
        (message([5]), "input[0].content[0]"),
        (message([{"type": ["input_text"]}]), "input[0].content[0].type"),
        (message([{"type": "input_text", "text": 5}]), "input[0].content[0].text"),
        (message([{"type": "refusal", "refusal": {}}]), "input[0].content[0].refusal"),
        (message([{"type": "input_image", "image_url": 5}]), "input[0].content[0].image_url"),
        (
            message([{"type": "input_image", "image_url": "u", "detail": 1}]),
            "input[0].content[0].detail",
        ),
        (call(name=5), "input[0].name"),
        (call(arguments={"a": 1}), "input[0].arguments"),
        (call(call_id=7), "input[0].call_id"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]},
            "input[0].output",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": 5, "output": "x"}]},
            "input[0].call_id",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": "c", "output": [[]]}]},
            "input[0].output[0]",
        ),
        ({"tools": "x"}, "tools"),
        ({"tools": [None]}, "tools[0]"),
        ({"tools": [5]}, "tools[0]"),
        ({"tools": [{"type": {}}]}, "tools[0].type"),
        (tool(name=5), "tools[0].name"),
        (tool(description=5), "tools[0].description"),
        (tool(parameters="x"), "tools[0].parameters"),
        (tool(strict="yes"), "tools[0].strict"),
        ({"tool_choice": 5}, "tool_choice"),
        ({"tool_choice": {"type": 5}}, "tool_choice.type"),
        ({"tool_choice": {"type": "function", "name": 5}}, "tool_choice.name"),
        ({"text": "x"}, "text"),
        ({"text": {"format": 5}}, "text.format"),
        ({"text": {"format": {"type": 5}}}, "text.format.type"),
        ({"text": {"format": {"type": "json_schema", "schema": "x"}}}, "text.format.schema"),
        ({"instructions": 5}, "instructions"),
        ({"instructions": [{"role": "system", "content": "x"}]}, "instructions"),
        ({"model": 5}, "model"),
        ({"temperature": "hot"}, "temperature"),
        ({"top_p": True}, "top_p"),
        ({"max_output_tokens": 1.5}, "max_output_tokens"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
        ({"stream": "yes"}, "stream"),
        ({"background": "yes"}, "background"),
    ],
)
def test_fields_of_the_wrong_type_are_named(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidType) as raised:
        to_chat_request({"model": "m", "input": "hi"} | extra)
    assert (raised.value.status, raised.value.code, raised.value.field) == (
        400,
        "invalid_type",
        field,
    )
    assert raised.value.message.startswith(f"`{field}` must be ")


def test_a_previous_response_id_of_the_wrong_type_is_named() -> None:
    with pytest.raises(InvalidType) as raised:
        Translation.of({"model": "m", "input": "hi", "previous_response_id": 5})
    assert raised.value.field == "previous_response_id"
    assert raised.value.message == "`previous_response_id` must be a string, not integer"


def test_numbers_take_integers_and_booleans_are_not_numbers() -> None:
    chat = to_chat_request({"model": "m", "input": "hi", "temperature": 1, "top_p": 0.5})
    assert (chat["temperature"], chat["top_p"]) == (1, 0.5)
    with pytest.raises(InvalidType, match="must be an integer, not boolean"):
        to_chat_request({"model": "m", "input": "hi", "max_output_tokens": True})


# Responses


def test_text_answer_to_response() -> None:
    request = {"model": "m", "input": "hi", "instructions": "Be brief.", "temperature": 0.5}
    body = to_response(chat_answer("Hello"), request, RESPONSE_ID)
    response = Response.model_validate(body)
    assert (response.id, response.status, response.model) == (RESPONSE_ID, "completed", "qwen")
    assert response.output_text == "Hello"
    assert (response.instructions, response.temperature, response.tool_choice) == (
        "Be brief.",
        0.5,
        "auto",
    )
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)
    assert response.usage.total_tokens == 18
    assert response.usage.input_tokens_details.cached_tokens == 4
    assert response.usage.output_tokens_details.reasoning_tokens == 0


def test_tool_call_answer_to_response() -> None:
    calls = [tool_call("call_1", "weather", '{"city": "Paris"}'), tool_call("", "weather", "{}")]
    request = {"model": "m", "input": "hi", "tools": [WEATHER_TOOL]}
    body = to_response(chat_answer(None, calls, "tool_calls"), request, RESPONSE_ID)
    response = Response.model_validate(body)
    first, second = response.output
    assert first.type == "function_call" and second.type == "function_call"
    assert (first.call_id, first.name) == ("call_1", "weather")
    assert first.arguments == '{"city": "Paris"}'
    assert second.call_id == "call_abc_1", "a missing call id is made up, not left empty"
    assert first.id != second.id
    assert response.tools[0].type == "function"


def test_length_finish_is_incomplete() -> None:
    body = to_response(chat_answer("Hel", finish_reason="length"), {"input": "hi"}, RESPONSE_ID)
    response = Response.model_validate(body)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.output[0].status == "incomplete"


def test_sdk_parses_non_streamed_response() -> None:
    seen: list[dict[str, Any]] = []
    calls = [tool_call("call_1", "weather", '{"city": "Paris"}')]
    request = {"model": "qwen", "input": "Weather?", "tools": [WEATHER_TOOL]}
    body = orjson.dumps(to_response(chat_answer("Let me check.", calls, "tool_calls"), request))
    client = sdk_client(serving(body, "application/json", seen))
    response = client.responses.create(model="qwen", input="Weather?", tools=[WEATHER_TOOL])
    assert to_chat_request(seen[0])["tools"][0]["function"]["name"] == "weather"
    assert response.output_text == "Let me check."
    (call,) = [item for item in response.output if item.type == "function_call"]
    assert (call.call_id, json.loads(call.arguments)) == ("call_1", {"city": "Paris"})


# Streams


def test_every_event_parses_and_sequence_numbers_count_up() -> None:
    events = translate(TOOL_CHUNKS, {"model": "m", "input": "hi"})
    for event in events:
        EVENTS.validate_python(event)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))


def test_text_stream_events() -> None:
    events = translate(TEXT_CHUNKS, {"model": "m", "input": "hi"})
    assert [event["type"] for event in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = events[-1]["response"]
    assert Response.model_validate(final).output_text == "Hello"
    assert final["usage"]["total_tokens"] == 8


def test_stream_final_response_matches_to_response() -> None:
    request = {"model": "m", "input": "hi"}
    translator = StreamTranslator(request, RESPONSE_ID)
    for piece in TOOL_CHUNKS:
        translator.feed(piece)
    final = translator.finish()[-1]["response"]
    expected = to_response(translator.assembled(), request, RESPONSE_ID)
    assert final | {"completed_at": None} == expected | {"completed_at": None}


def test_tool_call_arguments_wait_for_the_name() -> None:
    chunks = [
        call_delta(0, arguments='{"a"'),
        call_delta(0, id="call_x", name="f", arguments=": 1}"),
        chunk(finish_reason="tool_calls"),
    ]
    events = translate(chunks, {"model": "m", "input": "hi"})
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert (added["item"]["call_id"], added["item"]["name"]) == ("call_x", "f")
    deltas = [e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert "".join(deltas) == '{"a": 1}'
    final = events[-1]["response"]
    assert final["output"][0]["arguments"] == '{"a": 1}'
    assert final["usage"] is None


def test_truncated_stream_ends_with_incomplete() -> None:
    chunks = [chunk({"content": "Hel"}), chunk(finish_reason="length")]
    events = translate(chunks, {"model": "m", "input": "hi"})
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_empty_stream_still_completes() -> None:
    events = translate([], {"model": "m", "input": "hi"})
    assert [event["type"] for event in events] == [
        "response.created",
        "response.in_progress",
        "response.completed",
    ]
    assert events[-1]["response"]["output"] == []


def test_sdk_parses_text_stream() -> None:
    seen: list[dict[str, Any]] = []
    client = sdk_client(serving(sse_body(TEXT_CHUNKS, {}), "text/event-stream", seen))
    events = list(client.responses.create(model="qwen", input="hi", stream=True))
    assert seen[0]["stream"] is True
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert "".join(deltas) == "Hello"
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Hello"


def test_sdk_stream_helper_assembles_tool_calls() -> None:
    request = {"model": "qwen", "input": "Weather?", "tools": [WEATHER_TOOL]}
    body = sse_body(TOOL_CHUNKS, request)
    client = sdk_client(serving(body, "text/event-stream", []))
    with client.responses.stream(model="qwen", input="Weather?", tools=[WEATHER_TOOL]) as stream:
        snapshots = [
            event.snapshot
            for event in stream
            if event.type == "response.function_call_arguments.delta"
        ]
        final = stream.get_final_response()
    assert snapshots[-1] == '{"city": "Paris"}'
    assert final.output_text == "Checking."
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.call_id, json.loads(c.arguments)) for c in calls] == [
        ("call_a", {"city": "Paris"}),
        ("call_b", {"city": "Oslo"}),
    ]
    assert final.usage is not None and final.usage.total_tokens == 8


def test_text_after_a_tool_call_goes_to_one_message() -> None:
    chunks = [
        call_delta(0, id="call_a", name="weather", arguments="{}"),
        chunk({"content": "Done."}),
        chunk(finish_reason="tool_calls"),
    ]
    client = sdk_client(serving(sse_body(chunks, {}), "text/event-stream", []))
    with client.responses.stream(model="qwen", input="hi") as stream:
        final = stream.get_final_response()
    assert final.output_text == "Done."
    assert [item.type for item in final.output] == ["message", "function_call"]


# Native streams that break


def native_events(reply: Reply) -> list[bytes]:
    """The SSE events a worker serving the Responses API itself streams for `reply`."""
    meta = ReplyMeta("resp_native", "qwen", 1700000000, "w", 3, 2, include_usage=False)
    return list(response_stream(reply, meta))


def failed_event(ending: bytes) -> Any:
    """The one `response.failed` event in `ending`, as the SDK parses it."""
    (event,) = SSEReader(MAX_EVENT_BYTES).feed(ending)
    return EVENTS.validate_python(event)


def test_a_native_stream_broken_mid_way_ends_with_its_own_response_failed() -> None:
    sent = native_events(Reply("Hello there.", [ToolCall("weather", '{"city": "Oslo"}', "c1")]))
    done = next(i for i, event in enumerate(sent) if b"response.output_item.done" in event)
    ending = NativeFailure({"model": "qwen", "input": "hi"})
    relay = Passthrough(StreamAssembler(), ending, MAX_EVENT_BYTES)
    assert [relay.feed(event) for event in sent[: done + 2]] == sent[: done + 2]
    failed = failed_event(relay.broken("the stream broke"))
    assert (failed.type, failed.sequence_number) == ("response.failed", done + 2)
    assert (failed.response.id, failed.response.status) == ("resp_native", "failed")
    assert failed.response.error is not None
    assert failed.response.error.message == "the stream broke"
    assert [item.type for item in failed.response.output] == ["message"]
    assert failed.response.output_text == "Hello there."


def test_a_native_stream_broken_before_its_first_event_gets_a_fresh_id() -> None:
    ending = NativeFailure({"model": "qwen", "input": "hi", "temperature": 0.5})
    Passthrough(None, ending, MAX_EVENT_BYTES).feed(b'event: response.created\ndata: {"type": "r')
    failed = failed_event(ending.broken("gone"))
    assert failed.sequence_number == 0 and failed.response.id.startswith("resp_")
    assert (failed.response.model, failed.response.temperature) == ("qwen", 0.5)


def test_a_native_stream_that_already_ended_gets_nothing_more() -> None:
    ending = NativeFailure({})
    relay = Passthrough(None, ending, MAX_EVENT_BYTES)
    for event in native_events(Reply("Hi.")):
        relay.feed(event)
    assert ending.broken("late") == b""


def test_other_streams_end_with_an_error_line() -> None:
    line = Passthrough(None, None, MAX_EVENT_BYTES).broken("the stream broke")
    assert line.startswith(b"data: ") and line.endswith(b"\n\n")
    assert orjson.loads(line[6:])["error"]["code"] == "stream_interrupted"
