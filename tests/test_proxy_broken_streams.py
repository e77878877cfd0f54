"""Streams of broken workers that the proxy follows: an event without an end, malformed chunks.

The proxy reads a stream when it records it (--record) or serves /v1/responses. Each case
puts the real proxy in front of a BrokenWorker (a server that sends bytes as scripted) and
checks what a client sees: the route's error event and a clean close, never a reset
connection, with the worker charged. The endless event runs against `agent-eval serve` in a
process of its own, so its CPU and its answers to others are the proxy's alone.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest

from agent_eval.testing.broken_worker import BrokenWorker, Script, chat_chunk, sse_event
from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import CLI
from tests.helpers.proxy import MakeClient, StartProxy
from tests.helpers.waits import until, wait_ready

BROKEN, GOOD = "broken-model", "mock-model"
CHAT, RESPONSES = "/v1/chat/completions", "/v1/responses"
BODIES: dict[str, dict[str, Any]] = {
    CHAT: {"model": BROKEN, "messages": [{"role": "user", "content": "hi"}], "stream": True},
    RESPONSES: {"model": BROKEN, "input": "hi", "stream": True},
}
# `data: {` and then 32 KiB of `x` every 5 ms, without ever a blank line to end the event.
ENDLESS_EVENT = Script.sse([b"data: {"], forever=b"x" * 32768, delay=0.005)
EVENT_LIMIT = 8 * 1024**2
TAIL = 64 * 1024


async def workers_by_url(base_url: str) -> dict[str, dict[str, Any]]:
    body = await until(lambda _: True, base_url, "/workers")
    return {worker["url"]: worker for worker in body["workers"]}


def last_event(body: bytes) -> dict[str, Any]:
    """The JSON of the last `data:` line of a stream."""
    data = body[body.rindex(b"data: ") + 6 :].strip()
    event = orjson.loads(data)
    assert isinstance(event, dict), data
    return event


def error_message(route: str, event: dict[str, Any]) -> str:
    """The message of the route's error event: an error `data:` line, or `response.failed`."""
    if route == RESPONSES:
        assert event["type"] == "response.failed", event
        return str(event["response"]["error"]["message"])
    assert event["error"]["code"] == "stream_interrupted", event
    return str(event["error"]["message"])


async def post_stream(base_url: str, route: str) -> bytes:
    """The whole stream a client gets on `route`; a reset connection raises ClientPayloadError."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(base_url + route.removeprefix("/v1"), json=BODIES[route]) as response,
    ):
        assert response.status == 200
        return await response.read()


def cpu_seconds(pid: int) -> float:
    """User and system CPU time `pid` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@asynccontextmanager
async def serving(*args: str) -> AsyncIterator[tuple[str, int]]:
    """`agent-eval serve ARGS` on a free port: its base URL and process id."""
    serve = await asyncio.create_subprocess_exec(
        *CLI, "serve", "--port", "0", *args, stdout=asyncio.subprocess.PIPE
    )
    assert serve.stdout is not None
    try:
        found = re.search(r"http://\S+/v1", (await serve.stdout.readline()).decode())
        assert found, "serve printed no URL"
        yield found[0], serve.pid
    finally:
        serve.terminate()
        await serve.wait()


async def read_tail(
    http: aiohttp.ClientSession, base_url: str, route: str, started: asyncio.Event
) -> bytes:
    """The last bytes of a stream read to its end; `started` is set at its first bytes."""
    tail = b""
    url = base_url + route.removeprefix("/v1")
    async with http.post(url, json=BODIES[route]) as response:
        assert response.status == 200
        async for data in response.content.iter_any():
            started.set()
            tail = (tail + data)[-TAIL:]
    return tail


async def served_while(
    stream: asyncio.Task[bytes], http: aiohttp.ClientSession, base_url: str
) -> int:
    """Rounds of a `/health` and a chat request to the good worker, both answered, that ended
    while `stream` still went on."""
    root = base_url.removesuffix("/v1")
    chat = {"model": GOOD, "messages": [{"role": "user", "content": "hi"}]}
    rounds = 0
    while not stream.done():
        async with http.get(f"{root}/health") as response:
            assert response.status == 200
        async with http.post(f"{base_url}/chat/completions", json=chat) as response:
            assert response.status == 200
        rounds += not stream.done()
        await asyncio.sleep(0.05)
    return rounds


