"""Measure the trajectories per second the harness sustains, to show it never limits a GPU cluster.

Two mock workers and the agent-eval proxy run as processes. The workers answer at zero latency
and play a two-step tool trajectory: a request that offers tools gets an `add` call, and once the
tool result is back, the final answer. This process runs the Engine with math_calculator over the
GSM8K test set (cycled), then with multi_turn_chat over sessions_mini (repeated), and reads the
CPU time of every process. `--profile` runs each phase under cProfile and prints its top costs.
Run from the repository root:
`python -m bench.engine_throughput [--attempts N] [--profile] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import pstats
import signal
import sys
import time
from collections.abc import Iterator
from cProfile import Profile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

from agent_eval.agents import load_runner
from agent_eval.data import DataError, Item, load_dataset
from agent_eval.results.files import RunDirectory
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig
from agent_eval.run.engine import Engine, Progress
from agent_eval.run.parts import engine_config
from agent_eval.system.lifecycle import run_until_signalled
from bench.parts.fleet import (
    GSM8K_TEST,
    BenchError,
    Fleet,
    Proc,
    exit_on_sigterm,
    run_with_fleet,
    start_agent_eval,
    worker_urls,
)
from bench.parts.profile import print_profile, shares
from bench.parts.results_file import add_json_option, machine, write_results

MODEL = "mock-model"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of CPU times in /proc/<pid>/stat


# --- processes and their CPU time -----------------------------------------------------------


@dataclass
class Cluster:
    """The started processes the benchmark reads CPU time from."""

    base_url: str
    proxy: Proc
    workers: list[Proc]


def start_cluster(fleet: Fleet) -> Cluster:
    """Two scripted mock workers and the proxy in front of them."""
    argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--two-step", "--model", MODEL]
    workers = [fleet.start(n, [*argv, "--name", n]) for n in ("w0", "w1")]
    proxy, proxy_url = start_agent_eval(fleet, worker_urls(workers), "least_requests")
    return Cluster(proxy_url + "/v1", proxy, workers)


def pid_cpu(pid: int) -> float:
    """User plus system CPU seconds of a process; 0 once it is gone (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


@dataclass(frozen=True)
class Reading:
    """Wall clock and CPU seconds of every process at one instant."""

    wall: float
    harness: float
    proxy: float
    workers: float
    scorer: float

    def __sub__(self, other: Reading) -> Reading:
        pairs = zip(dataclasses.astuple(self), dataclasses.astuple(other), strict=True)
        return Reading(*(a - b for a, b in pairs))


def read_clocks(cluster: Cluster, scorer: RewardScorer) -> Reading:
    """Read the clocks now; the harness is this process, all threads."""
    return Reading(
        wall=time.monotonic(),
        harness=time.process_time(),
        proxy=cluster.proxy.cpu_seconds(),
        workers=sum(w.cpu_seconds() for w in cluster.workers),
        scorer=sum(pid_cpu(pid) for pid in scorer.worker_pids()),
    )


class Marks:
    """Reads the clocks, and runs the profiler if any, between two counts of finished attempts.

    Both marks fall while the engine is full (`concurrency` attempts in flight), so the work done
    between them is that of as many attempts as finished between them.
    """

    def __init__(
        self, marks: range, cluster: Cluster, scorer: RewardScorer, profiler: Profile | None
    ) -> None:
        self.marks, self.cluster, self.scorer, self.profiler = marks, cluster, scorer, profiler
        self.start: Reading | None = None
        self.end: Reading | None = None

    def __call__(self, progress: Progress) -> None:
        if progress.done == self.marks.start:
            self.start = read_clocks(self.cluster, self.scorer)
            if self.profiler is not None:
                self.profiler.enable()
        elif progress.done == self.marks.stop:
            if self.profiler is not None:
                self.profiler.disable()
            self.end = read_clocks(self.cluster, self.scorer)

    def span(self) -> Reading:
        """Clocks between the marks. Raises: BenchError when a mark was never reached."""
        if self.start is None or self.end is None:
            raise BenchError("the run ended before both clock marks were read")
        return self.end - self.start


# --- one measured phase ---------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """What one runner did between the marks: counts and clocks."""

    runner: str
    trajectories: int
    model_calls: int
    tool_calls: int
    errors: int
    span: Reading
    profile: pstats.Stats | None


def repeated(dataset: str, n: int) -> Iterator[Item]:
    """`n` items, the dataset over and over; each pass renames its ids so every id is unique."""
    made, rounds = 0, 0
    while made < n:
        first = made
        for item in load_dataset(dataset, limit=n - made):
            yield dataclasses.replace(item, id=f"{item.id}~{rounds}") if rounds else item
            made += 1
        if made == first:
            raise BenchError(f"dataset {dataset} has no items")
        rounds += 1


def count_calls(run_dir: RunDirectory, marks: range) -> tuple[int, int, int]:
    """Model calls, tool calls and errors of the attempts that finished between the marks."""
    model_calls = tool_calls = errors = 0
    for index, record in enumerate(run_dir.records()):
        if index in marks:
            model_calls += len(record.trajectory["model_calls"])
            tool_calls += len(record.trajectory["tool_calls"])
            errors += record.error is not None
    return model_calls, tool_calls, errors


def measured(n: int, args: argparse.Namespace) -> range:
    """Attempts counted: after the warm-up, and before the engine starts to drain."""
    marks = range(args.warmup, n - args.concurrency)
    if len(marks) < args.concurrency:
        least = args.warmup + 2 * args.concurrency
        raise BenchError(f"too few attempts for the warm-up and concurrency: give {least} or more")
    return marks


async def run_phase(
    runner: str, dataset: str, n: int, args: argparse.Namespace, cluster: Cluster, work: Path
) -> Phase:
    """Run `n` attempts of `runner`; clocks and profiler run over the measured attempts only."""
    marks = measured(n, args)
    client = AsyncOpenAI(base_url=cluster.base_url, api_key="bench", max_retries=0)
    settings = {"eval": {"concurrency": args.concurrency}, "sampling": {"max_tokens": 64}}
    config = engine_config(RunConfig.model_validate(settings), MODEL)
    options = {"tools": True} if runner == "multi_turn_chat" else {}
    run_dir = RunDirectory(work / runner)
    profiler = Profile() if args.profile else None
    print(f"{runner}: {n:,} attempts of {dataset}, measured from #{marks.start} to #{marks.stop}")
    try:
        async with RewardScorer(max_workers=args.scorers) as scorer:
            clocks = Marks(marks, cluster, scorer, profiler)
            engine = Engine(load_runner(runner, **options), scorer, client, config, clocks)
            await engine.run(repeated(dataset, n), run_dir, total=n)
    finally:
        await client.close()
    counts = count_calls(run_dir, marks)
    stats = pstats.Stats(profiler) if profiler else None
    return Phase(runner, len(marks), *counts, clocks.span(), stats)


# --- the report -----------------------------------------------------------------------------


# Each figure's row label, and how its cell shows it.
CELLS = {
    "trajectories measured": "{:,}",
    "wall time, s": "{:.1f}",
    "trajectories/s (wall)": "{:,.1f}",
    "model calls/s (wall)": "{:,.1f}",
    "model calls per trajectory": "{:.2f}",
    "tool calls per trajectory": "{:.2f}",
    "harness CPU, ms/trajectory": "{:.2f}",
    "harness busy, % of one core": "{:.0f}",
    "trajectories per harness CPU-s": "{:,.1f}",
    "proxy CPU, ms/trajectory": "{:.2f}",
    "mock workers CPU, ms/trajectory": "{:.2f}",
    "scorer pool CPU, ms/trajectory": "{:.2f}",
    "errors": "{:,}",
}


def figures(phase: Phase) -> dict[str, float]:
    """The figures of one phase, by row label."""
    span, n = phase.span, phase.trajectories

    def ms(cpu: float) -> float:
        return 1000 * cpu / n

    values = (
        n,
        span.wall,
        n / span.wall,
        phase.model_calls / span.wall,
        phase.model_calls / n,
        phase.tool_calls / n,
        ms(span.harness),
        100 * span.harness / span.wall,
        n / span.harness,
        ms(span.proxy),
        ms(span.workers),
        ms(span.scorer),
        phase.errors,
    )
    return dict(zip(CELLS, values, strict=True))


def stored(phase: Phase) -> dict[str, Any]:
    """A phase's figures for the results file; with a profile, the share of each part."""
    profile = {"profile shares": shares(phase.profile)} if phase.profile is not None else {}
    return {"runner": phase.runner, **figures(phase), **profile}


def rows(phase: Phase) -> dict[str, str]:
    """The figures of one phase, as table cells by row label."""
    return {label: CELLS[label].format(value) for label, value in figures(phase).items()}


def print_table(phases: list[Phase]) -> None:
    """One column per phase, one row per figure."""
    cells = [rows(p) for p in phases]
    print(f"\n{'':<32}" + "".join(f"{p.runner:>17}" for p in phases))
    for label in cells[0]:
        print(f"{label:<32}" + "".join(f"{c[label]:>17}" for c in cells))


def print_reading(phases: list[Phase], cluster_calls: float) -> None:
    """What one core sustains, and how many engine processes a cluster of that rate needs."""
    print()
    for phase in phases:
        span, n = phase.span, phase.trajectories
        per_core = n / span.harness
        calls = phase.model_calls / n
        needed = cluster_calls / calls
        proxy_calls = phase.model_calls / max(span.proxy, 1 / _CLOCK_TICKS)
        print(
            f"{phase.runner}: one harness core sustains {per_core:,.0f} trajectories/s "
            f"({per_core * calls:,.0f} model calls/s at {calls:.1f} calls per trajectory); "
            f"a cluster answering {cluster_calls:,.0f} model calls/s produces {needed:,.0f} "
            f"trajectories/s and would need {math.ceil(needed / per_core)} engine process(es), "
            f"and {math.ceil(cluster_calls / proxy_calls)} proxy core(s) at "
            f"{proxy_calls:,.0f} routed calls per proxy CPU-s."
        )
    print(
        "`run --processes P` plays them on P engine processes, each taking the samples whose "
        "stable hash of sample_id mod P is its index; the first process alone writes "
        "samples.jsonl (bench/engine_processes.py measures it). Scoring runs in its own pool."
    )


# --- main -----------------------------------------------------------------------------------


async def run_all(args: argparse.Namespace, cluster: Cluster, work: Path) -> list[Phase]:
    phases = [
        await run_phase("math_calculator", args.gsm8k, args.attempts, args, cluster, work),
        await run_phase("multi_turn_chat", "sessions_mini", args.sessions, args, cluster, work),
    ]
    print_table(phases)
    for phase in phases:
        if phase.profile is not None:
            print_profile(phase.runner, phase.profile)
    if args.profile:
        print("\n(figures taken under cProfile: CPU costs are inflated, compare runs without it)")
    print_reading(phases, args.cluster_calls)
    return phases


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=600, help="math_calculator attempts")
    parser.add_argument("--sessions", type=int, default=300, help="multi_turn_chat sessions")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=128, help="attempts before the clocks start")
    parser.add_argument("--scorers", type=int, default=1, help="scorer pool processes")
    parser.add_argument(
        "--gsm8k", default=str(GSM8K_TEST), help="GSM8K test set: a .jsonl path or dataset name"
    )
    parser.add_argument(
        "--cluster-calls",
        type=float,
        default=2000.0,
        help="model calls/s of the GPU cluster to size the harness for",
    )
    parser.add_argument("--profile", action="store_true", help="run each phase under cProfile")
    parser.add_argument("--keep", action="store_true", help="keep the run directories and logs")
    add_json_option(parser, "engine_throughput")
    return parser.parse_args()


def run_to_the_end(args: argparse.Namespace, cluster: Cluster, work: Path) -> list[Phase] | None:
    """Run both phases; None when SIGINT or SIGTERM cancelled them (their cleanup has run)."""
    finished: list[list[Phase]] = []

    async def both() -> None:
        finished.append(await run_all(args, cluster, work))

    run_until_signalled(both())
    signal.signal(signal.SIGTERM, exit_on_sigterm)  # the event loop took its own handler along
    return finished[0] if finished else None


def main() -> None:
    args = _parse_args()
    about = machine()

    def measure(fleet: Fleet, work: Path) -> None:
        print("starting 2 scripted mock workers and the agent-eval proxy ...")
        cluster = start_cluster(fleet)
        phases = run_to_the_end(args, cluster, work)
        if phases is None:
            raise KeyboardInterrupt
        write_results(args, {"phases": [stored(phase) for phase in phases]}, about)

    try:
        run_with_fleet("engine-throughput", args.keep, measure)
    except DataError as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
