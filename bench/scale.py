"""Benchmark the proxy at scale: 1,000 mock workers, 100,000 sticky sessions, a worker killed.

The mock workers are served a few hundred to a process (`mock_worker --count`), one more alone
so that it can be killed. In process, the session policy alone and the pool around it are
timed over 100 and all the workers. Then `agent-eval serve` starts over 0, 100 and all of
them: its memory, open files and idle CPU (the health probes) at each. Over all of them, every
session sends its first request (memory read at a tenth of the sessions and at all of them),
then its later ones in a shuffled order, the lone worker killed halfway: the time until the
proxy marks it down and the requests that failed. sglang-router gets the same workers and
load, its sticky `manual` policy keyed by X-SMG-Routing-Key. Run from the repository root:
`python -m bench.scale [--workers N] [--sessions S] [--turns T] [--policy-only] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import math
import resource
import time
from collections.abc import Coroutine
from dataclasses import asdict, dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import aiohttp
from rich import box
from rich.table import Table

from agent_eval.system.lifecycle import run_event_loop
from bench.parts.fleet import (
    Fleet,
    Proc,
    run_with_fleet,
    start_agent_eval,
    start_mock_worker_group,
    start_sglang_router,
)
from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.parts.scale_load import (
    PhaseFigures,
    SessionLoad,
    SessionTally,
    client_session,
    jobs,
    run_phase,
    spread,
    top_errors,
)
from bench.parts.scale_policy import PolicyFigures, measure_policy
from bench.parts.scale_watch import LoadSamples, all_healthy, open_files, until_down
from bench.parts.tables import number, ratio, wide_console

OURS, PEER = "agent-eval", "sglang-router"
PEER_POLICY = "manual"
SESSION_HEADERS = ("X-Session-ID", "X-SMG-Routing-Key")
"""Each router's session header: both are sent, each router reads its own."""
SESSION_TTL = 3600
"""Longer than a run, so no session expires before its last turn."""
MB = 1024**2
PHASE_ROWS = (
    ("req/s", "rps"),
    ("p50 ms", "p50_ms"),
    ("p99 ms", "p99_ms"),
    ("router CPU µs/req", "router_cpu_us"),
    ("failures", "failures"),
)
HEALTHY_TIMEOUT = 300.0
DOWN_TIMEOUT = 60.0


@dataclass(frozen=True)
class Idle:
    """A router over some workers, no load: start-up, memory, open files, CPU while idle."""

    router: str
    workers: int
    ready_s: float
    """From the start to every worker healthy (agent-eval) or to readiness (sglang-router)."""
    rss_mb: float
    open_files: int
    idle_cores: float
    """CPU seconds per second while idle: the health probes, mostly."""


@dataclass
class Routed:
    """The sessions through one router: each phase, memory as sessions grew, load, the kill."""

    router: str
    phases: list[PhaseFigures]
    rss_mb: dict[str, float]
    spread: dict[str, float]
    killed_at_s: float
    """Seconds into the later turns when the lone worker was killed."""
    detected_s: float | None
    """From the kill until the proxy marked the worker down (agent-eval only)."""
    failed_after_kill: int
    failed_before_detection: int | None
    errors: dict[str, int]
    in_flight: dict[str, float] | None = None
    """Requests in flight per worker sampled from /metrics, and the scrapes' cost (agent-eval)."""
    open_files: int = 0


