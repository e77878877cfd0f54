"""The proxy's store of responses (one process's, and the file a group of processes shares),
and the relay that ends a broken translated stream."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.responses.request import input_items
from agent_eval.proxy.responses.shared_store import SharedResponseStore, prepare_store
from agent_eval.proxy.responses.store import (
    ENTRY_BYTES,
    ResponseStore,
    StoreBounds,
    StoredResponse,
    Turn,
)
from agent_eval.proxy.responses.translation import Translation

EVENTS = TypeAdapter(ResponseStreamEvent)
ITEM = {"type": "message", "role": "user", "content": "hi"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


Store = ResponseStore | SharedResponseStore
MakeStore = Callable[..., Store]


@pytest.fixture(params=["memory", "shared"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> MakeStore:
    """Stores of one kind: this process's memory, or a group's file (each store a process)."""

    def make(**bounds: Any) -> Store:
        if request.param == "memory":
            return ResponseStore(StoreBounds(**bounds))
        path = tmp_path / "responses.sqlite3"
        if not path.exists():
            prepare_store(path)
        store = SharedResponseStore(path, StoreBounds(**bounds))
        request.addfinalizer(store.close)
        return store

    return make


def stored(worker: str = "http://w") -> StoredResponse:
    return StoredResponse(worker, Turn.after(None, [ITEM]))


def holding(size: int) -> StoredResponse:
    """A stored response that holds `size` bytes of JSON, besides its entry."""
    return StoredResponse("http://w", None, memoryview(b"x" * size))


def test_the_least_recently_used_go_first_past_capacity(make_store: MakeStore) -> None:
    store = make_store(capacity=2, ttl=60, clock=Clock())
    store.put("a", stored())
    store.put("b", stored())
    assert store.get("a") is not None  # a is now the most recently used
    store.put("c", stored())
    assert store.get("b") is None and len(store) == 2
    assert store.pop("a") is not None and store.pop("a") is None and store.get("a") is None


def test_the_least_recently_used_go_first_past_the_byte_bound(make_store: MakeStore) -> None:
    store = make_store(capacity=100, ttl=60, max_bytes=3 * ENTRY_BYTES + 10_000, clock=Clock())
    for name in "abc":
        store.put(name, holding(4000))
    assert (store.get("a"), len(store), store.bytes) == (None, 2, 2 * (ENTRY_BYTES + 4000))
    store.put("huge", holding(50_000))
    assert (store.get("huge"), len(store), store.bytes) == (None, 0, 0)
    store.put("b", holding(2000))
    store.put("b", holding(3000))
    assert (len(store), store.bytes) == (1, ENTRY_BYTES + 3000)
    assert store.pop("b") is not None and store.bytes == 0


def test_turns_shared_by_a_chain_are_counted_once_while_any_response_holds_them(
    make_store: MakeStore,
) -> None:
    first = Turn.after(None, [ITEM, ITEM])
    second = Turn.after(first, [ITEM])
    fork = Turn.after(first, [{"type": "message", "role": "user", "content": "bye"}])
    store = make_store(capacity=100, ttl=60, clock=Clock())
    for name, turn in (("first", first), ("second", second), ("fork", fork)):
        store.put(name, StoredResponse("http://w", turn))
    turns = len(first.items) + len(second.items) + len(fork.items)
    assert store.bytes == 3 * ENTRY_BYTES + turns
    store.pop("first")  # both later turns still hold it
    assert store.bytes == 2 * ENTRY_BYTES + turns
    store.pop("second")
    assert store.bytes == ENTRY_BYTES + len(first.items) + len(fork.items)
    store.pop("fork")
    assert store.bytes == 0
    if isinstance(store, ResponseStore):
        assert first.holders == second.holders == fork.holders == 0


def test_what_one_process_stores_another_finds_continues_and_frees(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite3"
    prepare_store(path)
    one, other = (SharedResponseStore(path, StoreBounds(capacity=10, ttl=60)) for _ in range(2))
    reply = {"type": "message", "role": "assistant", "content": "hello"}
    one.put("first", StoredResponse("http://w", Turn.after(None, [ITEM, reply]), None))
    found = other.get("first")
    assert found is not None and found.conversation is not None
    other.put("second", StoredResponse("http://v", Turn.after(found.conversation, [ITEM])))
    continued = one.get("second")
    assert continued is not None and continued.worker == "http://v"
    assert continued.conversation is not None
    assert continued.conversation.conversation() == [ITEM, reply, ITEM]
    assert continued.conversation.count == 3
    assert one.bytes == other.bytes and len(one) == len(other) == 2
    assert one.pop("first") is not None and other.get("first") is None
    assert other.pop("second") is not None and (one.bytes, len(one)) == (0, 0)
    one.close()
    other.close()


def test_a_conversation_is_its_turns_items_in_order() -> None:
    reply = {"type": "message", "role": "assistant", "content": "hello"}
    first = Turn.after(None, [ITEM, reply])
    empty = Turn.after(first, [])
    last = Turn.after(empty, [ITEM])
    assert (first.count, empty.count, last.count) == (2, 2, 3)
    assert last.conversation() == [ITEM, reply, ITEM] and empty.conversation() == [ITEM, reply]
    assert Turn.after(None, []).conversation() == []


def test_a_response_expires_ttl_after_its_last_use(make_store: MakeStore) -> None:
    clock = Clock()
    store = make_store(capacity=10, ttl=60, clock=clock)
    store.put("a", stored())
    store.put("b", stored())
    clock.now = 50
    assert store.get("a") is not None
    clock.now = 100
    assert store.get("b") is None and store.get("a") is not None
    clock.now = 170
    assert store.get("a") is None and len(store) == 0


def test_input_is_an_item_list() -> None:
    assert input_items("hi") == [ITEM]
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
    relay = Translation.of({"model": "m", "input": "hi"}).relay(ProxyConfig().max_event_bytes)
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
    relay = Translation.of({"model": "m", "input": "hi"}).relay(ProxyConfig().max_event_bytes)
    out = relay.feed(chat_chunk("Hi")) + relay.feed(b"data: [DONE]\n\n") + relay.end()
    assert relay.end() == b"" and relay.broken("after") == b""
    kinds = [event["type"] for event in relay_events(out)]
    assert kinds[-1] == "response.completed" and kinds.count("response.completed") == 1
    assert relay.answer()["output"][0]["content"][0]["text"] == "Hi"
