"""Broken workers, fuzzed: nothing a worker sends makes the proxy fail itself, hang or grow.

Hypothesis draws a worker's answer byte by byte for the broken worker: any status, a
Content-Length that lies or no framing at all, chunks cut anywhere, bodies and events
truncated, oversized or without end, random bytes, and answers of the route's shape with
fields of the wrong type or nested too deep. Two proxies run as processes of their own, each
over one broken worker and one healthy mock worker: behind the first the broken worker serves
/v1/responses itself; the second translates /v1/responses to Chat Completions for it and
records every exchange (--record). Whatever the answer, the client reads the proxy's answer
to its end without a reset; a 5xx is the worker's status passed on or the proxy's verdict on
the worker, never one of its own; a stream the worker broke ends with the route's error
event; meanwhile /health stays fast and the mock worker keeps serving; the proxies log no
traceback, and their memory stays bounded over the whole run. The draws are derandomized,
and the answers the issue names come first, as explicit examples.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.server.process import proxy_process
from agent_eval.testing.broken_worker import (
    CASES,
    MODEL,
    BrokenWorker,
    Script,
    chat_answer,
    chat_chunk,
    sse_event,
)
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import (
    Reply,
    ReplyMeta,
    ToolCall,
    chat_body,
    chat_stream,
    completion_body,
    completion_stream,
    response_body,
    response_stream,
)
from tests.helpers.json_values import DELETE, JSON, mutated, paths
from tests.helpers.processes import listener_pid, rss_mb
from tests.helpers.proxy import FAST_HEALTH
from tests.helpers.waits import until, wait_ready

CHAT, COMPLETIONS, RESPONSES = ROUTES = ("/v1/chat/completions", "/v1/completions", "/v1/responses")
GOOD_REQUEST = {"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}
# The codes of the 5xx answers the proxy gives when workers failed a request (forward.py);
# any other 5xx of its own, `proxy_error` first, is a bug.
UPSTREAM_CODES = frozenset(
    {
        "worker_unreachable",
        "upstream_disconnected",
        "worker_busy",
        "upstream_timeout",
        "upstream_error",
        "upstream_response_too_large",
        "request_failed_on_every_worker",
        "no_healthy_worker",
    }
)
UPSTREAM_STATUSES = frozenset({502, 503, 504})
# The codes under which a worker's own 5xx is passed on, once retrying did not help.
PASSED_ON_CODES = frozenset({"upstream_error", "request_failed_on_every_worker"})
FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})

TIMEOUT = 2.0  # the proxies' --timeout: it ends every answer, endless or not
PROMPT = 1.0  # seconds /health and the mock worker may take during a case (the issue: 0.1)
MEMORY_BOUND_MB = 200  # growth of a proxy's resident memory over the whole run
KEEP = 1024 * 1024  # bytes of each answer the client keeps: its end
BLOCK = b"x" * 65536
OVERSIZED = (320, 2048)  # blocks in an oversized text: 20 MiB (one event), 128 MiB
HUGE_LENGTH = 1024**3

REPLY = Reply("Hello there", [ToolCall("add", '{"a": 1}', "call_1")])
META = ReplyMeta("broken-1", MODEL, 0, "broken", prompt_tokens=3, pieces=2, include_usage=True)
# What a working worker answers on each route it is sent: the shapes the draws break.
VALID_BODIES = {
    CHAT: chat_body(REPLY, META),
    COMPLETIONS: completion_body(REPLY, META),
    RESPONSES: response_body(REPLY, META),
}
VALID_STREAMS = {
    CHAT: list(chat_stream(REPLY, META)),
    COMPLETIONS: list(completion_stream(REPLY, META)),
    RESPONSES: list(response_stream(REPLY, META)),
}
TEXT = b'"Hello '  # where the answer's text starts, in every valid body and stream
DEEP = "\x00deep\x00"  # a value replaced by arrays nested past orjson's depth limits
STATUSES = st.sampled_from([200] * 10 + [100, 101, 201, 204, 301, 400, 404, 413, 429])
ERROR_STATUSES = st.sampled_from([500, 502, 503, 504, 599, 999])
CONTENT_TYPES = ["application/json", "text/event-stream", "text/plain", ""]
SEPARATORS = st.sampled_from([b"\n\n"] * 6 + [b"\r\n\r\n", b"\n", b""])
CUTS = st.lists(st.integers(min_value=0, max_value=2**20), max_size=6)
FRAMINGS = ["length"] * 3 + ["chunked"] * 3 + ["lying length", "cut chunks", "unframed"]
FRAMINGS += ["endless", "huge length", "oversized"]

# Without shrinking: a case is a whole HTTP answer, some endless, and shrinking one takes
# minutes; a failing case is shown as drawn, in short (Answer.__repr__).
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass(frozen=True, repr=False)
class Answer:
    """One answer of the broken worker, and what the proxy must make of it."""

    script: Script
    status: int | None
    """The status line's; None when the head is no HTTP."""
    whole: bytes | None = None
    """The body as its framing delimits it, when the worker sends all of it."""
    broken: bool = False
    """Whether the framing promises more than the worker sends: it stops or never ends."""

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How Hypothesis shows a failing case: in short, as __repr__ does."""
        printer.text(repr(self))

    def __repr__(self) -> str:
        script = self.script
        size = sum(map(len, script.pieces))
        start = b"".join(script.pieces[:3])[:600]
        return (
            f"Answer(head={script.head!r}, body={start!r}... ({size:,} bytes in "
            f"{len(script.pieces)} writes), forever={script.forever[:100]!r}, "
            f"delay={script.delay}, whole={self.whole is not None}, broken={self.broken})"
        )


@dataclass(frozen=True)
class Case:
    """A request on `route` to the proxy whose broken worker is `native` or translated."""

    route: str
    native: bool
    stream: bool
    answer: Answer

    @property
    def translated(self) -> bool:
        return self.route == RESPONSES and not self.native


@dataclass
class Outcome:
    """What the client saw of one case, and what happened around it."""

    status: int
    content_type: str
    size: int
    tail: bytes
    """The last KEEP bytes of the answer: all of it when shorter."""
    failure: str | None
    """How reading the answer failed, if it did."""
    health_s: list[float]
    good_s: list[float]
    good: list[int]
    """The statuses of the mock worker's answers meanwhile."""
    log: str
    """What the proxy logged meanwhile."""