def raise_open_files() -> tuple[int, int]:
    """The soft open-files limit raised to the hard one, for this bench and what it starts;
    (before, after)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return soft, resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def start_workers(fleet: Fleet, workers: int, processes: int) -> tuple[list[str], Proc, str]:
    """`workers - 1` mock workers over `processes` processes, and one alone to be killed; the
    grouped workers' URLs, the lone one's process and URL."""
    per = math.ceil((workers - 1) / processes)
    urls: list[str] = []
    for index in range(processes):
        count = min(per, workers - 1 - len(urls))
        if count > 0:
            urls += start_mock_worker_group(fleet, f"w{index}", count)[1]
    lone, [lone_url] = start_mock_worker_group(fleet, "lone", 1)
    return urls, lone, lone_url


async def idle_figures(
    router: str, proc: Proc, root: str, workers: int, started: float, seconds: float
) -> Idle:
    """Wait for every worker to be healthy (agent-eval), then measure `seconds` of idling."""
    if router == OURS and workers:
        async with aiohttp.ClientSession() as http:
            await all_healthy(http, root, workers, HEALTHY_TIMEOUT)
    ready_s = time.monotonic() - started
    cpu = proc.cpu_seconds()
    await asyncio.sleep(seconds)
    cores = (proc.cpu_seconds() - cpu) / seconds
    return Idle(router, workers, ready_s, proc.rss_bytes() / MB, open_files(proc), cores)


def start_ours(fleet: Fleet, urls: list[str], args: argparse.Namespace) -> tuple[Proc, str]:
    """`agent-eval serve` over `urls` with session routing, as a user starts it, sessions kept
    for the whole run."""
    extra = ["--session-ttl", str(SESSION_TTL), "--health-interval", str(args.health_interval)]
    if args.sessions > 100_000:
        extra.append(f"proxy.policies.session.max_sessions={args.sessions}")
    ready = "/readiness" if urls else "/health"
    return start_agent_eval(
        fleet, urls, "session", extra, name=f"agent-eval-{len(urls)}", ready=ready
    )


async def _timed(proc: Proc, phase: Coroutine[Any, Any, PhaseFigures]) -> PhaseFigures:
    """The phase's figures with the router's CPU per request."""
    cpu = proc.cpu_seconds()
    figures = await phase
    spent = (proc.cpu_seconds() - cpu) / max(figures.requests, 1) * 1e6
    return dataclasses.replace(figures, router_cpu_us=spent)


async def _kill_midway(
    tally: SessionTally, at: int, lone: Proc, lone_url: str, watch: str | None
) -> tuple[float, float | None]:
    """Kill the lone worker once `at` requests are done; (when, seconds until marked down)."""
    while tally.done < at:  # noqa: ASYNC110 - the load counts; polling it costs nothing
        await asyncio.sleep(0.02)
    killed = time.monotonic()
    lone.popen.kill()
    if watch is None:
        return killed, None
    async with aiohttp.ClientSession() as http:
        return killed, await until_down(http, watch, lone_url, killed, DOWN_TIMEOUT)


async def route_sessions(
    router: str, proc: Proc, root: str, lone: tuple[Proc, str], args: argparse.Namespace
) -> Routed:
    """Every session's first request (memory read at a tenth and at all), then the later turns
    with the lone worker killed halfway."""
    load = SessionLoad(root, SESSION_HEADERS, args.concurrency)
    tally, sessions = SessionTally(args.sessions), args.sessions
    rss = {"0 sessions": proc.rss_bytes() / MB}
    phases = []
    async with client_session(args.concurrency) as http:
        for name, span in (("first turn, first tenth", range(sessions // 10)),
                           ("first turn, the rest", range(sessions // 10, sessions))):  # fmt: skip
            phases.append(await _timed(proc, run_phase(http, load, jobs(span, 0), tally, name)))
            rss[f"{span.stop:,} sessions"] = proc.rss_bytes() / MB
        later = [job for turn in range(1, args.turns) for job in jobs(range(sessions), turn, turn)]
        samples, ours = LoadSamples(), router == OURS
        sampler = asyncio.create_task(samples.sample(proc, root + "/metrics" if ours else None, 2))
        watch = root if ours else None
        started = time.monotonic()
        killer = asyncio.create_task(
            _kill_midway(tally, tally.done + len(later) // 2, *lone, watch)
        )
        phase = run_phase(http, load, later, tally, f"turns 2-{args.turns}")
        phases.append(await _timed(proc, phase))
        killed, detected = await killer
        sampler.cancel()
    rss["after the later turns"] = proc.rss_bytes() / MB
    after = [t for t in tally.failure_times if t >= killed]
    return Routed(
        router=router,
        phases=phases,
        rss_mb=rss,
        spread=spread(tally, args.workers),
        killed_at_s=killed - started,
        detected_s=detected,
        failed_after_kill=len(after),
        failed_before_detection=None
        if detected is None
        else sum(t <= killed + detected for t in after),
        errors=top_errors(tally),
        in_flight=samples.figures() if ours else None,
        open_files=samples.open_files,
    )


def policy_table(figures: list[PolicyFigures]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="the session policy in process (decisions/s)")
    for name in ("workers", "sessions", "policy, new", "policy, known", "pool, new",
                 "pool, known", "ring, new", "bytes/session", "max/avg sessions",
                 "ring max/avg"):  # fmt: skip
        table.add_column(name, justify="right")
    for f in figures:
        rates = (f.policy_new_per_s, f.policy_known_per_s, f.pool_new_per_s, f.pool_known_per_s)
        table.add_row(
            f"{f.workers:,}",
            f"{f.sessions:,}",
            *(number(v) for v in (*rates, f.ring_new_per_s, f.bytes_per_session)),
            f"{f.max_avg_sessions:.2f}",
            f"{f.ring_max_avg_sessions:.2f}",
        )
    return table


def idle_table(idle: list[Idle]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="routers over idle workers")
    for name in ("router", "workers", "ready s", "RSS MB", "KB per worker", "open files",
                 "idle CPU, cores"):  # fmt: skip
        table.add_column(name, justify="left" if name == "router" else "right")
    empty = {i.router: i for i in idle if i.workers == 0}
    for i in idle:
        base = empty.get(i.router)
        per = (i.rss_mb - base.rss_mb) * 1024 / i.workers if base and i.workers else None
        table.add_row(
            i.router,
            f"{i.workers:,}",
            number(i.ready_s),
            number(i.rss_mb),
            number(per),
            str(i.open_files),
            f"{i.idle_cores:.3f}",
        )
    return table


def routed_table(routed: list[Routed], sessions: int) -> Table:
    """Each phase's figures per router, agent-eval ÷ sglang-router beside them."""
    table = Table(box=box.SIMPLE_HEAD, title=f"{sessions:,} sessions through each router")
    table.add_column("figure")
    for r in routed:
        table.add_column(r.router, justify="right")
    table.add_column("agent-eval ÷ sglang", justify="right")
    rows: list[tuple[str, list[float | None]]] = []
    for index, phase in enumerate(routed[0].phases):
        for label, pick in PHASE_ROWS:
            values = [getattr(r.phases[index], pick) for r in routed]
            rows.append((f"{phase.name}: {label}", values))
    for key in routed[0].rss_mb:
        rows.append((f"RSS MB, {key}", [r.rss_mb[key] for r in routed]))
    rows.append(("KB per session", [_per_session(r, sessions) for r in routed]))
    for key in ("max_avg_requests", "max_avg_sessions", "moved_answers"):
        rows.append((key.replace("_", " "), [r.spread[key] for r in routed]))
    for key in ("max_per_worker", "mean_per_worker", "scrape_ms_median"):
        label = f"/metrics: {key.replace('_', ' ')}"
        rows.append((label, [r.in_flight[key] if r.in_flight else None for r in routed]))
    rows.append(("open files under load", [float(r.open_files) for r in routed]))
    rows.append(("dead worker: s until marked down", [r.detected_s for r in routed]))
    rows.append(
        ("dead worker: failed after the kill", [float(r.failed_after_kill) for r in routed])
    )
    for label, values in rows:
        cells = [number(v) for v in values]
        table.add_row(label, *cells, ratio(values[0], values[-1]) if len(values) > 1 else "")
    return table


