"""Soak phases with a broken worker: each router over it and a mock worker, under its answers.

For each misbehaviour of agent_eval.testing.broken_worker.CASES named in BROKEN, on fresh
processes: the broken worker playing it, a mock worker, the router over both. A client process
sends chat requests naming the broken worker's model, BROKEN_PARALLEL at a time, for the
phase's seconds; beside them it times GET /health every 50 ms, and sends requests naming the
mock worker's model one after another. This process samples the router's RSS every 0.2 s,
stops the attack early should it pass RSS_CAP_MB, waits SETTLE s and samples it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from rich.console import Console

from agent_eval.testing.broken_worker import MODEL
from bench.parts.fleet import Fleet, Proc, start_broken_worker, start_mock_workers
from bench.parts.loadgen import CHAT_PATH
from bench.parts.soak_parts import (
    CHECK_TIMEOUT,
    TARGETS,
    Figures,
    Row,
    Watch,
    client_session,
    kinds,
    ms,
    run_client,
    start_router,
    table,
)

# The cases, in words, and whether their requests ask for a stream.
BROKEN = {
    "huge_body": ("a 1 GiB body under its Content-Length", False),
    "endless_chunked": ("a chunked body without end", False),
    "sse_no_boundary": ("an event stream without an event boundary", True),
    "odd_error_bytes": ("a 500 whose body is the byte 0x1c", False),
    "string_delta": ("a stream whose delta is a string", True),
}
BROKEN_PARALLEL = 2
BROKEN_TIMEOUT = 2.0  # seconds the client gives a broken request before it leaves
GRACE = 1.0  # seconds past the attack before what is still unanswered is given up
UNANSWERED = "unanswered at the end"
HEALTH_EVERY = 0.05
ANSWER_CAP = 1024 * 1024  # bytes of a mock worker's answer read: a broken one may not end
TAIL = 2048  # bytes kept of a broken answer's end, to tell an error event
RSS_CAP_MB = 3000  # the attack stops early past it: the machine may be shared
SETTLE = 1.0  # seconds after an attack before the "after" sample
TIMED = ("ok", "p50 ms", "p99 ms", "max ms")
ROWS = (
    Row("broken requests", True),
    Row("broken answers"),
    Row("stopped early"),
    Row("router RSS MB before", True),
    Row("router RSS MB peak", True),
    Row("router RSS MB after", True),
    *(Row(f"/health {figure}", True) for figure in TIMED),
    *(Row(f"/health {figure}") for figure in ("failed", "failures")),
    *(Row(f"good {figure}", True) for figure in TIMED),
    *(Row(f"good {figure}") for figure in ("failed", "failures")),
    Row("router alive after"),
    Row("request after"),
)


@dataclass(frozen=True)
class BrokenPhase:
    """One misbehaviour of the broken worker, played for `seconds`."""

    case: str
    seconds: float

    @property
    def name(self) -> str:
        return f"broken worker: {self.case}"

    @property
    def stream(self) -> bool:
        return BROKEN[self.case][1]

    @property
    def title(self) -> str:
        kind = "streamed chat requests" if self.stream else "chat requests"
        return f"{self.name}, {BROKEN[self.case][0]}; {self.seconds:g} s of {kind}"


@dataclass
class Timings:
    """How long the good answers took, and what the others were."""

    seconds: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)

    def figures(self, what: str) -> Figures:
        return {
            f"{what} ok": len(self.seconds),
            f"{what} p50 ms": ms(self.seconds, 0.5),
            f"{what} p99 ms": ms(self.seconds, 0.99),
            f"{what} max ms": ms(self.seconds, 1.0),
            f"{what} failed": sum(self.failures.values()),
            f"{what} failures": kinds(self.failures),
        }


# ---------------------------------------------------------------- the client process


def _chat(model: str, stream: bool) -> bytes:
    message = {"role": "user", "content": "What is 17 + 25?"}
    return orjson.dumps({"model": model, "messages": [message], "stream": stream})


async def broken_attack(url: str, stream: bool, seconds: float, stop: Event) -> Figures:
    """The broken requests, /health and the mock worker's requests, side by side, until
    `seconds` have passed or `stop` is set."""
    until = time.monotonic() + seconds
    answers: Counter[str] = Counter()
    health, good = Timings(), Timings()
    body = _chat(MODEL, stream)
    loops = asyncio.gather(
        *(_broken_loop(url + CHAT_PATH, body, until, answers) for _ in range(BROKEN_PARALLEL)),
        _health_loop(url + "/health", until, health),
        _good_loop(url + CHAT_PATH, until, good),
    )
    await _until_stopped(loops, stop, until + GRACE)
    figures = {"broken requests": sum(answers.values()), "broken answers": kinds(answers)}
    return {**figures, **health.figures("/health"), **good.figures("good")}


async def _until_stopped(loops: asyncio.Future[Any], stop: Event, deadline: float) -> None:
    """Wait for the loops; cancel them, requests in flight included, once `stop` is set or
    `deadline` has passed."""
    while not loops.done():
        if stop.is_set() or time.monotonic() > deadline:
            loops.cancel()
        await asyncio.wait({loops}, timeout=0.1)
    with contextlib.suppress(asyncio.CancelledError):
        await loops


async def _broken_loop(url: str, body: bytes, until: float, answers: Counter[str]) -> None:
    async with client_session(1, BROKEN_TIMEOUT) as session:
        while time.monotonic() < until:
            try:
                answers[await _broken_outcome(session, url, body)] += 1
            except asyncio.CancelledError:
                answers[UNANSWERED] += 1
                raise


async def _broken_outcome(session: aiohttp.ClientSession, url: str, body: bytes) -> str:
    """A broken request's outcome in words: its status, how its stream ended, how it failed."""
    status, end = None, b""
    try:
        async with session.post(url, data=body) as response:
            status = response.status
            async for data in response.content.iter_any():
                end = (end + data)[-TAIL:]
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        failure = "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
        return failure if status is None else f"{status} then {failure}"
    if status == 200 and b'"error"' in end:
        return "200 ending in an error event"
    return f"{status} {_error_code(end)}".strip()


