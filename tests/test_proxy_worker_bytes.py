"""Workers that send what no worker should, byte for byte: every body read is bounded, every
error body is handled, and a good worker beside a broken one keeps serving."""

from __future__ import annotations

import asyncio
import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.listener import running_proxy
from agent_eval.proxy.server.process import proxy_process
from agent_eval.proxy.upstream.failures import MESSAGE_CHARS, openai_error_body, upstream_message
from agent_eval.testing.broken_worker import (
    CASES,
    BrokenWorker,
    Script,
    chat_answer,
    chat_chunk,
    sse_event,
)
from tests.helpers.processes import listener_pid, rss_mb
from tests.helpers.proxy import FAST_HEALTH, StartProxy, StartWorkers
from tests.helpers.proxy_calls import assert_openai_error, serve_process
from tests.helpers.waits import eventually, until, wait_ready

MODEL = "broken-model"  # the broken worker's; good workers beside it serve it too
CHAT = {"model": MODEL, "messages": [{"role": "user", "content": "hello"}]}
MIB = 1024 * 1024


async def start_broken(stack: AsyncExitStack, script: Script) -> BrokenWorker:
    return await stack.enter_async_context(BrokenWorker(script))


async def post(
    base_url: str, body: dict[str, Any], route: str = "/chat/completions"
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Status, JSON body and headers of one request; a minute at most."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        http.post(base_url + route, json=body) as answer,
    ):
        return answer.status, await answer.json(content_type=None), dict(answer.headers)


