"""The Messages translation both ways: requests to Chat Completions, answers and streams back."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest
from aiohttp import web
from anthropic.types import Message, RawMessageStreamEvent
from multidict import CIMultiDict, CIMultiDictProxy
from pydantic import TypeAdapter

from agent_eval.proxy.errors import error_response, in_envelope
from agent_eval.proxy.fields import InvalidType, UnsupportedField
from agent_eval.proxy.messages.assemble import MessageAssembler
from agent_eval.proxy.messages.events import StreamTranslator
from agent_eval.proxy.messages.native import MessagesNativeFailure
from agent_eval.proxy.messages.request import to_chat_request
from agent_eval.proxy.messages.response import to_message
from agent_eval.proxy.messages.translation import CountTranslation, MessagesTranslation
from agent_eval.proxy.server.auth import client_authorized
from agent_eval.proxy.upstream.sse import MalformedStream, SSEReader
from agent_eval.testing.replies import Reply, ReplyMeta, ToolCall, chat_body, chat_stream
from agent_eval.usage import reported_tokens

EVENTS: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)
BASE = {"model": "m", "max_tokens": 16}
META = ReplyMeta("chatcmpl-1", "m", 0, "fp", 7, 3, include_usage=True)


def chat_of(**fields: Any) -> dict[str, Any]:
    return to_chat_request({**BASE, **fields})


def test_system_blocks_and_a_whole_conversation_become_chat_messages() -> None:
    chat = chat_of(
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "x"},
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}},
                    {"type": "tool_use", "id": "t2", "name": "g", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": [{"type": "text", "text": "no such file"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "And now?"},
                ],
            },
        ],
    )
    assert chat["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "a\nb"},
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"x":1}'}},
                {"id": "t2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "one"},
        {"role": "tool", "tool_call_id": "t2", "content": "Error: no such file"},
        {"role": "user", "content": "And now?"},
    ]
    assert "stream" not in chat and chat["max_tokens"] == 16


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, {"tool_choice": "auto"}),
        ({"type": "any"}, {"tool_choice": "required"}),
        ({"type": "none"}, {"tool_choice": "none"}),
        (
            {"type": "tool", "name": "f", "disable_parallel_tool_use": True},
            {
                "tool_choice": {"type": "function", "function": {"name": "f"}},
                "parallel_tool_calls": False,
            },
        ),
    ],
)
def test_tool_choice_maps(choice: dict[str, Any], expected: dict[str, Any]) -> None:
    chat = chat_of(messages=[], tool_choice=choice)
    assert {k: chat[k] for k in expected} == expected


def test_sampling_stops_structured_output_and_streams_map() -> None:
    chat = chat_of(
        messages=[],
        temperature=0.2,
        top_p=0.9,
        top_k=5,
        stop_sequences=["\n\n"],
        stream=True,
        metadata={"user_id": "u"},
        thinking={"type": "enabled", "budget_tokens": 1024},
        output_config={
            "effort": "low",
            "format": {"type": "json_schema", "schema": {"type": "object"}},
        },
    )
    assert {k: chat[k] for k in ("temperature", "top_p", "top_k", "stop")} == {
        "temperature": 0.2,
        "top_p": 0.9,
        "top_k": 5,
        "stop": ["\n\n"],
    }
    assert chat["stream_options"] == {"include_usage": True} and "metadata" not in chat
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {"type": "object"}},
    }


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"max_tokens": None, "messages": []}, "max_tokens"),
        ({"messages": [], "mcp_servers": []}, "mcp_servers"),
        ({"messages": [], "surprise": 1}, "surprise"),
        ({"messages": [], "tools": [{"type": "bash_20250124", "name": "bash"}]}, "tools[0].type"),
        ({"messages": [{"role": "system", "content": "x"}]}, "messages[0].role"),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
            "messages[0].content[0].type",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image",
                                "source": {"type": "file", "file_id": "f"},
                            }
                        ],
                    }
                ]
            },
            "messages[0].content[0].source.type",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t",
                                "content": [
                                    {"type": "image", "source": {"type": "url", "url": "u"}}
                                ],
                            }
                        ],
                    }
                ]
            },
            "messages[0].content[0].content",
        ),
    ],
)
def test_what_has_no_translation_is_refused_by_name(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(UnsupportedField) as caught:
        to_chat_request({**BASE, **fields})
    assert caught.value.field == field and caught.value.status == 400
    assert caught.value.message.startswith("the proxy's /v1/messages cannot serve")


def test_a_field_of_the_wrong_type_is_refused_by_name() -> None:
    with pytest.raises(InvalidType) as caught:
        to_chat_request({**BASE, "messages": [], "max_tokens": "16"})
    assert caught.value.message == "`max_tokens` must be an integer, not string"


def test_count_tokens_needs_no_max_tokens_and_asks_for_the_generation_prompt() -> None:
    counting = CountTranslation.of({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert counting.route == "/tokenize"
    assert orjson.loads(counting.body) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "add_generation_prompt": True,
    }
    assert counting.answer(b'{"count": 12, "tokens": []}') == {"input_tokens": 12}
    for malformed in (b"{}", b'{"count": "12"}', b'{"count": -1}', b"[]"):
        with pytest.raises(ValueError, match="not a /tokenize answer"):
            counting.answer(malformed)
    assert counting.refused(404) is not None and counting.refused(400) is None


def test_an_answer_becomes_a_message_the_sdk_reads() -> None:
    reply = Reply("Let me check.", [ToolCall("f", '{"x": 1}', "call_1"), ToolCall("g", "not json")])
    chat = chat_body(reply, META)
    chat["usage"]["prompt_tokens_details"] = {"cached_tokens": 4}
    message = to_message(chat, {**BASE, "messages": []}, "msg_1")
    Message.model_validate(message)
    text, first, second = message["content"]
    assert text == {"type": "text", "text": "Let me check."}
    assert first == {"type": "tool_use", "id": "call_1", "name": "f", "input": {"x": 1}}
    assert second["input"] == {"raw_arguments": "not json"}
    assert (message["stop_reason"], message["stop_sequence"]) == ("tool_use", None)
    assert message["usage"] == {"input_tokens": 3, "output_tokens": 7, "cache_read_input_tokens": 4}
    assert reported_tokens(message["usage"]) == (7, 4)


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"finish_reason": "length"}, ("max_tokens", None)),
        ({"finish_reason": "stop", "stop_reason": "END"}, ("stop_sequence", "END")),
        ({"finish_reason": "stop", "matched_stop": "END"}, ("stop_sequence", "END")),
        ({"finish_reason": "stop", "matched_stop": 128009}, ("end_turn", None)),
        ({"finish_reason": "stop"}, ("end_turn", None)),
    ],
)
def test_stop_reasons(choice: dict[str, Any], expected: tuple[str, str | None]) -> None:
    chat = {"choices": [{**choice, "message": {"role": "assistant", "content": "x"}}]}
    message = to_message(chat, {**BASE, "stop_sequences": ["END"]}, "msg_1")
    assert (message["stop_reason"], message["stop_sequence"]) == expected


def stream_events(reply: Reply) -> tuple[list[dict[str, Any]], StreamTranslator]:
    translator = StreamTranslator({**BASE, "messages": []}, "msg_1")
    reader = SSEReader(1 << 20)
    events = [
        e
        for chunk in chat_stream(reply, META)
        for p in reader.feed(chunk)
        for e in translator.feed(p)
    ]
    return events + translator.finish(), translator


def test_a_stream_translates_to_anthropic_events_and_the_same_message() -> None:
    reply = Reply(
        "one two three", [ToolCall("f", '{"x": 1}', "call_1"), ToolCall("g", "{}", "call_2")]
    )
    events, translator = stream_events(reply)
    for event in events:
        EVENTS.validate_python(event)
    kinds = [e["type"] for e in events if e["type"] != "content_block_delta"]
    assert kinds == [
        "message_start",
        *["content_block_start", "content_block_stop"] * 3,
        "message_delta",
        "message_stop",
    ]
    starts = [e for e in events if e["type"] == "content_block_start"]
    assert [s["index"] for s in starts] == [0, 1, 2]
    arguments = "".join(
        e["delta"]["partial_json"]
        for e in events
        if e["type"] == "content_block_delta" and e["index"] == 1
    )
    assert arguments == '{"x": 1}'
    whole = to_message(chat_body(reply, META), {**BASE, "messages": []}, "msg_1")
    assert translator.result() == whole
    assert events[-2]["usage"] == whole["usage"]


def test_a_native_stream_assembles_into_its_message() -> None:
    reply = Reply("one two", [ToolCall("f", '{"x": [1, 2]}', "call_1")])
    events, translator = stream_events(reply)
    assembler = MessageAssembler()
    for event in [*events, {"type": "content_block_delta", "delta": "odd"}, {"type": 7}]:
        assembler.follow(event)
    assert assembler.result() == translator.result()
    assert MessageAssembler().result() is None


def test_text_after_a_tool_call_opens_a_block_of_its_own() -> None:
    translator = StreamTranslator({**BASE, "messages": []}, "msg_1")
    call = {"index": 0, "id": "c", "function": {"name": "f", "arguments": "{}"}}
    events = translator.feed(chat_chunk({"tool_calls": [call]}))
    events += translator.feed(chat_chunk({"content": "after"}))
    kinds = [(e["type"], e.get("index")) for e in events]
    assert kinds == [
        ("message_start", None),
        ("content_block_start", 0),
        ("content_block_delta", 0),
        ("content_block_stop", 0),
        ("content_block_start", 1),
        ("content_block_delta", 1),
    ]


def test_arguments_for_a_stopped_call_are_a_malformed_stream() -> None:
    translator = StreamTranslator({**BASE, "messages": []}, "msg_1")
    first = {"index": 0, "id": "a", "function": {"name": "f", "arguments": "{"}}
    second = {"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}
    translator.feed(chat_chunk({"tool_calls": [first]}))
    translator.feed(chat_chunk({"tool_calls": [second]}))
    with pytest.raises(MalformedStream, match="interleaved"):
        translator.feed(chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}))
    (error,) = translator.fail("the stream broke")
    assert error == {"type": "error", "error": {"type": "api_error", "message": "the stream broke"}}


def chat_chunk(delta: dict[str, Any]) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta}],
    }


def test_a_native_stream_is_ended_with_an_error_unless_it_had_ended() -> None:
    failure = MessagesNativeFailure({})
    failure.follow({"type": "message_start", "message": {}})
    assert failure.broken("gone").startswith(b"event: error\ndata: ")
    failure.follow({"type": "message_stop"})
    assert failure.broken("gone") == b""


def test_errors_on_anthropic_routes_are_put_in_its_envelope() -> None:
    def body(route: str, response: web.Response) -> Any:
        answer = in_envelope(route, response)
        assert isinstance(answer, web.Response) and isinstance(answer.body, bytes)
        return orjson.loads(answer.body)

    assert body("/v1/messages", error_response(429, "proxy_overloaded", "slow down")) == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "slow down"},
    }
    assert body("/v1/messages/count_tokens", error_response(502, "x", "gone"))["error"] == {
        "type": "api_error",
        "message": "gone",
    }
    native = web.Response(status=400, body=b'{"type":"error","error":{"type":"x","message":"m"}}')
    assert body("/v1/messages", native)["error"]["type"] == "x"
    assert "type" not in body("/v1/chat/completions", error_response(429, "c", "m"))
    assert MessagesTranslation.of({**BASE, "messages": []}).refused(404) is None


def test_the_client_key_is_taken_as_x_api_key_on_anthropics_routes_only() -> None:
    def headers(**sent: str) -> CIMultiDictProxy[str]:
        return CIMultiDictProxy(CIMultiDict(sent))

    key = b"k3y"
    assert client_authorized("/v1/messages", headers(**{"x-api-key": "k3y"}), key)
    assert client_authorized("/v1/chat/completions", headers(Authorization="Bearer k3y"), key)
    assert not client_authorized("/v1/chat/completions", headers(**{"x-api-key": "k3y"}), key)
    assert not client_authorized("/v1/messages", headers(**{"x-api-key": "k3"}), key)
    assert not client_authorized("/v1/messages", headers(), key)


def test_the_proxy_serves_messages_without_anthropics_sdk() -> None:
    code = "import sys, agent_eval.proxy.server.listener; print('anthropic' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