def _error_code(body: bytes) -> str:
    """The code of an OpenAI-shaped error body; nothing for any other body."""
    try:
        error = orjson.loads(body)["error"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return ""
    return str(error.get("code", "")) if isinstance(error, dict) else ""


async def _health_loop(url: str, until: float, health: Timings) -> None:
    async with client_session(1, CHECK_TIMEOUT) as session:
        while time.monotonic() < until:
            await _timed(session.get(url), health, lambda _: True)
            await asyncio.sleep(HEALTH_EVERY)


async def _good_loop(url: str, until: float, good: Timings) -> None:
    body = _chat("mock-model", False)
    async with client_session(1, CHECK_TIMEOUT) as session:
        while time.monotonic() < until:
            await _timed(session.post(url, data=body), good, _from_the_mock)


def _from_the_mock(answer: bytes) -> bool:
    return b'"chatcmpl-mock' in answer[:100]


async def _timed(
    request: contextlib.AbstractAsyncContextManager[aiohttp.ClientResponse],
    timings: Timings,
    good: Callable[[bytes], bool],
) -> None:
    """Time one request; a failure, or an answer that is not `good`, is counted by its kind."""
    started = time.perf_counter()
    try:
        async with request as response:
            answer = await _start_of(response)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        timings.failures[type(exc).__name__] += 1
        return
    except asyncio.CancelledError:
        timings.failures[UNANSWERED] += 1
        raise
    if response.status != 200:
        timings.failures[str(response.status)] += 1
    elif not good(answer):
        timings.failures["answered by the broken worker"] += 1
    else:
        timings.seconds.append(time.perf_counter() - started)


async def _start_of(response: aiohttp.ClientResponse) -> bytes:
    """At most ANSWER_CAP bytes of an answer: a broken worker's may have no end."""
    kept = bytearray()
    async for data in response.content.iter_any():
        kept += data
        if len(kept) > ANSWER_CAP:
            break
    return bytes(kept)


async def _request_after(url: str) -> str:
    """One request naming the mock worker's model, after the attack: its outcome."""
    after = Timings()
    body = _chat("mock-model", False)
    async with client_session(1, CHECK_TIMEOUT) as session:
        await _timed(session.post(url + CHAT_PATH, data=body), after, _from_the_mock)
    return "200" if after.seconds else kinds(after.failures) or "none"


# ---------------------------------------------------------------- phases


def broken_phases(seconds: float) -> list[BrokenPhase]:
    return [BrokenPhase(case, seconds) for case in BROKEN]


def run_broken(phase: BrokenPhase, target: str, work: Path) -> Figures:
    """One router over the broken worker and a mock worker, on fresh processes; its figures."""
    logs = work / phase.name.replace(": ", "-").replace(" ", "-") / target
    logs.mkdir(parents=True)
    with Fleet(logs) as fleet:
        broken, broken_url = start_broken_worker(fleet, phase.case)
        (mock_url,) = start_mock_workers(fleet, ["mock"])
        extra = ("--record", str(logs / "exchanges")) if target == "agent-eval" else ()
        router, url = start_router(fleet, target, [broken_url, mock_url], extra)
        watch = Watch(router, broken)
        watch.snapshot("before")
        stop = multiprocessing.get_context("fork").Event()
        job = functools.partial(broken_attack, url, phase.stream, phase.seconds, stop)
        deadline = phase.seconds + GRACE + CHECK_TIMEOUT
        figures = run_client(job, deadline, functools.partial(_sample, watch, stop))
        time.sleep(SETTLE)
        watch.snapshot("after")
        return {**figures, **watch.result(), **_after(router, url)}


def _sample(watch: Watch, stop: Event) -> None:
    """Sample the router; stop the attack once it has passed RSS_CAP_MB."""
    watch.sample()
    peak = watch.peaks.get("router RSS MB peak", 0)
    if peak > RSS_CAP_MB and not stop.is_set():
        stop.set()
        watch.figures["stopped early"] = f"at {peak:,.0f} MB RSS"


def _after(router: Proc, url: str) -> Figures:
    """Is the router alive, and does a request to the mock worker succeed?"""
    if (code := router.popen.poll()) is not None:
        return {"router alive after": f"no: exit code {code}"}
    return {"router alive after": "yes", "request after": asyncio.run(_request_after(url))}


def run_all_broken(seconds: float, console: Console, work: Path) -> dict[str, dict[str, Figures]]:
    """Every broken case against each router in turn; figures by phase, then router."""
    results: dict[str, dict[str, Figures]] = {}
    for phase in broken_phases(seconds):
        results[phase.name] = {}
        for target in TARGETS:
            console.print(f"{phase.name}: {target} ...", highlight=False)
            results[phase.name][target] = run_broken(phase, target, work)
        console.print(table(phase.title, ROWS, _notes(phase), results[phase.name]))
    return results


def _notes(phase: BrokenPhase) -> tuple[str, ...]:
    stream = " (streamed)" if phase.stream else ""
    return (
        f"{BROKEN_PARALLEL} clients send chat requests{stream} naming the broken worker's model, "
        f"each given {BROKEN_TIMEOUT:g} s; beside them /health every {HEALTH_EVERY * 1000:.0f} "
        "ms, and requests naming the mock worker's model one after another ('good'); what is "
        f"unanswered {GRACE:g} s after the end is given up",
        "agent-eval: --record (streams followed, as `run --record` does), defaults otherwise; "
        "sglang-router: defaults. It routes by no model name: about half of either client's "
        "requests reach the other worker (a good one the broken worker answered is a failure)",
        f"an attack stops early once the router passes {RSS_CAP_MB:,} MB RSS",
    )
