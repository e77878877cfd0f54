"""The scale bench's clients: many sticky sessions, each a few requests spread over the run.

Every session sends its first request in one phase and its later ones in another, in a shuffled
order, so all of them are live in the router's tables at once; `concurrency` requests are in
flight at a time. Each answer names the mock worker that wrote it (`system_fingerprint`), so
the tally knows where every session went and whether it stayed there.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp
import orjson

from bench.parts.loadgen import percentile

CHAT = "/v1/chat/completions"
MODEL = "mock-model"
MAX_ERRORS = 5


@dataclass(frozen=True)
class SessionLoad:
    """Where the sessions go and how: the router's root URL, the headers that carry a session
    id (each router reads its own), and the requests in flight at once."""

    url: str
    session_headers: tuple[str, ...]
    concurrency: int


@dataclass
class SessionTally:
    """What the clients saw: answers, failures and their times, each session's worker."""

    sessions: int
    answered: int = 0
    latencies: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)
    failure_times: list[float] = field(default_factory=list)
    by_worker: Counter[str] = field(default_factory=Counter)
    home: list[str | None] = field(default_factory=list)
    """The worker that answered each session's first request."""
    moved: int = 0
    """Later answers from another worker than the session's first."""

    def __post_init__(self) -> None:
        self.home = [None] * self.sessions

    @property
    def done(self) -> int:
        return self.answered + sum(self.failures.values())

    def fail(self, reason: str) -> None:
        self.failures[reason] += 1
        self.failure_times.append(time.monotonic())

    def answer(self, session: int, worker: str, latency: float) -> None:
        self.answered += 1
        self.latencies.append(latency)
        self.by_worker[worker] += 1
        home = self.home[session]
        if home is None:
            self.home[session] = worker
        elif home != worker:
            self.moved += 1


@dataclass(frozen=True)
class PhaseFigures:
    """One phase of requests: how many, how fast, how long each took, how many failed."""

    name: str
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    failures: int
    router_cpu_us: float | None = None
    """The router's CPU per request, when it was measured."""


def jobs(sessions: range, turn: int, seed: int | None = None) -> list[tuple[int, int]]:
    """(session, turn) pairs of these sessions, shuffled by `seed` when one is given."""
    pairs = [(session, turn) for session in sessions]
    if seed is not None:
        random.Random(seed).shuffle(pairs)
    return pairs


def _body(session: int, turn: int) -> bytes:
    text = f"session {session}, turn {turn}: what is {session % 97} + {turn}?"
    message = {"role": "user", "content": text}
    return orjson.dumps({"model": MODEL, "messages": [message], "max_tokens": 8})


async def _one(
    http: aiohttp.ClientSession, load: SessionLoad, job: tuple[int, int], tally: SessionTally
) -> None:
    session, turn = job
    key = f"scale-{session}"
    headers = {"Content-Type": "application/json", **dict.fromkeys(load.session_headers, key)}
    started = time.perf_counter()
    try:
        async with http.post(load.url + CHAT, data=_body(session, turn), headers=headers) as got:
            payload = await got.read()
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        tally.fail(type(exc).__name__)
        return
    if got.status != 200:
        tally.fail(f"HTTP {got.status}: {payload[:100].decode(errors='replace')}")
        return
    try:
        worker = str(orjson.loads(payload)["system_fingerprint"])
    except (orjson.JSONDecodeError, KeyError, TypeError):
        tally.fail("an answer without the worker's name")
        return
    tally.answer(session, worker, time.perf_counter() - started)


async def run_phase(
    http: aiohttp.ClientSession,
    load: SessionLoad,
    work: Sequence[tuple[int, int]],
    tally: SessionTally,
    name: str,
) -> PhaseFigures:
    """Send every job, `load.concurrency` at a time; the phase's figures."""
    pending = iter(work)
    latencies_before, failures_before = len(tally.latencies), sum(tally.failures.values())

    async def slot() -> None:
        for job in pending:
            await _one(http, load, job, tally)

    started = time.perf_counter()
    await asyncio.gather(*(slot() for _ in range(load.concurrency)))
    seconds = time.perf_counter() - started
    latencies = sorted(tally.latencies[latencies_before:])
    return PhaseFigures(
        name=name,
        requests=len(work),
        seconds=seconds,
        rps=len(latencies) / seconds,
        p50_ms=percentile(latencies, 0.5) * 1000,
        p99_ms=percentile(latencies, 0.99) * 1000,
        failures=sum(tally.failures.values()) - failures_before,
    )


def client_session(concurrency: int) -> aiohttp.ClientSession:
    """One HTTP client for a whole run: as many connections as requests in flight."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency),
        timeout=aiohttp.ClientTimeout(total=120),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


def spread(tally: SessionTally, workers: int) -> dict[str, float]:
    """How evenly the load fell: the busiest worker's requests and sessions over the mean."""
    homes = Counter(home for home in tally.home if home is not None)
    mean_requests = tally.answered / workers
    mean_sessions = sum(homes.values()) / workers
    return {
        "max_avg_requests": max(tally.by_worker.values()) / mean_requests,
        "max_avg_sessions": max(homes.values()) / mean_sessions,
        "workers_used": len(tally.by_worker),
        "moved_answers": tally.moved,
    }


def top_errors(tally: SessionTally) -> dict[str, int]:
    return dict(tally.failures.most_common(MAX_ERRORS))