async def post_bytes(base_url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """Status and raw body of one chat request."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        http.post(f"{base_url}/chat/completions", json=body) as answer,
    ):
        return answer.status, await answer.read()


async def worker_entry(base_url: str, url: str) -> dict[str, Any]:
    listed = await until(lambda _: True, base_url, "/workers")
    return next(w for w in listed["workers"] if w["url"] == url)


# 1. A worker's whole answer is read up to --max-response-bytes, never further.


async def test_a_declared_gigabyte_answer_is_refused_before_it_is_read(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    broken = await start_broken(stack, CASES["huge_length"]())  # declares 1 GiB, sends "{"
    base_url = await start_proxy([broken], retry={"max_retries": 0}, timeouts={"total": 20})
    status, body, _ = await post(base_url, CHAT)
    assert status == 502, body
    message = assert_openai_error(body, "upstream_response_too_large")
    assert "1073741824 bytes" in message and "--max-response-bytes" in message
    assert broken.url in message


async def test_an_endless_chunked_answer_is_cut_at_the_bound_and_charged(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    # Paced, so that without a bound the proxy would wait for the deadline, not fill memory.
    script = Script.chunked(200, [b'{"choices": ['], forever=b"0," * 32768, delay=0.005)
    broken = await start_broken(stack, script)
    base_url = await start_proxy(
        [broken], retry={"max_retries": 0}, timeouts={"total": 20}, max_response_bytes=MIB
    )
    status, body, _ = await post(base_url, CHAT)
    assert status == 502, body
    assert f"past the bound of {MIB} bytes" in assert_openai_error(
        body, "upstream_response_too_large"
    )
    assert broken.bytes_sent < 8 * MIB
    assert (await worker_entry(base_url, broken.url))["failures"] == 1


@pytest.mark.parametrize("case", ["huge_length", "endless_chunked"])
async def test_a_proxy_process_stays_flat_while_a_good_worker_answers_in_place_of_a_broken_one(
    stack: AsyncExitStack, start_workers: StartWorkers, tmp_path: Path, case: str
) -> None:
    script = CASES[case]()
    if case == "huge_length":  # the worker really sends the gigabyte it declares
        script = Script(script.head, script.pieces, forever=b" " * 65536)
    broken = await start_broken(stack, script)
    (good,) = await start_workers(1, model=MODEL)
    config = ProxyConfig(
        endpoints=[broken.url, good.url],
        port=0,
        policy="round_robin",
        health=FAST_HEALTH,
        timeouts={"total": 10},
    )
    async with proxy_process(config, tmp_path) as base_url:
        await wait_ready(base_url, 2)
        pid = listener_pid(base_url)
        assert pid is not None
        before = rss_mb(pid)
        answers = [await post(base_url, CHAT) for _ in range(6)]
        after = rss_mb(pid)
        broken_state = await worker_entry(base_url, broken.url)
    assert [status for status, _, _ in answers] == [200] * 6
    assert {headers["X-Agent-Eval-Worker"] for _, _, headers in answers} == {good.url}
    assert len(broken.received) >= 3 and broken_state["failures"] >= 3
    assert after - before < 48, f"the proxy grew from {before:.0f} to {after:.0f} MB"


async def test_a_stored_response_fetched_from_its_worker_is_read_up_to_the_bound(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    made = {"id": "resp_1", "object": "response", "status": "completed", "output": []}
    endless = Script.chunked(200, [b"{"], forever=b" " * 65536, delay=0.005)
    broken = BrokenWorker(
        Script.answer(200, json.dumps(made).encode()),
        # It serves /v1/responses itself (405 to a GET), so the proxy keeps only the id.
        gets={"/v1/responses": Script.answer(405, b"{}"), "/v1/responses/resp_1": endless},
    )
    await stack.enter_async_context(broken)
    base_url = await start_proxy([broken], max_response_bytes=MIB)
    assert (await post(base_url, {"model": MODEL, "input": "hi"}, "/responses"))[0] == 200
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        http.get(f"{base_url}/responses/resp_1") as answer,
    ):
        status, error = answer.status, await answer.json()
    assert status == 502, error
    assert f"past the bound of {MIB} bytes" in assert_openai_error(
        error, "upstream_response_too_large"
    )


# 4. Any bytes in a worker's error body.


@given(st.binary(max_size=512))
def test_the_message_of_any_error_body_is_short_text(body: bytes) -> None:
    message = upstream_message(body)
    assert message and len(message) <= MESSAGE_CHARS
    assert isinstance(json.loads(openai_error_body(500, body))["error"]["message"], str)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
)


ERROR_SHAPES = [
    lambda value: value,
    lambda value: {"message": value},
    lambda value: {"error": value},
    lambda value: {"error": {"message": value}},
]


# Deeply nested values take long to draw on a busy machine: a property of the drawing, not of us.
@settings(suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES, st.sampled_from(ERROR_SHAPES))
def test_the_message_of_any_json_error_body_is_short_text(value: object, shape: Any) -> None:
    body = json.dumps(shape(value)).encode()
    message = upstream_message(body)
    assert message and len(message) <= MESSAGE_CHARS
    assert isinstance(json.loads(openai_error_body(500, body))["error"]["message"], str)


@pytest.mark.parametrize("body", [b"\x1c", b"\x85\x1c", b"[" * 1000 + b"]" * 1000, b""])
async def test_odd_error_bytes_are_retried_on_another_worker(
    stack: AsyncExitStack, start_workers: StartWorkers, start_proxy: StartProxy, body: bytes
) -> None:
    broken = await start_broken(stack, Script.answer(500, body))
    (good,) = await start_workers(1, model=MODEL)
    base_url = await start_proxy([broken, good], policy="round_robin")
    answers = [await post(base_url, CHAT) for _ in range(4)]
    assert [status for status, _, _ in answers] == [200] * 4
    assert broken.received, "the broken worker was never tried"


@pytest.mark.parametrize("status", [400, 500])
async def test_odd_error_bytes_from_the_only_worker_are_passed_on(
    stack: AsyncExitStack, start_proxy: StartProxy, status: int
) -> None:
    broken = await start_broken(stack, Script.answer(status, b"\x1c"))
    base_url = await start_proxy([broken])
    answered, body, headers = await post(base_url, CHAT)
    assert answered == status, body
    assert body["error"]["code"] != "proxy_error"
    assert "without text" in body["error"]["message"]
    assert headers["X-Agent-Eval-Worker"] == broken.url


# 6. JSON nested deeper than the proxy can write again: refused where it enters.


def nested(depth: int) -> list[Any]:
    """Lists nested `depth` deep: [[[...]]]."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


# Each puts the nested value where the prefix policy and the Responses translation read.
DEEP_BODIES = {
    "/chat/completions": lambda deep: {**CHAT, "model": "mock-model", "tools": deep},
    "/completions": lambda deep: {"model": "mock-model", "prompt": deep},
    "/responses": lambda deep: {"model": "mock-model", "input": "hello", "tools": deep},
}
ROUTES = [
    ("/chat/completions", True),
    ("/completions", True),
    ("/responses", True),  # the worker serves /v1/responses itself
    ("/responses", False),  # the proxy translates it to Chat Completions
]


@pytest.mark.parametrize("setting", ["record", "prefix"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("route", "native"), ROUTES)
async def test_a_body_nested_past_the_limit_is_refused_before_any_worker_sees_it(
    start_workers: StartWorkers,
    start_proxy: StartProxy,
    tmp_path: Path,
    route: str,
    native: bool,
    stream: bool,
    setting: str,
) -> None:
    (worker,) = await start_workers(1, responses_api=native)
    settings = {"record_dir": tmp_path} if setting == "record" else {"policy": "prefix"}
    base_url = await start_proxy([worker], **settings)
    body = {**DEEP_BODIES[route](nested(300)), "stream": stream}
    status, error, _ = await post(base_url, body, route)
    assert status == 400, error
    assert "more than 128 deep" in assert_openai_error(error, "nesting_too_deep")
    assert worker.stats.generation_requests == 0
    fine = {"model": "mock-model", "input": "hi"} if route == "/responses" else None
    assert (await post(base_url, fine or {**CHAT, "model": "mock-model"}, route))[0] == 200


async def test_a_body_nested_to_the_limit_is_served_and_recorded(
    start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], record_dir=tmp_path, policy="prefix")
    body = {**CHAT, "model": "mock-model", "metadata": {"deep": nested(126)}}  # 128 in all
    status, answer, _ = await post(base_url, body)
    assert status == 200, answer
    (record,) = await _records(tmp_path)
    assert record["request"]["metadata"] == {"deep": nested(126)}


async def test_a_worker_answer_nested_past_the_limit_reaches_the_client_as_sent(
    stack: AsyncExitStack, start_proxy: StartProxy, tmp_path: Path
) -> None:
    # The standard library writes what orjson, the proxy's writer, refuses to.
    sent = chat_answer()[:-1] + b', "extra": ' + json.dumps(nested(300)).encode() + b"}"
    broken = await start_broken(stack, Script.answer(200, sent))
    base_url = await start_proxy([broken], record_dir=tmp_path)
    assert await post_bytes(base_url, CHAT) == (200, sent)
    (record,) = await _records(tmp_path)
    assert record["status"] == 200 and record["response"] is None


async def test_a_streamed_answer_nested_past_the_limit_is_recorded_without_it(
    stack: AsyncExitStack, start_proxy: StartProxy, tmp_path: Path
) -> None:
    chunk = {**chat_chunk({"content": "hi"}), "usage": {"details": nested(300)}}
    deep = b"data: " + json.dumps(chunk).encode() + b"\n\n"
    broken = await start_broken(stack, Script.sse([deep, b"data: [DONE]\n\n"]))
    base_url = await start_proxy([broken], record_dir=tmp_path)
    status, streamed = await post_bytes(base_url, {**CHAT, "stream": True})
    assert status == 200 and streamed.endswith(b"data: [DONE]\n\n")
    (record,) = await _records(tmp_path)
    assert record["status"] == 200 and record["response"] is None


async def test_a_translated_answer_nested_past_the_limit_is_a_malformed_answer(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    deep = orjson.loads(chat_answer())
    deep["choices"][0]["message"]["content"] = nested(300)
    broken = await start_broken(stack, Script.answer(200, json.dumps(deep).encode()))
    base_url = await start_proxy([broken])  # it has no /v1/responses: the proxy translates
    status, error, _ = await post(base_url, {"model": MODEL, "input": "hi"}, "/responses")
    assert status == 502, error
    assert "more than 128 deep" in assert_openai_error(error, "upstream_error")


async def _records(directory: Path) -> list[dict[str, Any]]:
    """The exchanges recorded in `directory`, once the recorder wrote them."""
    lines: list[str] = []

    def written() -> bool:
        lines[:] = [line for f in directory.glob("*.jsonl") for line in f.read_text().splitlines()]
        return bool(lines)

    await eventually(written, 5, lambda: f"nothing recorded in {directory}")
    return [json.loads(line) for line in lines]


# A cap on the choices one request may ask for.


@pytest.mark.parametrize(
    ("field", "value"), [("n", 5), ("best_of", 5), ("n", 5.0), ("n", "5"), ("best_of", 1e9)]
)
async def test_a_request_over_the_choices_cap_is_refused_naming_the_field(
    start_workers: StartWorkers, start_proxy: StartProxy, field: str, value: object
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker], limits={"max_choices": 4})
    status, error, _ = await post(base_url, {**CHAT, "model": "mock-model", field: value})
    assert status == 400, error
    assert "cap of 4" in assert_openai_error(error, "too_many_choices")
    assert error["error"]["param"] == field
    assert worker.stats.generation_requests == 0
    allowed = {**CHAT, "model": "mock-model", "n": 4, "best_of": True}
    assert (await post(base_url, allowed))[0] == 200


async def test_without_a_cap_any_number_of_choices_goes_to_the_worker(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    assert (await post(base_url, {**CHAT, "model": "mock-model", "n": 10_000}))[0] == 200
    assert worker.stats.generation_requests == 1


async def test_serve_takes_the_response_bound_and_the_choices_cap_from_its_flags(
    stack: AsyncExitStack,
) -> None:
    broken = await start_broken(stack, Script.answer(200, chat_answer("x" * 8192)))
    flags = ("--max-response-bytes", "4096", "--max-choices", "2", "--max-retries", "0")
    async with serve_process(broken.url, *flags) as (base_url, _):
        status, error, _ = await post(base_url, {**CHAT, "n": 3})
        assert status == 400 and assert_openai_error(error, "too_many_choices")
        status, error, _ = await post(base_url, {**CHAT, "n": 2})
        assert "over the bound of 4096" in assert_openai_error(error, "upstream_response_too_large")


# Health probes: no redirect followed, no body read past a bound.


def redirect(location: str) -> Script:
    return Script(
        b"HTTP/1.1 302 Found\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n" % location.encode()
    )


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("redirect", "/health redirected (302) to http://"),
        (Script.chunked(200, [], forever=b"x" * 65536), "past the bound of 1048576 bytes"),
        (Script.answer(200, b"{}", content_length=1 << 30), "declared an answer of 1073741824"),
    ],
    ids=["redirect", "endless", "declared"],
)
async def test_a_health_probe_fails_on_a_redirect_or_an_oversized_answer(
    stack: AsyncExitStack, start_workers: StartWorkers, answer: Script | str, reason: str
) -> None:
    (good,) = await start_workers(1, model=MODEL)
    if answer == "redirect":  # to a healthy worker, which must not answer for this one
        answer = redirect(f"{good.url}/health")
    broken = await stack.enter_async_context(
        BrokenWorker(CASES["healthy"](), gets={"/health": answer})
    )
    config = ProxyConfig(endpoints=[broken.url, good.url], port=0, health=FAST_HEALTH)
    base_url = await stack.enter_async_context(running_proxy(config))
    listed = await until(
        lambda body: all(w["last_error"] or w["healthy"] for w in body["workers"]),
        base_url,
        "/workers",
    )
    state = {w["url"]: w for w in listed["workers"]}
    assert state[good.url]["healthy"]
    assert not state[broken.url]["healthy"]
    assert reason in state[broken.url]["last_error"]


