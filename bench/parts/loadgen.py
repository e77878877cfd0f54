"""Load generator of the proxy benchmark: one run against one target, figures as JSON on stdout.

`python -m bench.parts.loadgen --url URL [--url URL ...] --requests N --concurrency C [--stream]
[--messages]` sends N chat requests (Anthropic Messages requests with --messages), C at a time,
spread round robin over the URLs, after a warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import aiohttp
import orjson
import uvloop

CHAT_PATH = "/v1/chat/completions"
MESSAGES_PATH = "/v1/messages"
SYSTEM = "You are a helpful assistant."
QUESTION = "What is 17 + 25? Answer with a number."
# The last bytes of a whole stream: chat's `[DONE]`, the Messages API's `message_stop` event.
STREAM_ENDS = {CHAT_PATH: b"data: [DONE]", MESSAGES_PATH: b'{"type":"message_stop"}'}
MAX_ERRORS = 5  # distinct failure messages kept in the result


@dataclass(frozen=True)
class LoadSpec:
    """What one run sends: to which base URLs, how many requests, how many at a time."""

    urls: list[str]
    requests: int
    concurrency: int
    stream: bool
    warmup: int
    messages: bool = False
    """Anthropic Messages requests to /v1/messages, the same question, in place of chat ones."""

    @property
    def path(self) -> str:
        return MESSAGES_PATH if self.messages else CHAT_PATH

    def body(self) -> bytes:
        question = {"role": "user", "content": QUESTION}
        if self.messages:
            conversation = {"system": SYSTEM, "messages": [question]}
        else:
            conversation = {"messages": [{"role": "system", "content": SYSTEM}, question]}
        fields = {"max_tokens": 16, "temperature": 0.0, "stream": self.stream}
        return orjson.dumps({"model": "mock-model", **conversation, **fields})


@dataclass
class LoadResult:
    """Figures of one measured run; latencies are to the last byte of the answer.

    `cpu_seconds` is the generator's own CPU time, warm-up included like the servers' figures.
    """

    requests: int
    failures: int
    seconds: float
    cpu_seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    errors: dict[str, int] = field(default_factory=dict)


@dataclass
class _Tally:
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of sorted values (`q` in 0..1); NaN when there are none."""
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def _one(
    session: aiohttp.ClientSession, url: str, body: bytes, stream_end: bytes | None
) -> str | None:
    """Send one request and read the whole answer (a stream up to `stream_end`); the failure
    in words, or None."""
    try:
        async with session.post(url, data=body) as response:
            payload = await response.read()
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if response.status != 200:
        return f"HTTP {response.status}: {payload[:120].decode(errors='replace')}"
    if stream_end is not None and not payload.rstrip().endswith(stream_end):
        return f"stream ended without {stream_end.decode()}"
    return None


async def _client(
    session: aiohttp.ClientSession, spec: LoadSpec, turns: itertools.count[int], total: int
) -> _Tally:
    """One of the `concurrency` loops: take the next request number until all are sent."""
    tally, body, urls = _Tally(), spec.body(), [u + spec.path for u in spec.urls]
    stream_end = STREAM_ENDS[spec.path] if spec.stream else None
    while (turn := next(turns)) < total:
        started = time.perf_counter()
        error = await _one(session, urls[turn % len(urls)], body, stream_end)
        if error is None:
            tally.latencies.append(time.perf_counter() - started)
        else:
            tally.errors[error] += 1
    return tally


async def _phase(session: aiohttp.ClientSession, spec: LoadSpec, total: int) -> list[_Tally]:
    turns = itertools.count()
    loops = (_client(session, spec, turns, total) for _ in range(spec.concurrency))
    return await asyncio.gather(*loops)


async def run_load(spec: LoadSpec) -> LoadResult:
    """Warm up, then measure `spec.requests` requests."""
    connector = aiohttp.TCPConnector(limit=spec.concurrency)
    timeout = aiohttp.ClientTimeout(total=60)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(
        connector=connector,
        timeout=timeout,
        headers=headers,
        cookie_jar=aiohttp.DummyCookieJar(),
    ) as session:
        cpu = time.process_time()
        await _phase(session, spec, spec.warmup)
        started = time.perf_counter()
        tallies = await _phase(session, spec, spec.requests)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    latencies = sorted(t for tally in tallies for t in tally.latencies)
    errors = sum((tally.errors for tally in tallies), Counter())
    return LoadResult(
        requests=spec.requests,
        failures=sum(errors.values()),
        seconds=seconds,
        cpu_seconds=cpu,
        rps=len(latencies) / seconds,
        p50_ms=percentile(latencies, 0.50) * 1000,
        p99_ms=percentile(latencies, 0.99) * 1000,
        errors=dict(errors.most_common(MAX_ERRORS)),
    )


def _parse_args(argv: Sequence[str] | None) -> LoadSpec:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", action="append", required=True, help="base URL; repeatable")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=200, help="requests before measuring")
    parser.add_argument("--stream", action="store_true", help="stream answers as SSE")
    parser.add_argument(
        "--messages", action="store_true", help="Anthropic Messages requests to /v1/messages"
    )
    args = parser.parse_args(argv)
    return LoadSpec(
        args.url, args.requests, args.concurrency, args.stream, args.warmup, args.messages
    )


def main(argv: Sequence[str] | None = None) -> None:
    result = uvloop.run(run_load(_parse_args(argv)))
    print(json.dumps(asdict(result)))  # stdlib json keeps NaN, orjson would write null


if __name__ == "__main__":
    main()
