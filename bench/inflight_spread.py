"""Benchmark how evenly sticky sessions spread their requests in flight over 2, 4 and 8 workers.

An evaluation's load: attempts of one tool round trip (a calculator call, its result, the
answer), each attempt its own session id, 4 per worker in flight (8 on the default 2 workers),
the next starting as one ends. Mock workers simulate a prefix cache with one prefill slot (a
request waits while another prefills, as on a llama.cpp worker) and a fixed decode delay.
Each configuration starts from cold caches and a fresh router: agent-eval's `session` policy,
its placement before requests in flight counted (bench/parts/placement_before.py), and
sglang-router's sticky `manual` policy (keyed by X-SMG-Routing-Key) assigning new keys at
random or to the worker with the fewest requests. Each request's span and the worker that
answered it (its system_fingerprint) give the requests in flight per worker at every instant.
Run from the repository root: `python -m bench.inflight_spread [--workers 2,4,8] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from rich import box
from rich.console import Console
from rich.table import Table

from agent_eval.system.lifecycle import run_event_loop
from bench.parts import ROOT
from bench.parts.fleet import Fleet, Proc, run_with_fleet, start_agent_eval, start_mock_workers
from bench.parts.fleet import start_sglang_router as start_sglang
from bench.parts.results_file import add_json_option, describe, machine, write_results
from bench.parts.tables import number, ratio, wide_console
from bench.routing import Config, Result, Workload, measure, result

BASELINE = "bench.parts.placement_before:SessionByHash"


@dataclass(frozen=True)
class Router:
    """One routed configuration: the router, its policy and how it is started."""

    name: str
    policy: str
    label: str
    extra: tuple[str, ...] = ()


ROUTERS = (
    Router("agent-eval", "session", "session"),
    Router("agent-eval", BASELINE, "session, placement before"),
    Router("sglang-router", "manual", "manual, random", ("--assignment-mode", "random")),
    Router("sglang-router", "manual", "manual, min_load", ("--assignment-mode", "min_load")),
)


@dataclass(frozen=True)
class Pool:
    """Mock workers: the names they answer with and their base URLs, in the same order."""

    names: list[str]
    urls: list[str]


@dataclass(frozen=True)
class Spread:
    """The figures of one configuration on one pool size."""

    router: str
    label: str
    workers: int
    max_over_mean: float  # the busiest worker's requests in flight over the mean, time-weighted
    idle_share: float  # share of the time a worker had none while another had 2 or more
    run: Result


def in_flight_spread(
    spans: Sequence[tuple[float, float, str]], workers: Sequence[str]
) -> tuple[float, float]:
    """Over the time any request was in flight: the busiest worker's requests over the mean,
    time-weighted, and the share of that time in which a worker had none while another had
    two or more."""
    events = sorted([(t0, 1, w) for t0, _, w in spans] + [(t1, -1, w) for _, t1, w in spans])
    level = dict.fromkeys(workers, 0)
    busy = weighted = idle = 0.0
    last = events[0][0] if events else 0.0
    for at, step, worker in events:  # at equal times an end (-1) sorts before a start
        total, span = sum(level.values()), at - last
        if total and span > 0:
            busy += span
            weighted += span * max(level.values()) * len(level) / total
            idle += span if min(level.values()) == 0 and max(level.values()) >= 2 else 0.0
        level[worker] += step
        last = at
    return (weighted / busy, idle / busy) if busy else (float("nan"), float("nan"))


def start_router(fleet: Fleet, router: Router, workers: list[str]) -> tuple[Proc, str]:
    if router.name == "sglang-router":
        return start_sglang(fleet, workers, router.policy, router.extra)
    # The baseline policy is a module of the benches, which the proxy imports by name.
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return start_agent_eval(fleet, workers, router.policy, env={"PYTHONPATH": path})


def play(router: Router, url: str, pool: Pool, workload: Workload, per: int) -> Spread:
    """The workload through `url`, `per` attempts per worker in flight, and its figures."""
    run = f"{router.label}-{len(pool.urls)}".replace(" ", "-").replace(",", "")
    in_flight = per * len(pool.urls)
    tally, spent = run_event_loop(measure(url, pool.urls, workload, run, True, in_flight))
    figures = result(Config(router.name, router.policy, True), tally, spent)
    max_over_mean, idle_share = in_flight_spread(tally.spans, pool.names)
    return Spread(router.name, router.label, len(pool.urls), max_over_mean, idle_share, figures)


def _cell(value: float, before: float, text: str) -> str:
    return f"{text} [dim]{ratio(value, before)}[/]"


def table(spreads: list[Spread], args: argparse.Namespace) -> Table:
    """One row per configuration and pool size; each figure with its ratio to the placement
    before in-flight load counted, on the same pool."""
    title = (
        f"requests in flight per worker, {args.per_worker} attempts per worker at a time, "
        f"{args.rounds * args.per_worker} per worker in all; max/mean: the busiest worker's "
        "over the mean; idle worker: share of the time one had none while another had 2+ "
        "(dim: ÷ agent-eval session, placement before)"
    )
    grid = Table(box=box.SIMPLE_HEAD, title=title)
    for name in ("workers", "router", "policy"):
        grid.add_column(name)
    for name in ("max/mean", "idle worker", "req/s", "hit rate", "failures"):
        grid.add_column(name, justify="right")
    before = {s.workers: s for s in spreads if s.run.policy == BASELINE}
    for s in spreads:
        base = before.get(s.workers, s)
        grid.add_row(
            str(s.workers),
            s.router,
            s.label,
            _cell(s.max_over_mean, base.max_over_mean, f"{s.max_over_mean:.2f}"),
            _cell(s.idle_share, base.idle_share, f"{s.idle_share:.1%}"),
            _cell(s.run.rps, base.run.rps, number(s.run.rps)),
            f"{s.run.hit_rate:.1%}",
            str(s.run.failures),
        )
    return grid


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2,4,8", help="pool sizes, comma-separated")
    parser.add_argument("--per-worker", type=int, default=4, help="attempts in flight per worker")
    parser.add_argument(
        "--rounds", type=int, default=10, help="attempts per slot in flight: attempts in all"
    )
    parser.add_argument(
        "--context-bytes", type=int, default=1200, help="attempt text in each user message"
    )
    parser.add_argument(
        "--prefill-ms-per-token", type=float, default=0.2, help="prefill per uncached token"
    )
    parser.add_argument("--latency", type=float, default=0.02, help="decode seconds per answer")
    parser.add_argument("--seed", type=int, default=0)
    add_json_option(parser, "inflight_spread")
    parser.add_argument("--keep", action="store_true", help="keep the logs")
    return parser.parse_args()


def _worker_options(args: argparse.Namespace) -> list[str]:
    return [
        "--two-step",
        "--prefix-cache",
        "--prefill-ms-per-token", str(args.prefill_ms_per_token),
        "--latency", str(args.latency),
    ]  # fmt: skip


def play_pool(fleet: Fleet, size: int, args: argparse.Namespace, console: Console) -> list[Spread]:
    """Every configuration on a fresh pool of `size` mock workers."""
    console.print(f"starting {size} simulated-cache mock workers ...")
    names = [f"w{size}-{i}" for i in range(size)]
    pool = Pool(names, start_mock_workers(fleet, names, _worker_options(args)))
    workload = Workload(args.rounds * args.per_worker * size, 1, args.context_bytes, args.seed)
    spreads = []
    for router in ROUTERS:
        proc, url = start_router(fleet, router, pool.urls)
        spreads.append(play(router, url, pool, workload, args.per_worker))
        fleet.stop_one(proc)
        s = spreads[-1]
        console.print(
            f"  {size} workers  {router.name:<13} {router.label:<26} max/mean "
            f"{s.max_over_mean:4.2f}  idle {s.idle_share:6.1%}  {s.run.rps:6.1f} req/s"
            f"  failures {s.run.failures}",
            highlight=False,
        )
    return spreads


def main() -> None:
    args = _parse_args()
    console = wide_console(130)
    sizes = [int(n) for n in args.workers.split(",") if n]
    about = machine()

    def body(fleet: Fleet, work: Path) -> None:
        spreads = []
        for size in sizes:
            with Fleet(work) as size_fleet:  # this pool's workers stop before the next starts
                spreads += play_pool(size_fleet, size, args, console)
        console.print(table(spreads, args))
        console.print(describe(about), highlight=False, soft_wrap=True)
        write_results(args, {"results": [asdict(s) for s in spreads]}, about)

    run_with_fleet("inflight", args.keep, body)


if __name__ == "__main__":
    main()
