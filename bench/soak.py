"""Soak test: agent-eval and sglang-router against a stream flood, huge bodies, slowloris and
broken workers.

Each phase runs once per router, on fresh processes: one mock worker, the router in front of
it, and a separate client process (uvloop, one aiohttp session) that attacks the router while
this process samples the router's open files and RSS and the worker's open files from /proc
every 0.2 s. After each attack it waits 2 s, samples again and checks the router still serves.

1. flood: N streamed chat requests at once; complete streams, 429s (with Retry-After?), 503s,
   other statuses, connection errors, how fast the refusals come.
2. big bodies: N chat requests of M MB each, a few at a time; statuses, RSS peak and after.
3. slowloris: N connections sending a request head one byte a second while a normal client
   keeps asking; how many the router closes and when, whether the normal client is served.
4. broken workers (parts/soak_broken.py): the router over a broken worker and a mock worker while a
   client keeps sending requests the broken one answers (a 1 GiB body, a body without end, an
   event without end, odd error bytes, a malformed delta); the router's RSS, /health's
   latency, the mock worker's latency through the router, what the broken requests got.

Every phase and every request loop has a deadline; every process started is stopped at the
end. Run from the repository root (about 6 minutes with the defaults, the broken workers'
about 2 of them): `python -m bench.soak [--streams 10000] [--big-bodies 20] [--body-mb 50]
[--slow-clients 500] [--broken-seconds 4] [--only attacks|broken] [--json [PATH]] [--keep]`;
small counts for a quick run.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from rich.console import Console

from agent_eval.proxy.server.limits import in_flight_cap
from bench.parts.fleet import Fleet, Proc, run_with_fleet, worker_urls
from bench.parts.loadgen import CHAT_PATH, LoadSpec, percentile
from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.parts.soak_broken import run_all_broken
from bench.parts.soak_parts import (
    CHECK_TIMEOUT,
    TARGETS,
    Figures,
    Job,
    Row,
    Watch,
    client_session,
    get,
    kinds,
    ms,
    run_client,
    start_router,
    table,
)
from bench.parts.tables import wide_console

SETTLE = 2.0  # seconds after an attack before the "after" sample
CHILD_GRACE = 30.0  # seconds a client process may run past its own deadline
FDS_MARGIN = 32  # descriptors a router needs besides its connections

# The flood's worker: streams last ~3.5 s, so thousands overlap.
FLOOD_WORKER = ("--latency", "2.0", "--chunk-delay", "0.25")
FLOOD_DEADLINE = 75.0
FLOOD_OUTCOMES = (
    *("200 complete", "200 cut", "429", "429 with Retry-After", "503"),
    *("other status", "connection errors"),
)
AGENT_EVAL_IN_FLIGHT = 8192  # `serve --max-in-flight` default, before the open-files cap

BODY_LIMIT = 64 * 1024**2  # both routers and the mock worker accept up to this
BODY_PARALLEL = 4
BODY_DEADLINE = 90.0

CLIENT_TIMEOUT = 5.0  # agent-eval's --client-timeout during slowloris
SLOW_SECONDS = 35.0  # longer than hyper's 30 s header timeout, should the peer have one
SLOW_BYTE_EVERY = 1.0
NORMAL_PAUSE = 0.1  # seconds between the normal client's requests during slowloris

PS = ("p50 ms", "p99 ms")


@dataclass(frozen=True)
class Phase:
    """One attack: how its worker and routers run, what the client does, which rows it shows."""

    name: str
    title: str
    worker_args: tuple[str, ...]
    router_args: dict[str, tuple[str, ...]]
    job: Callable[[str], Job]  # the client, given the router's base URL
    deadline: float
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------- phase 1: flood


@dataclass
class FloodTally:
    """What the flood's answers were, and how long they took."""

    outcomes: Counter[str] = field(default_factory=Counter)
    others: Counter[str] = field(default_factory=Counter)
    refused_s: list[float] = field(default_factory=list)
    complete_s: list[float] = field(default_factory=list)
    last_sent: float = 0.0  # seconds from the start of the flood

    def answer(
        self, status: int, retry_after: bool, payload: bytes, first: float, last: float
    ) -> None:
        """Count one answer; `first` and `last` are seconds to its headers and its end."""
        if status == 200 and payload.rstrip().endswith(b"data: [DONE]"):
            self.outcomes["200 complete"] += 1
            self.complete_s.append(last)
        elif status == 200:
            self.outcomes["200 cut"] += 1
        elif status in (429, 503):
            self.outcomes[str(status)] += 1
            self.outcomes["429 with Retry-After"] += status == 429 and retry_after
            self.refused_s.append(first)
        else:
            self.outcomes["other status"] += 1
            self.others[str(status)] += 1

    def failed(self, exc: BaseException) -> None:
        self.outcomes["connection errors"] += 1
        self.others[type(exc).__name__] += 1

    def figures(self, seconds: float) -> Figures:
        return {
            **{outcome: self.outcomes[outcome] for outcome in FLOOD_OUTCOMES},
            "other kinds": kinds(self.others),
            "429/503 p50 ms": ms(self.refused_s, 0.5),
            "429/503 p99 ms": ms(self.refused_s, 0.99),
            "complete stream p50 ms": ms(self.complete_s, 0.5),
            "complete stream p99 ms": ms(self.complete_s, 0.99),
            "all sent after s": self.last_sent,
            "seconds": seconds,
        }