@pytest.mark.parametrize("route", [CHAT, RESPONSES], ids=["chat-recorded", "responses-native"])
async def test_an_event_without_end_is_cut_at_the_bound_and_the_proxy_serves_on(
    route: str, tmp_path: Path
) -> None:
    record = ["--record", str(tmp_path)] if route == CHAT else []
    async with (
        BrokenWorker(ENDLESS_EVENT, responses_api=True) as broken,
        MockWorker() as good,
        serving(
            "--endpoint", broken.url, "--endpoint", good.url, *record,
            "--max-event-bytes", str(EVENT_LIMIT), "--health-interval", "0.2",
        ) as (base_url, pid),
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
    ):  # fmt: skip
        await wait_ready(base_url, 2)
        started = asyncio.Event()
        stream = asyncio.create_task(read_tail(http, base_url, route, started))
        await asyncio.wait_for(started.wait(), 10)
        cpu, begun = cpu_seconds(pid), time.monotonic()
        rounds = await served_while(stream, http, base_url)
        busy = (cpu_seconds(pid) - cpu) / (time.monotonic() - begun)
        tail = await stream
        workers = await workers_by_url(base_url)
    assert "--max-event-bytes" in error_message(route, last_event(tail))
    assert broken.bytes_sent > EVENT_LIMIT
    print(f"{route}: {rounds} rounds served meanwhile, proxy CPU {busy:.0%} of a core")
    # The proxy served others while it followed the event; before, the parser's quadratic
    # work took a whole core (a generous bound on its share of one).
    assert rounds > 0
    assert busy < 0.5
    assert workers[good.url]["healthy"] and workers[good.url]["failures"] == 0
    assert workers[broken.url]["failures"] == 1


MALFORMED: dict[str, dict[str, Any]] = {
    "string delta": chat_chunk("not an object"),
    "tool call index a list": chat_chunk(
        {"tool_calls": [{"index": [0], "id": "c1", "function": {"name": "f", "arguments": ""}}]}
    ),
    "choices not a list": {**chat_chunk({}), "choices": "none"},
    "content a number": chat_chunk({"content": 5}),
}
FIELDS = {
    "string delta": "choices.0.delta",
    "tool call index a list": "choices.0.delta.tool_calls.0.index",
    "choices not a list": "choices",
    "content a number": "choices.0.delta.content",
}


def malformed_stream(name: str) -> Script:
    """A good chunk, the malformed one, and the stream's proper end."""
    good = sse_event(chat_chunk({"role": "assistant", "content": "Hel"}))
    return Script.sse([good, sse_event(MALFORMED[name]), b"data: [DONE]\n\n"])


@pytest.mark.parametrize("name", list(MALFORMED))
async def test_a_malformed_chunk_of_a_recorded_chat_stream_ends_it_with_an_error_line(
    start_proxy: StartProxy, tmp_path: Path, name: str
) -> None:
    async with BrokenWorker(malformed_stream(name)) as broken:
        base_url = await start_proxy([broken.url], record_dir=tmp_path)
        body = await post_stream(base_url, CHAT)
        workers = await workers_by_url(base_url)
    # Whole events only, the malformed one not among them: the chunk that held it is not sent.
    events = [orjson.loads(event.removeprefix(b"data: ")) for event in body.split(b"\n\n")[:-1]]
    assert events and all(event != MALFORMED[name] for event in events)
    message = error_message(CHAT, events[-1])
    assert f"malformed chunk ({FIELDS[name]}:" in message
    assert workers[broken.url]["failures"] == 1


@pytest.mark.parametrize("name", list(MALFORMED))
async def test_a_malformed_chunk_of_a_translated_responses_stream_ends_it_with_response_failed(
    start_proxy: StartProxy, make_client: MakeClient, name: str
) -> None:
    async with BrokenWorker(malformed_stream(name)) as broken:
        base_url = await start_proxy([broken.url])
        assert (await workers_by_url(base_url))[broken.url]["responses_api"] == "translated"
        stream = await make_client(base_url).responses.create(model=BROKEN, input="hi", stream=True)
        events = [event async for event in stream]  # a reset connection raises APIError
        workers = await workers_by_url(base_url)
    assert [event.type for event in events[:2]] == ["response.created", "response.in_progress"]
    failed = events[-1]
    assert failed.type == "response.failed" and failed.response.error is not None
    assert f"malformed chunk ({FIELDS[name]}:" in failed.response.error.message
    assert failed.response.output_text == "Hel"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert workers[broken.url]["failures"] == 1


