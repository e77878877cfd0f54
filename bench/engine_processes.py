"""Benchmark `agent-eval run` with one engine process against several, local or on Ray.

Two mock workers play the two-step calculator trajectory at zero latency, so the harness
is the bottleneck; the same GSM8K run is made with each engine (`eval.engine`: local
processes, or Ray actors on a local Ray cluster the run starts) and process count, and the
attempt rates print side by side, as ratios to the first. Run from the repository root:
`python -m bench.engine_processes [--attempts N] [--processes 1 2 4] [--engines local ray]
[--concurrency C] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.parts.fleet import GSM8K_TEST, Fleet, run_command, run_with_fleet, worker_urls
from bench.parts.results_file import add_json_option, machine, write_results

RUN_TIMEOUT = 1800.0


def run_once(
    urls: list[str], engine: str, processes: int, args: argparse.Namespace, run_dir: Path
) -> dict[str, float]:
    """One whole `agent-eval run`; its attempt rate (engine wall time) and the command's time."""
    endpoints = [arg for url in urls for arg in ("--endpoint", url)]
    argv = [sys.executable, "-m", "agent_eval", "run", "--agent", "math_calculator"]
    argv += ["--dataset", str(args.gsm8k), "--limit", str(args.attempts), *endpoints]
    argv += ["-j", str(args.concurrency), "--processes", str(processes), "-o", str(run_dir)]
    argv += [f"eval.engine={engine}"]
    what = f"the run with {processes} {engine} engine process(es)"
    started = time.monotonic()
    run_command(argv, what, RUN_TIMEOUT)
    summary = json.loads((run_dir / "summary.json").read_text())
    throughput = summary["efficiency"]["throughput"]
    return {
        "attempts": summary["attempts"],
        "rate": throughput["attempts_per_s"],
        "engine_s": throughput["wall_time_s"],
        "command_s": time.monotonic() - started,
    }


def report(results: dict[tuple[str, int], dict[str, float]], args: argparse.Namespace) -> None:
    base = next(iter(results.values()))["rate"]
    title = f"math_calculator on GSM8K, {args.attempts} attempts, -j {args.concurrency}"
    table = Table(title=title)
    columns = ("engine", "processes", "attempts", "attempts/s", "engine wall s", "command s")
    for name in (*columns, "vs first"):
        table.add_column(name, justify="right")
    for (engine, processes), figures in results.items():
        table.add_row(
            engine,
            str(processes),
            f"{figures['attempts']:.0f}",
            f"{figures['rate']:.1f}",
            f"{figures['engine_s']:.1f}",
            f"{figures['command_s']:.1f}",
            f"{figures['rate'] / base:.2f}x",
        )
    Console(width=100).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--engines", nargs="+", choices=["local", "ray"], default=["local"])
    parser.add_argument("--concurrency", type=int, default=64, help="in flight per process")
    parser.add_argument("--gsm8k", type=Path, default=GSM8K_TEST, help="GSM8K test set (.jsonl)")
    parser.add_argument("--keep", action="store_true", help="keep the run directories and logs")
    add_json_option(parser, "engine_processes")
    args = parser.parse_args()
    about = machine()
    if not args.gsm8k.is_file():
        sys.exit(f"error: no GSM8K test set at {args.gsm8k}; pass --gsm8k PATH")

    def body(fleet: Fleet, work: Path) -> None:
        argv = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--two-step"]
        workers = [fleet.start(name, [*argv, "--name", name]) for name in ("w0", "w1")]
        urls = worker_urls(workers)
        results = {}
        for engine in args.engines:
            for processes in args.processes:
                print(f"running {args.attempts} attempts, {processes} {engine} engine(s) ...")
                run_dir = work / f"{engine}-p{processes}"
                results[engine, processes] = run_once(urls, engine, processes, args, run_dir)
        report(results, args)
        runs = [
            {"engine": engine, "processes": processes, **figures}
            for (engine, processes), figures in results.items()
        ]
        write_results(args, {"runs": runs}, about)

    run_with_fleet("engine-processes", args.keep, body)


if __name__ == "__main__":
    main()