@dataclass
class Sending:
    """When one request's head left the client: the trace of the request sets it."""

    at: float | None = None


async def _head_sent(
    session: aiohttp.ClientSession, context: SimpleNamespace, params: object
) -> None:
    context.trace_request_ctx.at = time.perf_counter()


async def _one_stream(
    session: aiohttp.ClientSession, url: str, body: bytes, tally: FloodTally, flood_start: float
) -> None:
    """One streamed request, timed from the moment its head left (not from its connect)."""
    sending = Sending()
    try:
        async with session.post(url, data=body, trace_request_ctx=sending) as response:
            first = time.perf_counter()
            payload = await response.read()
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        tally.failed(exc)
        return
    sent = sending.at or flood_start
    tally.last_sent = max(tally.last_sent, sent - flood_start)
    retry_after = "Retry-After" in response.headers
    tally.answer(response.status, retry_after, payload, first - sent, time.perf_counter() - sent)


async def flood(url: str, streams: int, deadline: float) -> Figures:
    """`streams` streamed chat requests, all at once, on one session without a connection cap."""
    body, tally = LoadSpec([url], streams, streams, True, 0).body(), FloodTally()
    trace = aiohttp.TraceConfig()
    trace.on_request_headers_sent.append(_head_sent)
    started = time.perf_counter()
    async with client_session(0, deadline, trace=trace) as session:
        chat = url + CHAT_PATH
        await asyncio.gather(
            *(_one_stream(session, chat, body, tally, started) for _ in range(streams))
        )
    return tally.figures(time.perf_counter() - started)


# ---------------------------------------------------------------- phase 2: big bodies


