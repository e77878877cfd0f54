"""The proxy's store of responses, and the relay that ends a broken translated stream."""

from __future__ import annotations

import orjson
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from agent_eval.proxy.responses import ResponseStore, StoredResponse, Translation
from agent_eval.proxy.responses.request import input_items

EVENTS = TypeAdapter(ResponseStreamEvent)
ITEM = {"type": "message", "role": "user", "content": "hi"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def stored(worker: str = "http://w") -> StoredResponse:
    return StoredResponse(worker, (ITEM,))


def test_the_least_recently_used_go_first_past_capacity() -> None:
    store = ResponseStore(capacity=2, ttl=60, clock=Clock())
    store.put("a", stored())
    store.put("b", stored())
    assert store.get("a") is not None  # a is now the most recently used
    store.put("c", stored())
    assert (store.get("a"), store.get("b"), len(store)) == (stored(), None, 2)
    assert store.pop("a") == stored() and store.pop("a") is None and store.get("a") is None


def test_the_least_recently_used_go_first_past_the_byte_bound() -> None:
    store = ResponseStore(capacity=100, ttl=60, max_bytes=1000, clock=Clock())
    for name in "abc":
        store.put(name, StoredResponse("http://w", (ITEM,), size=400))
    assert (store.get("a"), len(store), store.bytes) == (None, 2, 800)
    store.put("huge", StoredResponse("http://w", (ITEM,), size=5000))
    assert (store.get("huge"), len(store), store.bytes) == (None, 0, 0)
    store.put("b", StoredResponse("http://w", (ITEM,), size=100))
    store.put("b", StoredResponse("http://w", (ITEM,), size=300))
    assert (len(store), store.bytes) == (1, 300)
    assert store.pop("b") is not None and store.bytes == 0


def test_a_response_expires_ttl_after_its_last_use() -> None:
    clock = Clock()
    store = ResponseStore(capacity=10, ttl=60, clock=clock)
    store.put("a", stored())
    store.put("b", stored())
    clock.now = 50
    assert store.get("a") is not None
    clock.now = 100
    assert store.get("b") is None and store.get("a") is not None
    clock.now = 170
    assert store.get("a") is None and len(store) == 0


def test_a_conversation_continues_from_input_then_output() -> None:
    translation = Translation.of({"model": "m", "input": "hi"})
    answer = {"output": [{"type": "message", "role": "assistant", "content": "hello"}]}
    assert translation.conversation(answer) == (ITEM, *answer["output"])
    assert input_items([ITEM]) == [ITEM] and input_items(None) == []


def relay_events(data: bytes) -> list[dict]:
    return [
        orjson.loads(line.removeprefix(b"data: "))
        for line in data.split(b"\n")
        if line.startswith(b"data: ")
    ]


def chat_chunk(content: str) -> bytes:
    chunk = {"object": "chat.completion.chunk", "model": "m", "choices": [
        {"index": 0, "delta": {"content": content}, "finish_reason": None}
    ]}  # fmt: skip
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def test_an_error_event_from_the_worker_fails_the_response_keeping_its_text() -> None:
    relay = Translation.of({"model": "m", "input": "hi"}).relay()
    out = relay.feed(chat_chunk("Hel")) + relay.feed(chat_chunk("lo"))
    out += relay.feed(b'data: {"error": {"message": "out of memory", "code": 500}}\n\n')
    out += relay.feed(chat_chunk("ignored")) + relay.end() + relay.broken("late")
    events = [EVENTS.validate_python(event) for event in relay_events(out)]
    assert [e.type for e in events][-1] == "response.failed"
    assert sum(e.type == "response.failed" for e in events) == 1
    failed = events[-1].response
    assert failed.error is not None and "out of memory" in failed.error.message
    assert failed.output[0].content[0].text == "Hello"
    assert relay.answer() is not None and relay.answer()["status"] == "failed"


def test_a_clean_end_completes_once() -> None:
    relay = Translation.of({"model": "m", "input": "hi"}).relay()
    out = relay.feed(chat_chunk("Hi")) + relay.feed(b"data: [DONE]\n\n") + relay.end()
    assert relay.end() == b"" and relay.broken("after") == b""
    kinds = [event["type"] for event in relay_events(out)]
    assert kinds[-1] == "response.completed" and kinds.count("response.completed") == 1
    assert relay.answer()["output"][0]["content"][0]["text"] == "Hi"