def _per_session(routed: Routed, sessions: int) -> float:
    """KB the router grew by per session, from a tenth of the sessions to all of them."""
    tenth, full = list(routed.rss_mb.values())[1:3]
    return (full - tenth) * 1024 / (sessions - sessions // 10)


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1000, help="mock workers in all")
    parser.add_argument("--worker-processes", type=int, default=4, help="processes serving them")
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--turns", type=int, default=2, help="requests per session, 2 or more")
    parser.add_argument("--concurrency", type=int, default=128, help="requests in flight")
    parser.add_argument(
        "--idle-seconds", type=float, default=12.0, help="idle window: over two probe rounds"
    )
    parser.add_argument(
        "--policy-sessions", type=int, help="sessions of the in-process policy figures"
    )
    parser.add_argument(
        "--health-interval",
        type=float,
        default=5.0,
        help="agent-eval's probe interval (its default)",
    )
    parser.add_argument("--no-peer", action="store_true", help="leave sglang-router out")
    parser.add_argument(
        "--policy-only", action="store_true", help="only the in-process policy figures"
    )
    add_json_option(parser, "scale")
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    args = parser.parse_args()
    if args.turns < 2 or args.workers < 2 or args.sessions < 10:
        parser.error("--turns takes 2 or more, --workers 2 or more, --sessions 10 or more")
    return args