# Framing the fuzz of broken workers found misread: interim statuses, bodies the close ends.

INTERIM = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"


async def post_within(base_url: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """Status and raw body of one chat request; a client that waits past 10 s fails."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
        http.post(f"{base_url}/chat/completions", json=body) as answer,
    ):
        return answer.status, await answer.read()


@pytest.mark.parametrize("status", [100, 101, 103])
async def test_an_interim_status_as_the_whole_answer_is_a_malformed_answer(
    stack: AsyncExitStack, start_proxy: StartProxy, status: int
) -> None:
    script = Script.answer(status, chat_answer())
    if status == 101:
        script = Script(b"HTTP/1.1 101 Switching\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
    broken = await start_broken(stack, script)
    base_url = await start_proxy([broken], retry={"max_retries": 0})
    answered, body = await post_within(base_url, CHAT)
    assert answered == 502, body
    message = assert_openai_error(orjson.loads(body), "upstream_disconnected")
    assert "malformed answer" in message and broken.url in message
    assert (await worker_entry(base_url, broken.url))["failures"] == 1


async def test_interim_answers_before_the_final_one_are_skipped(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    final = Script.answer(200, chat_answer("after the interim answers"))
    broken = await start_broken(stack, Script(INTERIM + final.head, final.pieces))
    base_url = await start_proxy([broken])
    answered, body = await post_within(base_url, CHAT)
    assert answered == 200, body
    assert orjson.loads(body)["choices"][0]["message"]["content"] == "after the interim answers"


async def test_a_body_that_the_close_ends_is_a_whole_answer(
    stack: AsyncExitStack, start_proxy: StartProxy
) -> None:
    answer = chat_answer("framed by the close")
    broken = await start_broken(stack, Script.unframed(200, [answer[:9], answer[9:]]))
    base_url = await start_proxy([broken], retry={"max_retries": 0})
    answered, body = await post_within(base_url, CHAT)
    assert (answered, body) == (200, answer)
    assert (await worker_entry(base_url, broken.url))["failures"] == 0


@pytest.mark.parametrize("record", [False, True])
async def test_a_stream_that_the_close_ends_ends_cleanly(
    stack: AsyncExitStack, start_proxy: StartProxy, tmp_path: Path, record: bool
) -> None:
    events = [sse_event(chat_chunk({"content": "hi"})), b"data: [DONE]\n\n"]
    broken = await start_broken(stack, Script.unframed(200, events, "text/event-stream"))
    base_url = await start_proxy([broken], record_dir=tmp_path if record else None)
    answered, body = await post_within(base_url, {**CHAT, "stream": True})
    assert (answered, body) == (200, b"".join(events))
    assert (await worker_entry(base_url, broken.url))["failures"] == 0


# Native Responses answers of the wrong shape: passed on as sent, never stored, never a 500.

NATIVE_ANSWER = {"id": "resp_1", "object": "response", "status": "completed", "output": []}
WRONG_SHAPES = {
    "status a list": json.dumps({**NATIVE_ANSWER, "status": []}),
    # 1,000 arrays deep: more than Python's json writes, as much as orjson reads.
    "id nested deep": json.dumps({**NATIVE_ANSWER, "id": 0}).replace("0", "[" * 1000 + "]" * 1000),
    "id a number": json.dumps({**NATIVE_ANSWER, "id": 5}),
}


@pytest.mark.parametrize("name", list(WRONG_SHAPES))
async def test_a_native_responses_answer_of_the_wrong_shape_reaches_the_client_as_sent(
    stack: AsyncExitStack, start_proxy: StartProxy, name: str
) -> None:
    sent = WRONG_SHAPES[name].encode()
    broken = await stack.enter_async_context(
        BrokenWorker(Script.answer(200, sent), responses_api=True)
    )
    base_url = await start_proxy([broken])
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
        http.post(f"{base_url}/responses", json={"model": MODEL, "input": "hi"}) as answer,
    ):
        status, body = answer.status, await answer.read()
    assert (status, body) == (200, sent)
    async with aiohttp.ClientSession() as http, http.get(f"{base_url}/responses/5") as fetched:
        assert fetched.status == 404  # nothing was stored under the id of the wrong type


# A huge error body: its start is read, the rest dropped, the event loop never held.

PIECE = 64 * 1024


@pytest.mark.parametrize("status", [413, 503])
async def test_only_the_start_of_a_huge_error_body_is_read(
    stack: AsyncExitStack, start_workers: StartWorkers, tmp_path: Path, status: int
) -> None:
    body = b'{"error": {"message": "too much", "padding": "' + b"x" * (60 * MIB) + b'"}}'
    # Paced pieces: the proxy is still reading the body's start while the test asks for /health.
    pieces = tuple(body[start : start + PIECE] for start in range(0, len(body), PIECE))
    script = Script(Script.answer(status, body).head, pieces, delay=0.02)
    broken = await start_broken(stack, script)
    (good,) = await start_workers(1, model="mock-model")
    config = ProxyConfig(
        endpoints=[broken.url, good.url], port=0, health=FAST_HEALTH, retry={"max_retries": 0}
    )
    async with proxy_process(config, tmp_path) as base_url, aiohttp.ClientSession() as http:
        await wait_ready(base_url, 2)
        asked = asyncio.create_task(post(base_url, CHAT))
        answered_mid_body = 0  # /health answers while the worker was sending the error body
        while not asked.done():
            async with http.get(base_url.removesuffix("/v1") + "/health") as answer:
                assert answer.status == 200
            answered_mid_body += broken.bytes_sent > len(script.head) and not asked.done()
        answered, error, _ = await asked
    assert answered == status, error
    assert "too much" in error["error"]["message"]
    assert broken.bytes_sent < 16 * MIB, f"the proxy read {broken.bytes_sent:,} bytes"
    assert answered_mid_body > 0
