"""The attempt store's bounds: open attempts capped, expired ones dropped to make room."""

from __future__ import annotations

import orjson
import pytest
from aiohttp import web

from agent_eval.proxy.capture.attempt import AttemptLimits, CallUsage
from agent_eval.proxy.capture.call import Call
from agent_eval.proxy.capture.settings import CaptureConfig
from agent_eval.proxy.capture.store import AttemptStore


def _message(answer: object) -> str:
    assert isinstance(answer, web.Response) and isinstance(answer.body, bytes)
    return str(orjson.loads(answer.body)["error"]["message"])


async def test_open_attempts_are_capped_and_expired_ones_make_room() -> None:
    store = AttemptStore(CaptureConfig(max_open=2))
    lasting, _ = store.open("lasting", None, AttemptLimits())
    fleeting, _ = store.open("fleeting", 1e-9, AttemptLimits())
    assert "has expired" in _message(store.usable(fleeting))
    store.open("third", None, AttemptLimits())  # the expired attempt is dropped for it
    assert len(store) == 2 and store.find(fleeting) is None
    assert "has expired" in _message(store.usable(fleeting))
    with pytest.raises(OverflowError):
        store.open("fourth", None, AttemptLimits())
    assert store.find(lasting) is not None


async def test_an_ended_attempt_frees_its_bytes_and_refuses_its_key() -> None:
    store = AttemptStore(CaptureConfig())
    key, attempt = store.open("a", None, AttemptLimits(max_calls=5))
    call = store.admit(key)
    assert isinstance(call, Call)
    store.record(call, b'{"index": 0}', 12, CallUsage(1, 2))
    assert store.size == 12 and attempt.tokens == 3
    record = orjson.loads(await store.end(key) or b"")
    assert record["calls"] == [{"index": 0}] and record["state"] == "ended"
    assert store.size == 0 and len(store) == 0
    assert "has ended" in _message(store.usable(key))
    assert "no attempt has it" in _message(store.usable("ae-unknown"))