def big_body(megabytes: int) -> bytes:
    """A chat request whose one message makes it about `megabytes` MB (10^6 bytes) long."""
    content = "lorem ipsum " * (megabytes * 1_000_000 // 12)
    message = {"role": "user", "content": content}
    return orjson.dumps({"model": "mock-model", "messages": [message], "max_tokens": 16})


async def big_bodies(url: str, count: int, megabytes: int, deadline: float) -> Figures:
    """`count` big chat requests, BODY_PARALLEL at a time."""
    body = big_body(megabytes)
    statuses: Counter[str] = Counter()
    seconds: list[float] = []
    gate = asyncio.Semaphore(BODY_PARALLEL)

    async def one(session: aiohttp.ClientSession) -> None:
        async with gate:
            started = time.perf_counter()
            try:
                async with session.post(url + CHAT_PATH, data=body) as response:
                    await response.read()
                statuses[str(response.status)] += 1
                seconds.append(time.perf_counter() - started)
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                statuses[type(exc).__name__] += 1

    async with client_session(BODY_PARALLEL, deadline) as session:
        await asyncio.gather(*(one(session) for _ in range(count)))
    return {
        "body MB": len(body) / 1e6,
        "200": statuses.pop("200", 0),
        "413": statuses.pop("413", 0),
        "other answers": sum(statuses.values()),
        "other kinds": kinds(statuses),
        "answer p50 ms": ms(seconds, 0.5),
        "answer max ms": ms(seconds, 1.0),
    }


# ---------------------------------------------------------------- phase 3: slowloris


@dataclass
class SlowEnd:
    """How one slow connection ended: after how long the router closed it, what it said."""

    closed_after: float | None = None  # None: still open when the attack ended
    answer: str | None = None  # the first line the router sent, if any
    connect_error: str | None = None


def _slow_head() -> Iterator[int]:
    """A request head that never ends: a header value that grows one byte at a time."""
    start = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    return itertools.chain(start, itertools.repeat(ord("a")))


async def _slow_connection(host: str, port: int, until: float) -> SlowEnd:
    """Send a head byte by byte until the router closes the connection or `until` passes."""
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as exc:
        return SlowEnd(connect_error=type(exc).__name__)
    opened = time.monotonic()
    heard = asyncio.ensure_future(reader.read(1024))
    try:
        for byte in _slow_head():
            left = until - time.monotonic()
            if heard.done() or left <= 0:
                break
            writer.write(bytes([byte]))
            await asyncio.wait({heard}, timeout=min(SLOW_BYTE_EVERY, left))
    except OSError:
        await asyncio.wait({heard}, timeout=1.0)
    finally:
        writer.transport.abort()
    if not heard.done():
        heard.cancel()
        return SlowEnd()
    data = b"" if heard.exception() else heard.result()
    return SlowEnd(time.monotonic() - opened, data.split(b"\r\n")[0].decode(errors="replace"))


async def _normal_client(url: str, until: float) -> tuple[list[float], Counter[str]]:
    """Chat requests one after another, each on a new connection, until `until`."""
    body = LoadSpec([url], 1, 1, False, 0).body()
    seconds: list[float] = []
    failures: Counter[str] = Counter()
    async with client_session(1, CHECK_TIMEOUT, force_close=True) as session:
        while time.monotonic() < until:
            started = time.perf_counter()
            try:
                async with session.post(url + CHAT_PATH, data=body) as response:
                    await response.read()
                if response.status == 200:
                    seconds.append(time.perf_counter() - started)
                else:
                    failures[str(response.status)] += 1
            except (TimeoutError, aiohttp.ClientError, OSError) as exc:
                failures[type(exc).__name__] += 1
            await asyncio.sleep(NORMAL_PAUSE)
    return seconds, failures


def _slow_figures(ends: list[SlowEnd], seconds: list[float], failures: Counter[str]) -> Figures:
    closed = sorted(end.closed_after for end in ends if end.closed_after is not None)
    answers = Counter(end.answer for end in ends if end.answer)
    return {
        "opened": sum(end.connect_error is None for end in ends),
        "could not connect": sum(end.connect_error is not None for end in ends),
        "closed by the router": len(closed),
        "closed after p50 s": percentile(closed, 0.5),
        "closed after max s": percentile(closed, 1.0),
        "router's answer before closing": kinds(answers),
        "still open at the end": sum(e.closed_after is None and not e.connect_error for e in ends),
        "normal requests ok": len(seconds),
        "normal requests failed": sum(failures.values()),
        "normal failure kinds": kinds(failures),
        "normal p50 ms": ms(seconds, 0.5),
        "normal p99 ms": ms(seconds, 0.99),
    }


async def slowloris(url: str, clients: int, seconds: float) -> Figures:
    """`clients` slow connections for `seconds`, and a normal client beside them."""
    address = urlsplit(url)
    host, port = address.hostname or "127.0.0.1", address.port or 80
    until = time.monotonic() + seconds
    slow = [_slow_connection(host, port, until) for _ in range(clients)]
    ends, (ok, failures) = await asyncio.gather(asyncio.gather(*slow), _normal_client(url, until))
    return _slow_figures(list(ends), ok, failures)


# ---------------------------------------------------------------- phases and runs


def phases(args: argparse.Namespace, in_flight: int) -> list[Phase]:
    """The three attacks, sized by the command line."""
    return [_flood_phase(args, in_flight), _body_phase(args), _slow_phase(args)]


def _flood_phase(args: argparse.Namespace, in_flight: int) -> Phase:
    peer_limits = ("--max-concurrent-requests", str(in_flight), "--queue-size", "0")
    return Phase(
        name="flood",
        title=f"flood: {args.streams:,} streamed chat requests at once, one worker",
        worker_args=FLOOD_WORKER,
        router_args={"agent-eval": (), "sglang-router": peer_limits},
        job=lambda url: functools.partial(flood, url, args.streams, FLOOD_DEADLINE),
        deadline=FLOOD_DEADLINE,
        rows=(
            *(Row(outcome) for outcome in FLOOD_OUTCOMES),
            Row("other kinds"),
            *(Row(f"{what} {q}", True) for what in ("429/503", "complete stream") for q in PS),
            Row("all sent after s", True),
            Row("seconds", True),
            *_usage_rows(worker=True),
        ),
        notes=(
            f"agent-eval: defaults (max in flight {in_flight}, 1024 connections to a worker)",
            f"sglang-router: --max-concurrent-requests {in_flight} --queue-size 0 "
            "(refuse at once, as agent-eval does; its --help calls it a token bucket "
            "refilled at that rate per second); its connections to a worker: no cap",
            f"worker: {' '.join(FLOOD_WORKER)}. Times run from a request's head leaving the "
            "client: to the response headers for 429/503, to [DONE] for streams",
        ),
    )


def _body_phase(args: argparse.Namespace) -> Phase:
    return Phase(
        name="big bodies",
        title=f"big bodies: {args.big_bodies} chat requests of {args.body_mb} MB, "
        f"{BODY_PARALLEL} at a time",
        worker_args=(),
        router_args={
            "agent-eval": ("--max-body-bytes", str(BODY_LIMIT)),
            "sglang-router": ("--max-payload-size", str(BODY_LIMIT)),
        },
        job=lambda url: functools.partial(
            big_bodies, url, args.big_bodies, args.body_mb, BODY_DEADLINE
        ),
        deadline=BODY_DEADLINE,
        rows=(
            *(Row(name) for name in ("body MB", "200", "413", "other answers", "other kinds")),
            Row("answer p50 ms", True),
            Row("answer max ms", True),
            *_usage_rows(),
        ),
        notes=(
            f"agent-eval --max-body-bytes {BODY_LIMIT}, sglang-router --max-payload-size "
            f"{BODY_LIMIT} (defaults: agent-eval 32 MiB, sglang-router 512 MiB)",
        ),
    )


def _slow_phase(args: argparse.Namespace) -> Phase:
    return Phase(
        name="slowloris",
        title=f"slowloris: {args.slow_clients} connections sending a head 1 byte/s for "
        f"{SLOW_SECONDS:.0f} s, a normal client beside them",
        worker_args=(),
        router_args={"agent-eval": ("--client-timeout", str(CLIENT_TIMEOUT)), "sglang-router": ()},
        job=lambda url: functools.partial(slowloris, url, args.slow_clients, SLOW_SECONDS),
        deadline=SLOW_SECONDS + CHECK_TIMEOUT,
        rows=(
            *(Row(name) for name in ("opened", "could not connect", "closed by the router")),
            Row("closed after p50 s", True),
            Row("closed after max s", True),
            Row("router's answer before closing"),
            Row("still open at the end"),
            *(Row(f"normal requests {outcome}") for outcome in ("ok", "failed")),
            Row("normal failure kinds"),
            *(Row(f"normal {q}", True) for q in PS),
            *_usage_rows(),
        ),
        notes=(
            f"agent-eval --client-timeout {CLIENT_TIMEOUT:g}; sglang-router has no such "
            "option and runs with its defaults",
        ),
    )


def _usage_rows(worker: bool = False) -> tuple[Row, ...]:
    rows = [
        Row("router fds before"),
        Row("router fds peak", True),
        Row("router fds after", True),
        Row("router RSS MB before", True),
        Row("router RSS MB peak", True),
        Row("router RSS MB after", True),
    ]
    if worker:
        rows.append(Row("worker fds peak", True))
    return (*rows, Row("router alive after"), Row("worker after"), Row("request after"))


def survival(target: str, router: Proc, url: str) -> Figures:
    """Is the router alive, its worker healthy (agent-eval: breaker closed), a request served?"""
    if (code := router.popen.poll()) is not None:
        return {"router alive after": f"no: exit code {code}"}
    figures: Figures = {"router alive after": "yes"}
    try:
        (worker,) = orjson.loads(get(url + "/workers")[1])["workers"]
        figures["worker after"] = _worker_state(worker)
        status, _ = get(url + CHAT_PATH, LoadSpec([url], 1, 1, False, 0).body())
        figures["request after"] = status
    except (OSError, ValueError, KeyError) as exc:
        figures["request after"] = f"{type(exc).__name__}: {exc}"
    return figures


def _worker_state(worker: dict[str, Any]) -> str:
    """A worker of `GET /workers` in words; sglang-router's shows no breaker state."""
    healthy = worker.get("healthy", worker.get("is_healthy"))
    state = "health unknown" if healthy is None else "healthy" if healthy else "unhealthy"
    return f"{state}, breaker {worker['breaker']}" if "breaker" in worker else state


def run_phase(phase: Phase, target: str, work: Path) -> Figures:
    """One router under one attack, on fresh processes; its figures."""
    logs = work / phase.name.replace(" ", "-") / target
    logs.mkdir(parents=True)
    with Fleet(logs) as fleet:
        argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--port", "0"]
        worker = fleet.start("worker", [*argv, *phase.worker_args])
        router, url = start_router(fleet, target, worker_urls([worker]), phase.router_args[target])
        watch = Watch(router, worker)
        watch.snapshot("before")
        figures = run_client(phase.job(url), phase.deadline + CHILD_GRACE, watch.sample)
        time.sleep(SETTLE)
        watch.snapshot("after")
        return {**figures, **watch.result(), **survival(target, router, url)}


# ---------------------------------------------------------------- output


def raise_open_files() -> str:
    """Raise the soft open-files limit to the hard one (children inherit it); what was done."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return f"open files: soft limit {soft} -> {hard} (the hard limit)"


def _limited(args: argparse.Namespace, in_flight: int) -> list[str]:
    """Which figures the open-files limit shapes, in words."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    notes = []
    if in_flight < AGENT_EVAL_IN_FLIGHT:
        notes.append(f"the open-files limit caps agent-eval at {in_flight} requests in flight")
    if 2 * args.streams + FDS_MARGIN > soft:
        notes.append(
            f"{args.streams:,} streams may take a router up to {2 * args.streams:,} descriptors "
            f"(one to the client, one to the worker each); the limit is {soft:,}"
        )
    return notes


def _at_the_limit(figures: Figures) -> str | None:
    """Words when the router ran out of descriptors: its figures are the limit's."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    peak = figures.get("router fds peak")
    if isinstance(peak, int | float) and peak >= soft - FDS_MARGIN:
        return f"reached the open-files limit ({int(peak):,} of {soft:,} descriptors)"
    return None


def _parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10_000, help="flood: streams at once")
    parser.add_argument("--big-bodies", type=int, default=20, help="big bodies: requests")
    parser.add_argument("--body-mb", type=int, default=50, help="big bodies: MB each")
    parser.add_argument("--slow-clients", type=int, default=500, help="slowloris: connections")
    parser.add_argument(
        "--broken-seconds", type=float, default=4.0, help="broken workers: seconds per case"
    )
    parser.add_argument(
        "--only",
        choices=("attacks", "broken"),
        help="run only the client attacks, or only the broken workers",
    )
    add_json_option(parser, "soak")
    parser.add_argument("--keep", action="store_true", help="keep the processes' logs")
    return parser.parse_args(argv)


def run_all(
    args: argparse.Namespace, console: Console, work: Path
) -> dict[str, dict[str, Figures]]:
    """Every phase asked for against each router in turn; figures by phase, then router."""
    results = run_attacks(args, console, work) if args.only != "broken" else {}
    if args.only != "attacks":
        results |= run_all_broken(args.broken_seconds, console, work)
    return results


def run_attacks(
    args: argparse.Namespace, console: Console, work: Path
) -> dict[str, dict[str, Figures]]:
    """The client attacks against each router in turn."""
    in_flight = in_flight_cap(AGENT_EVAL_IN_FLIGHT)
    for note in _limited(args, in_flight):
        console.print(f"[yellow]limited: {note}[/]")
    results: dict[str, dict[str, Figures]] = {}
    for phase in phases(args, in_flight):
        results[phase.name] = {}
        for target in TARGETS:
            console.print(f"{phase.name}: {target} ...", highlight=False)
            results[phase.name][target] = run_phase(phase, target, work)
            if limited := _at_the_limit(results[phase.name][target]):
                console.print(f"[yellow]limited: {target} {limited}[/]")
        console.print(table(phase.title, phase.rows, phase.notes, results[phase.name]))
    return results


def soak(args: argparse.Namespace, console: Console, work: Path) -> None:
    """Run every phase, print the machine line, write the JSON when asked."""
    about = machine()
    results = run_all(args, console, work)
    console.print(describe(about), highlight=False, soft_wrap=True)
    write_results(args, {"phases": results}, about)


def main() -> None:
    args = _parse_args()
    console = wide_console()
    console.print(raise_open_files(), highlight=False)
    # Each phase has fleets of its own, in folders of the work folder; this one stays empty.
    run_with_fleet("soak", args.keep, lambda _, work: soak(args, console, work))


if __name__ == "__main__":
    main()