def _sizes(workers: int) -> list[int]:
    return sorted({0, min(100, workers), workers})


def measure_router(
    fleet: Fleet, router: str, urls: list[str], lone: tuple[Proc, str], args: argparse.Namespace
) -> tuple[Idle, Routed]:
    """One router over every worker: idle, then the sessions; stopped after."""
    started = time.monotonic()
    if router == OURS:
        proc, root = start_ours(fleet, urls, args)
    else:
        proc, root = start_sglang_router(fleet, urls, PEER_POLICY)
    idle = run_event_loop(idle_figures(router, proc, root, len(urls), started, args.idle_seconds))
    routed = run_event_loop(route_sessions(router, proc, root, lone, args))
    fleet.stop_one(proc)
    return idle, routed


def main() -> None:
    args = _parse_args()
    console = wide_console(130)
    soft, raised = raise_open_files()
    console.print(f"open-files limit: {soft} (soft), raised to {raised} for the bench")
    about = machine()
    policy_sessions = args.policy_sessions or args.sessions
    sizes = sorted({min(100, args.workers), args.workers})
    console.print(f"timing the session policy in process over {sizes} workers ...")
    policy = [measure_policy(n, policy_sessions) for n in sizes]
    console.print(policy_table(policy))
    if args.policy_only:
        console.print(describe(about), highlight=False, soft_wrap=True)
        write_results(args, {"policy": [asdict(f) for f in policy]}, about)
        return

    def body(fleet: Fleet, work: Path) -> None:
        console.print(
            f"starting {args.workers:,} mock workers in {args.worker_processes + 1} processes ..."
        )
        urls, lone, lone_url = start_workers(fleet, args.workers, args.worker_processes)
        every = [*urls, lone_url]
        idle = []
        for size in _sizes(args.workers)[:-1]:
            started = time.monotonic()
            proc, root = start_ours(fleet, every[:size], args)
            measuring = idle_figures(OURS, proc, root, size, started, args.idle_seconds)
            idle.append(run_event_loop(measuring))
            fleet.stop_one(proc)
        console.print(
            f"{args.sessions:,} sessions through agent-eval over {args.workers:,} workers ..."
        )
        ours = measure_router(fleet, OURS, every, (lone, lone_url), args)
        idle.append(ours[0])
        routed = [ours[1]]
        if not args.no_peer and find_spec("sglang_router") is not None:
            console.print(f"... and through sglang-router ({PEER_POLICY}) ...")
            lone, [lone_url] = start_mock_worker_group(fleet, "lone-peer", 1)
            peer = measure_router(fleet, PEER, [*urls, lone_url], (lone, lone_url), args)
            idle.append(peer[0])
            routed.append(peer[1])
        console.print(idle_table(idle))
        console.print(routed_table(routed, args.sessions))
        for r in routed:
            if r.errors:
                console.print(f"{r.router} failures: {r.errors}", highlight=False)
        console.print(describe(about), highlight=False, soft_wrap=True)
        figures = {
            "open_files_limit": {"soft": soft, "raised_to": raised},
            "policy": [asdict(f) for f in policy],
            "idle": [asdict(i) for i in idle],
            "routed": [asdict(r) for r in routed],
        }
        write_results(args, figures, about)

    run_with_fleet("scale", args.keep, body)


if __name__ == "__main__":
    main()
