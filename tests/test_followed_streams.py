"""What follows a worker's stream, fuzzed: the SSE reader, the assembler, the translator.

Hypothesis cuts streams at random places and puts JSON of any shape where chunks have
fields. The reader must read the same events however the bytes are cut and refuse an
event past its bound wherever that falls; the followers must take any JSON or refuse it
with MalformedStream alone, and still end the stream with events a client can parse. The
draws are derandomized: CI never flakes.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from agent_eval.proxy.responses.events import StreamTranslator
from agent_eval.proxy.responses.native import NativeFailure
from agent_eval.proxy.upstream.assemble import StreamAssembler
from agent_eval.proxy.upstream.sse import MalformedStream, SSEReader, encode_event
from agent_eval.proxy.upstream.streaming import Passthrough

EVENTS = TypeAdapter(ResponseStreamEvent)
FUZZ = settings(max_examples=150, derandomize=True, deadline=None)
LIMIT = 4096

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
TEMPLATES: list[dict[str, Any]] = [
    {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "content": "Hi",
                    "reasoning_content": "hm",
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}
                    ],
                },
                "text": "Hi",
                "finish_reason": None,
            }
        ],
        "usage": {
            "prompt_tokens": 3,
            "completion_tokens": 2,
            "total_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 1},
            "completion_tokens_details": {"reasoning_tokens": 1},
        },
    },
    {
        "type": "response.completed",
        "sequence_number": 3,
        "response": {"id": "resp_1", "status": "completed", "output": []},
    },
    {
        "type": "response.output_item.done",
        "sequence_number": 2,
        "item": {
            "type": "message",
            "id": "m1",
            "role": "assistant",
            "status": "completed",
            "content": [],
        },
    },
]


def paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `value` a field or an item sits, and one new key per object."""
    found = [at]
    if isinstance(value, dict):
        found.append((*at, "extra"))
        for key, item in value.items():
            found += paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*at, index))
    return found


@st.composite
def chunks(draw: st.DrawFn) -> dict[str, Any]:
    """A valid chunk or event with up to three places set to JSON of any shape."""
    chunk = copy.deepcopy(draw(st.sampled_from(TEMPLATES)))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(paths(chunk)[1:]))
        parent = chunk
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict | list):
            parent[path[-1]] = draw(JSON)
    # As a worker's bytes come through orjson: numbers past 64 bits turn into floats.
    loaded = orjson.loads(orjson.dumps(chunk))
    assert isinstance(loaded, dict)
    return loaded


def read_all(reader: SSEReader, stream: bytes, cuts: list[int]) -> list[dict[str, Any]]:
    bounds = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    return [event for a, b in itertools.pairwise(bounds) for event in reader.feed(stream[a:b])]


@FUZZ
@given(
    st.lists(st.dictionaries(st.text(max_size=5), JSON, max_size=3), max_size=5),
    st.sampled_from([b"\n", b"\r\n"]),
    st.lists(st.integers(0, 10_000), max_size=8),
)
def test_the_same_events_are_read_however_the_bytes_are_cut(
    payloads: list[dict[str, Any]], newline: bytes, cuts: list[int]
) -> None:
    stream = b"".join(
        b"event: x" + newline + b"data: " + orjson.dumps(p) + newline + newline for p in payloads
    )
    assert read_all(SSEReader(LIMIT), stream + b"data: [DONE]\n\n", cuts) == payloads


@FUZZ
@given(st.integers(-2, 2), st.lists(st.integers(0, 10_000), max_size=8))
@example(over=0, cuts=[LIMIT + 2])  # an event of the bound, cut between its CRLF and the blank line
@example(over=0, cuts=[LIMIT + 1, LIMIT + 3])  # ... and cut inside each CRLF
def test_an_event_is_refused_once_it_passes_the_bound_wherever_it_is_cut(
    over: int, cuts: list[int]
) -> None:
    shell = b'data: {"pad": ""}'
    event = shell[:-2] + b"x" * (LIMIT + over - len(shell)) + shell[-2:]
    if over > 0:
        with pytest.raises(MalformedStream, match="longer than 4,096 bytes"):
            read_all(SSEReader(LIMIT), event + b"\r\n\r\n", cuts)
    else:
        assert read_all(SSEReader(LIMIT), event + b"\r\n\r\n", cuts) == [orjson.loads(event[6:])]


@FUZZ
@given(st.lists(chunks(), min_size=1, max_size=4))
def test_the_followers_take_any_json_or_refuse_it_as_malformed(
    payloads: list[dict[str, Any]],
) -> None:
    assembler, ending = StreamAssembler(), NativeFailure({"model": "m", "input": "hi"})
    translator = StreamTranslator({"model": "m", "input": "hi"})
    for follow in (assembler.follow, ending.follow, translator.feed):
        try:
            for payload in payloads:
                follow(payload)
        except MalformedStream:
            pass
    orjson.dumps(assembler.result())  # what --record writes
    for event in translator.fail("broken"):
        EVENTS.validate_python(orjson.loads(encode_event(event).partition(b"data: ")[2]))
    # The native ending carries the worker's own items, as the worker sent them.
    for event in SSEReader(LIMIT).feed(ending.broken("broken")):
        assert event["type"] == "response.failed"
        assert event["response"]["error"]["message"] == "broken"


@FUZZ
@given(st.lists(chunks(), min_size=1, max_size=4))
def test_a_translated_stream_that_ends_well_finishes_with_events_a_client_parses(
    payloads: list[dict[str, Any]],
) -> None:
    translator = StreamTranslator({"model": "m", "input": "hi"})
    events = []
    try:
        for payload in payloads:
            events += translator.feed(payload)
    except MalformedStream:
        return
    for event in [*events, *translator.finish()]:
        EVENTS.validate_python(orjson.loads(orjson.dumps(event)))


def test_a_native_ending_says_its_failure_whatever_numbers_and_nesting_the_worker_sent() -> None:
    deep = b"[" * 300 + b"]" * 300  # orjson reads 1,024 levels but writes 255
    ending = NativeFailure({"model": "m", "input": "hi"})
    relay = Passthrough(None, ending, LIMIT)
    relay.feed(b'data: {"type": "response.created", "sequence_number": 18446744073709551615}\n\n')
    relay.feed(b'data: {"type": "x", "response": {"metadata": ' + deep + b"}}\n\n")
    (event,) = SSEReader(LIMIT).feed(ending.broken("broken"))
    assert (event["type"], event["sequence_number"]) == ("response.failed", 0)
    assert event["response"]["error"]["message"] == "broken"