# ---------------------------------------------------------------- broken answers


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` in pieces, cut at these offsets (modulo its length)."""
    bounds = sorted({0, len(data), *(cut % (len(data) + 1) for cut in cuts)})
    return [data[start:end] for start, end in itertools.pairwise(bounds)]


def _event(raw: bytes) -> tuple[bytes, Any]:
    """An encoded event's `event:` line (or nothing) and its data: JSON, or `[DONE]`."""
    prefix, _, data = raw.rstrip(b"\n").rpartition(b"data: ")
    return prefix, data if data == b"[DONE]" else orjson.loads(data)


def _deepened(value: dict[str, Any], path: tuple[Any, ...], depth: int) -> bytes:
    """`value` as JSON with the value at `path` nested `depth` arrays deep."""
    marked = orjson.dumps(mutated(value, [(path, DEEP)]))
    return marked.replace(orjson.dumps(DEEP), b"[" * depth + b"]" * depth)


def _broken_json(valid: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """`valid` as it is, cut short, with fields changed or nested too deep; any JSON; any bytes."""
    fields = st.sampled_from(paths(valid))
    changes = st.lists(st.tuples(fields, JSON | st.just(DELETE)), min_size=1, max_size=3)
    depths = st.sampled_from([200, 300, 1000, 1100])
    whole = orjson.dumps(valid)
    return st.one_of(
        st.just(whole),
        st.integers(0, len(whole)).map(lambda end: whole[:end]),
        st.builds(mutated, st.just(valid), changes).map(orjson.dumps),
        st.builds(_deepened, st.just(valid), fields, depths),
        JSON.map(orjson.dumps),
        st.binary(max_size=200),
    )


@st.composite
def _events(draw: st.DrawFn, route: str) -> bytes:
    """The route's stream with some events changed or left out, any separators, maybe cut."""
    encoded = []
    for prefix, data in map(_event, VALID_STREAMS[route]):
        if isinstance(data, dict) and draw(st.integers(0, 4)) == 0:
            payload = draw(_broken_json(data) | st.just(b""))
        else:
            payload = data if isinstance(data, bytes) else orjson.dumps(data)
        if payload:
            encoded.append(prefix + b"data: " + payload + draw(SEPARATORS))
    stream = b"".join(encoded)
    end = draw(st.none() | st.integers(0, len(stream)))
    return stream if end is None else stream[:end]


def _endless(route: str) -> list[bytes]:
    """What a stream may repeat without end: bytes with no event boundary, or text events."""
    text = next(event for event in VALID_STREAMS[route] if TEXT in event)
    return [BLOCK, text * 64]


def _oversized(valid: bytes, blocks: int) -> list[bytes]:
    """`valid` with `blocks` blocks more of text where its text starts, as one write each."""
    before, _, after = valid.partition(TEXT)
    return [before + b'"', *[BLOCK] * blocks, TEXT[1:] + after]


@st.composite
def _answers(draw: st.DrawFn, route: str, stream: bool) -> Answer:
    """A worker's answer to a request on `route`, head, body and framing all drawn."""
    status = draw(STATUSES | ERROR_STATUSES)
    usual = "text/event-stream" if stream else "application/json"
    content_type = draw(st.sampled_from([usual] * 4 + CONTENT_TYPES))
    events = stream and content_type == "text/event-stream"
    body = draw(_events(route) if events else _broken_json(VALID_BODIES[route]))
    framing = draw(st.sampled_from(FRAMINGS))
    if framing == "oversized":
        valid = b"".join(VALID_STREAMS[route]) if events else orjson.dumps(VALID_BODIES[route])
        pieces = _oversized(valid, draw(st.sampled_from(OVERSIZED)))
        answer = _sized(status, content_type, pieces, draw(st.booleans()))
    else:
        answer = draw(_framed(framing, status, content_type, body, route))
    if draw(st.integers(0, 19)) == 0:  # a head that is no HTTP
        head = draw(st.binary(max_size=40)) + b"\r\n\r\n"
        return Answer(replace(answer.script, head=head), None)
    return answer


def _sized(status: int, content_type: str, pieces: list[bytes], chunked: bool) -> Answer:
    """`pieces` whole, in chunks or under an honest Content-Length."""
    if chunked:
        return Answer(Script.chunked(status, pieces, content_type), status)
    length = sum(map(len, pieces))
    head = Script.answer(status, b"", content_type, content_length=length).head
    return Answer(Script(head, tuple(pieces)), status)


@st.composite
def _framed(
    draw: st.DrawFn, framing: str, status: int, content_type: str, body: bytes, route: str
) -> Answer:
    """`body` framed as `framing` says: honestly or not, cut anywhere, or without end."""
    pieces = _cut(body, draw(CUTS))
    delay = draw(st.sampled_from([0.0, 0.0, 0.001]))
    if framing == "length":
        script = Script.answer(status, body, content_type)
        return Answer(replace(script, pieces=tuple(pieces), delay=delay), status, whole=body)
    if framing == "lying length":
        length = draw(st.integers(0, 2 * len(body) + 16).filter(lambda n: n != len(body)))
        script = Script.answer(status, body, content_type, content_length=length)
        whole = body[:length] if length < len(body) else None
        return Answer(replace(script, pieces=tuple(pieces)), status, whole, whole is None)
    if framing in ("chunked", "cut chunks"):
        end = framing == "chunked"
        script = Script.chunked(status, pieces, content_type, end=end, delay=delay)
        # The chunks' own framing cut anywhere too: a size line split between two writes.
        script = replace(script, pieces=tuple(_cut(b"".join(script.pieces), draw(CUTS))))
        return Answer(script, status, body if end else None, broken=not end)
    if framing == "unframed":
        return Answer(Script.unframed(status, pieces, content_type), status)
    if framing == "endless":
        forever = draw(st.sampled_from(_endless(route)))
        script = Script.chunked(status, pieces, content_type, forever=forever)
        return Answer(script, status, broken=True)
    head = Script.answer(status, b"", content_type, content_length=HUGE_LENGTH).head
    return Answer(Script(head, tuple(pieces), forever=BLOCK), status, broken=True)


@st.composite
def _cases(draw: st.DrawFn) -> Case:
    route, native, stream = draw(st.sampled_from(ROUTES)), draw(st.booleans()), draw(st.booleans())
    # The broken worker is sent what the proxy sends it: Chat Completions when it translates.
    sent = CHAT if route == RESPONSES and not native else route
    return Case(route, native, stream, draw(_answers(sent, stream)))


def _whole(status: int, body: bytes) -> Answer:
    """`body` under an honest Content-Length."""
    return Answer(Script.answer(status, body), status, whole=body)


def _deep_chat(depth: int) -> bytes:
    return _deepened(orjson.loads(chat_answer()), ("choices", 0, "message", "content"), depth)


_TEXT_EVENTS = sse_event(chat_chunk({"content": "x" * 100})) * 64
_LISTED_STATUS = orjson.dumps({**VALID_BODIES[RESPONSES], "status": []})
# The answers the issue names, and those earlier runs of this fuzz found: tried first.
KNOWN = [
    Case(CHAT, True, False, Answer(CASES["huge_length"](), 200, broken=True)),
    Case(CHAT, True, False, Answer(CASES["endless_chunked"](), 200, broken=True)),
    Case(RESPONSES, True, True, Answer(CASES["sse_no_boundary"](), 200, broken=True)),
    Case(CHAT, False, True, Answer(CASES["sse_no_boundary"](), 200, broken=True)),
    Case(CHAT, True, False, _whole(500, b"\x1c")),
    Case(CHAT, False, True, Answer(CASES["string_delta"](), 200)),
    Case(RESPONSES, False, True, Answer(CASES["string_delta"](), 200)),
    Case(COMPLETIONS, True, False, Answer(CASES["truncated_body"](), 200, broken=True)),
    Case(CHAT, False, False, _whole(200, _deep_chat(300))),
    Case(CHAT, True, False, _whole(503, _deep_chat(1000))),
    # A stream cut in the middle of an event: the error event must still be one of its own.
    Case(CHAT, True, True, Answer(Script.sse([b'data: {"choi'], end=False), 200, broken=True)),
    # Well-formed events without end, followed by the recorder.
    Case(CHAT, False, True, Answer(Script.sse([], forever=_TEXT_EVENTS), 200, broken=True)),
    # A native Responses answer whose status cannot be looked up in a set.
    Case(RESPONSES, True, False, _whole(200, _LISTED_STATUS)),
    # An interim status as the whole answer.
    Case(CHAT, True, False, _whole(100, chat_answer())),
]


def _request(case: Case) -> bytes:
    body: dict[str, Any] = {"model": MODEL, "stream": case.stream}
    if case.route == CHAT:
        body["messages"] = [{"role": "user", "content": "Add 1 and 2."}]
    elif case.route == COMPLETIONS:
        body["prompt"] = "Once upon"
    else:
        body["input"] = "Add 1 and 2."
    return orjson.dumps(body)


# ---------------------------------------------------------------- the proxies and a case


@dataclass
class Proxy:
    """A proxy process over one broken worker and the mock worker."""

    root: str
    pid: int
    broken: BrokenWorker
    log: Path
    _logged: int = 0
    baseline_mb: float = 0.0
    peak_mb: float = 0.0

    def new_log(self) -> str:
        """What the proxy logged since the last call."""
        text = self.log.read_bytes()[self._logged :]
        self._logged += len(text)
        return text.decode(errors="replace")

    def sample(self) -> None:
        self.peak_mb = max(self.peak_mb, rss_mb(self.pid))


async def _start_proxy(
    stack: AsyncExitStack, good: MockWorker, native: bool, run_dir: Path
) -> Proxy:
    broken = await stack.enter_async_context(
        BrokenWorker(Script.answer(200, b"{}"), responses_api=native)
    )
    config = ProxyConfig(
        endpoints=[broken.url, good.url],
        port=0,
        record_dir=None if native else run_dir / "sessions",
        # The broken worker stays in the pool, so that every case reaches it; the good one too,
        # through a probe slowed by a loaded machine (one late probe marked it down: a 503).
        health={
            **FAST_HEALTH,
            "interval": 0.2,
            "timeout": 5.0,
            "failure_threshold": 3,
            "breaker_failures": 10**9,
        },
        retry={"backoff_base": 0.001, "backoff_max": 0.01},
        timeouts={"total": TIMEOUT},
    )
    base_url = await stack.enter_async_context(proxy_process(config, run_dir))
    await wait_ready(base_url, 2)
    root = base_url.removesuffix("/v1")
    async with aiohttp.ClientSession() as http, http.get(root + "/workers") as answer:
        kinds = {w["url"]: w["responses_api"] for w in (await answer.json())["workers"]}
    assert kinds[broken.url] == ("native" if native else "translated"), kinds
    pid = listener_pid(base_url)
    assert pid is not None
    proxy = Proxy(root, pid, broken, run_dir / "proxy.log")
    proxy.baseline_mb = proxy.peak_mb = rss_mb(pid)
    return proxy


async def _watch_memory(proxies: list[Proxy], fuzz: asyncio.Future[None]) -> None:
    """Sample the proxies' memory until the fuzz is done, then raise what it raised."""
    while not fuzz.done():
        for proxy in proxies:
            proxy.sample()
        await asyncio.wait({fuzz}, timeout=0.05)
    await fuzz


async def _ask(http: aiohttp.ClientSession, url: str, body: bytes) -> tuple[Any, ...]:
    """Send one request and read its answer to the end, keeping only the last KEEP bytes."""
    size, tail, failure = 0, bytearray(), None
    status, content_type = 0, ""
    try:
        async with http.post(url, data=body) as answer:
            status, content_type = answer.status, answer.content_type
            async for data in answer.content.iter_any():
                size += len(data)
                tail += data
                if len(tail) > 2 * KEEP:
                    del tail[:-KEEP]
    except (aiohttp.ClientError, TimeoutError) as exc:
        failure = f"{type(exc).__name__}: {exc}"
    return status, content_type, size, bytes(tail[-KEEP:]), failure


async def _beside(
    http: aiohttp.ClientSession, root: str, stop: asyncio.Event
) -> tuple[list[float], list[float], list[int]]:
    """Until `stop`, and at least once: time /health, and a request to the mock worker (its
    status, 0 when it failed)."""
    health, good_s, good = [], [], []
    while True:
        started = time.perf_counter()
        await _status(http.get(root + "/health"))
        health.append(time.perf_counter() - started)
        started = time.perf_counter()
        good.append(await _status(http.post(root + CHAT, json=GOOD_REQUEST)))
        good_s.append(time.perf_counter() - started)
        if stop.is_set():
            return health, good_s, good
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)


async def _status(request: contextlib.AbstractAsyncContextManager[aiohttp.ClientResponse]) -> int:
    """The status of a request read to its end; 0 when it failed."""
    try:
        async with request as answer:
            await answer.read()
    except (aiohttp.ClientError, TimeoutError):
        return 0
    return answer.status


async def _play(http: aiohttp.ClientSession, proxy: Proxy, case: Case) -> Outcome:
    # A case is played on the broken worker: the proxy sends a request to the worker with the
    # fewest in flight, so wait until it has let go of the last case's (a cut body can take a
    # moment to close on a busy machine).
    await until(lambda body: _in_flight(body, proxy.broken.url) == 0, proxy.root, "/workers")
    proxy.broken.script = case.answer.script
    stop = asyncio.Event()
    beside = asyncio.create_task(_beside(http, proxy.root, stop))
    try:
        answer = await _ask(http, proxy.root + case.route, _request(case))
    finally:
        stop.set()
    return Outcome(*answer, *await beside, proxy.new_log())


def _in_flight(workers: dict[str, Any], url: str) -> int:
    return next(w["in_flight"] for w in workers["workers"] if w["url"] == url)


# ---------------------------------------------------------------- what must hold


def _last_event(tail: bytes) -> tuple[str | None, Any]:
    """The last event of a stream as an SSE client reads it: its type, and its data as JSON
    (None when the data is no JSON)."""
    events = [e for e in tail.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
    lines = events[-1].split(b"\n") if events else []
    kind = next((line[6:].strip().decode() for line in lines if line.startswith(b"event:")), None)
    data = b"".join(line[5:].strip() for line in lines if line.startswith(b"data:"))
    try:
        return kind, orjson.loads(data)
    except orjson.JSONDecodeError:
        return kind, None


def _check_5xx(case: Case, outcome: Outcome) -> None:
    """A 5xx is the worker's status passed on, or a 502/503/504 with an upstream code."""
    error = orjson.loads(outcome.tail)["error"]
    code = error["code"]
    passed_on = outcome.status == case.answer.status and code in PASSED_ON_CODES
    upstream = outcome.status in UPSTREAM_STATUSES and code in UPSTREAM_CODES
    assert passed_on or upstream, f"the proxy answered {outcome.status} of its own: {error}"


def _check_stream_end(case: Case, outcome: Outcome) -> None:
    """A translated stream ends with a final event; one the worker broke, with an error event
    of its own, that an SSE client reads as one."""
    kind, data = _last_event(outcome.tail)
    end = outcome.tail[-300:]
    said_last = any(final.encode() in b"".join(case.answer.script.pieces) for final in FINAL_EVENTS)
    if case.translated:
        assert kind in FINAL_EVENTS, f"a translated stream ended with {end!r}"
    elif case.route == RESPONSES and case.answer.broken and not said_last:
        assert kind == "response.failed", f"a broken stream ended with {end!r}"
    elif case.route != RESPONSES and case.answer.broken:
        ended = isinstance(data, dict) and "error" in data
        assert ended, f"a broken stream ended without an error event: {end!r}"


def _check(case: Case, outcome: Outcome) -> None:
    assert outcome.failure is None, f"reading the proxy's answer failed: {outcome.failure}"
    assert "Traceback" not in outcome.log, outcome.log[-4000:]
    assert max(outcome.health_s) < PROMPT, f"/health took {max(outcome.health_s):.2f} s"
    assert set(outcome.good) == {200}, f"the mock worker's answers: {outcome.good}"
    assert max(outcome.good_s) < PROMPT, f"the mock worker took {max(outcome.good_s):.2f} s"
    if outcome.status >= 500:
        _check_5xx(case, outcome)
    elif outcome.status >= 400:
        assert outcome.content_type == "application/json", outcome
        assert isinstance(orjson.loads(outcome.tail)["error"], dict), outcome.tail[:300]
    elif outcome.status == 200 and outcome.content_type == "text/event-stream":
        _check_stream_end(case, outcome)
    elif outcome.status == 200 and case.translated:
        assert orjson.loads(outcome.tail)["object"] == "response", outcome.tail[:300]
    whole = case.answer.whole
    if outcome.status == 200 == case.answer.status and not case.translated and whole is not None:
        # Passed through: the client sees the worker's bytes exactly.
        assert outcome.size == len(whole) and whole.endswith(outcome.tail), outcome.tail[-300:]


# ---------------------------------------------------------------- the fuzz


async def test_no_worker_answer_makes_the_proxy_fail_hang_or_grow(tmp_path: Path) -> None:
    async with AsyncExitStack() as stack:
        good = await stack.enter_async_context(MockWorker())
        proxies = {
            native: await _start_proxy(stack, good, native, tmp_path / str(native))
            for native in (True, False)
        }
        loop = asyncio.get_running_loop()
        http = await stack.enter_async_context(
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10 * TIMEOUT))
        )

        def on_loop(work: Callable[[], Coroutine[Any, Any, Outcome]]) -> Outcome:
            return asyncio.run_coroutine_threadsafe(work(), loop).result()

        @FUZZ
        @given(case=_cases())
        def one_case(case: Case) -> None:
            proxy = proxies[case.native]
            _check(case, on_loop(lambda: _play(http, proxy, case)))

        for case in KNOWN:
            one_case = example(case=case)(one_case)
        # Hypothesis runs a plain function; its thread leaves this loop free to serve.
        fuzz = asyncio.ensure_future(asyncio.to_thread(one_case))
        await _watch_memory(list(proxies.values()), fuzz)

    for proxy in proxies.values():
        growth = proxy.peak_mb - proxy.baseline_mb
        assert growth < MEMORY_BOUND_MB, f"from {proxy.baseline_mb:.0f} MB by {growth:.0f} MB"
    assert all(proxy.broken.received for proxy in proxies.values())