async def test_a_malformed_end_of_a_native_responses_stream_ends_it_with_response_failed(
    start_proxy: StartProxy,
) -> None:
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}}
    completed = {"type": "response.completed", "sequence_number": 1, "response": "done"}
    script = Script.sse([sse_event(created), sse_event(completed)])
    async with BrokenWorker(script, responses_api=True) as broken:
        base_url = await start_proxy([broken.url])
        body = await post_stream(base_url, RESPONSES)
        workers = await workers_by_url(base_url)
    events = [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]
    *seen, failed = events
    assert "malformed response.completed" in error_message(RESPONSES, failed)
    # It continues what the client saw: the created event, unless it came in the chunk refused.
    assert seen in ([], [created]) and failed["sequence_number"] == len(seen)
    assert failed["response"]["id"] == "resp_1" or not seen
    assert workers[broken.url]["failures"] == 1


def client_events(body: bytes) -> list[bytes]:
    """The events an SSE client reads off `body`: what blank lines separate."""
    events = body.replace(b"\r\n", b"\n").split(b"\n\n")
    return [event for event in events if event.strip()]


def event_json(event: bytes) -> dict[str, Any]:
    """The JSON an event's `data:` lines carry, as an SSE client joins them."""
    lines = event.split(b"\n")
    data = b"\n".join(line[5:].lstrip() for line in lines if line.startswith(b"data:"))
    payload = orjson.loads(data)
    assert isinstance(payload, dict), data
    return payload


@pytest.mark.parametrize(
    ("route", "cut"),
    [(CHAT, b'data: {"choi'), (CHAT, b'data: {"choices": []}\n'), (RESPONSES, b'data: {"ty')],
    ids=["chat-mid-line", "chat-mid-event", "responses-native"],
)
async def test_the_error_event_after_a_cut_event_is_an_event_of_its_own(
    start_proxy: StartProxy, route: str, cut: bytes
) -> None:
    script = Script.sse([cut], end=False)  # the worker closes in the middle of an event
    async with BrokenWorker(script, responses_api=True) as broken:
        base_url = await start_proxy([broken.url])
        body = await post_stream(base_url, route)
    assert body.startswith(cut)
    message = error_message(route, event_json(client_events(body)[-1]))
    assert "dropped the connection" in message


async def test_the_total_timeout_ends_a_stream_that_keeps_sending(
    start_proxy: StartProxy,
) -> None:
    text = sse_event(chat_chunk({"content": "x"}))
    script = Script.sse([], forever=text, delay=0.01)  # well-formed, paced, without end
    async with BrokenWorker(script) as broken:
        base_url = await start_proxy([broken.url], timeouts={"total": 1.5})
        body = await post_stream(base_url, CHAT)
        workers = await workers_by_url(base_url)
    events = client_events(body)
    assert "did not answer in time" in error_message(CHAT, event_json(events[-1]))
    # One event per 10 ms at most: ended at the 1.5 s deadline, well under 1,500 events came.
    assert len(events) < 1500, f"the stream lasted {len(events)} events"
    assert workers[broken.url]["failures"] == 1


@pytest.mark.parametrize("route", [CHAT, RESPONSES], ids=["chat-recorded", "responses-translated"])
async def test_a_followed_stream_is_cut_at_the_response_bound(
    start_proxy: StartProxy, tmp_path: Path, route: str
) -> None:
    text = sse_event(chat_chunk({"content": "x" * 1000})) * 16
    script = Script.sse([], forever=text)  # well-formed events without end, as fast as read
    async with BrokenWorker(script) as broken:
        base_url = await start_proxy(
            [broken.url], record_dir=tmp_path, max_response_bytes=1024**2, timeouts={"total": 10}
        )
        body = await post_stream(base_url, route)
        workers = await workers_by_url(base_url)
    message = error_message(route, event_json(client_events(body)[-1]))
    assert "--max-response-bytes" in message
    assert broken.bytes_sent < 16 * 1024**2
    assert workers[broken.url]["failures"] == 1
