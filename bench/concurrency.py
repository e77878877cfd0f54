"""Benchmark adaptive concurrency against fixed concurrencies on a fleet of fixed capacity.

Four mock workers, each serving at most 2 generation requests at once (0.4 s each; the others
wait in turn, up to 2, past which it answers 429), play the two-step calculator trajectory
(two model calls an attempt) on the 24 shipped word problems, 6 attempts each: some 15 s of
work at the best concurrency, so the adaptive run's start (about 2 s below the fleet's
capacity) weighs more here than over a real run's minutes. The same run is
made with fixed concurrencies (a sweep, the last too high for the fleet) and with
`eval.concurrency_mode=adaptive` under the too-high ceiling; the engine's wall time, the 429s
the workers answered (each one a request sent again, by the proxy, the openai client or a
replay) and the attempts replayed print side by side, as ratios to the best fixed concurrency
and to the too-high one. The workers' time is sleeps, so the machine's load moves the figures
little. Run from the repository root: `python -m bench.concurrency [--sweep 8 12 16 64]
[--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.parts.fleet import Fleet, run_command, run_with_fleet, start_mock_worker_group
from bench.parts.results_file import add_json_option, describe, machine, write_results

RUN_TIMEOUT = 600.0
WORKERS, CAPACITY, QUEUE, SERVICE_S = 4, 2, 2, 0.4
PROBLEMS, N_SAMPLES = 24, 6
WORKER_FLAGS = ["--two-step", "--latency", str(SERVICE_S)]
WORKER_FLAGS += ["--capacity", str(CAPACITY), "--queue-limit", str(QUEUE)]


def worker_counts(urls: list[str]) -> dict[str, int]:
    """Generation requests and 429s the workers answered so far, summed."""
    totals = {"requests": 0, "rejected": 0}
    for url in urls:
        with urllib.request.urlopen(f"{url}/mock/stats", timeout=10) as response:
            stats = json.load(response)
        totals["requests"] += stats["generation_requests"]
        totals["rejected"] += stats["rejected"]
    return totals


def run_once(urls: list[str], mode: str, concurrency: int, run_dir: Path) -> dict[str, Any]:
    """One whole `agent-eval run` and what it cost the fleet."""
    endpoints = [arg for url in urls for arg in ("--endpoint", url)]
    argv = [sys.executable, "-m", "agent_eval", "run", "--agent", "math_calculator"]
    argv += ["--dataset", "word_problems", "-n", str(N_SAMPLES), *endpoints, "-o", str(run_dir)]
    argv += ["-j", str(concurrency), f"eval.concurrency_mode={mode}", "eval.max_unscored=1"]
    before, started = worker_counts(urls), time.monotonic()
    run_command(argv, f"the {mode} run at {concurrency}", RUN_TIMEOUT)
    after = worker_counts(urls)
    summary = json.loads((run_dir / "summary.json").read_text())
    records = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    return {
        "mode": mode,
        "concurrency": concurrency,
        "attempts": summary["attempts"],
        "unscored": summary["unscored"],
        "engine_s": summary["efficiency"]["throughput"]["wall_time_s"],
        "command_s": time.monotonic() - started,
        "requests": after["requests"] - before["requests"],
        "rejected": after["rejected"] - before["rejected"],
        "replays": sum(len(record["trajectory"]["replays"]) for record in records),
        **limits(run_dir),
    }


def limits(run_dir: Path) -> dict[str, Any]:
    """The adaptive run's limits: how often it moved and where it went."""
    trace = run_dir / "concurrency.jsonl"
    if not trace.is_file():
        return {}
    moves = [json.loads(line) for line in trace.read_text().splitlines()]
    seen = [move["limit"] for move in moves]
    return {"limit_changes": len(moves) - 1, "limit_max": max(seen), "limit_last": seen[-1]}


def ratios(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Adaptive against the fastest fixed run and against the too-high (last) one."""
    fixed = [run for run in runs if run["mode"] == "fixed"]
    adaptive = next(run for run in runs if run["mode"] == "adaptive")
    best, high = min(fixed, key=lambda run: run["engine_s"]), fixed[-1]
    return {
        "best_fixed": best["concurrency"],
        "too_high": high["concurrency"],
        "speed_vs_best_fixed": best["engine_s"] / adaptive["engine_s"],
        "speed_vs_too_high": high["engine_s"] / adaptive["engine_s"],
        "rejected_vs_too_high": _share(adaptive["rejected"], high["rejected"]),
        "replays_vs_too_high": _share(adaptive["replays"], high["replays"]),
    }


def _share(ours: int, theirs: int) -> float | None:
    return ours / theirs if theirs else None


def report(runs: list[dict[str, Any]], summary: dict[str, Any], about: dict[str, Any]) -> None:
    fleet = f"{WORKERS} workers x {CAPACITY} at once ({SERVICE_S} s), queue {QUEUE}"
    table = Table(title=f"{PROBLEMS * N_SAMPLES} two-call attempts on {fleet}")
    columns = ("mode", "-j", "engine s", "429s", "requests", "replays", "unscored", "limits")
    for name in columns:
        table.add_column(name, justify="right")
    for run in runs:
        moved = (
            "" if "limit_max" not in run else f"max {run['limit_max']}, last {run['limit_last']}"
        )
        table.add_row(
            run["mode"], str(run["concurrency"]), f"{run['engine_s']:.1f}", str(run["rejected"]),
            str(run["requests"]), str(run["replays"]), str(run["unscored"]), moved,
        )  # fmt: skip
    console = Console(width=110)
    console.print(table)
    adaptive = next(run for run in runs if run["mode"] == "adaptive")
    high = next(
        run for run in runs if run["mode"] == "fixed" and run["concurrency"] == summary["too_high"]
    )
    console.print(
        f"adaptive: {summary['speed_vs_best_fixed']:.2f}x the speed of the best fixed "
        f"(-j {summary['best_fixed']}), {summary['speed_vs_too_high']:.2f}x that of the too-high "
        f"(-j {summary['too_high']}); 429s {adaptive['rejected']:,} against {high['rejected']:,}, "
        f"requests {adaptive['requests']:,} against {high['requests']:,}, replays "
        f"{adaptive['replays']:,} against {high['replays']:,}"
    )
    console.print(describe(about))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sweep", type=int, nargs="+", default=[8, 12, 16, 64],
        help="fixed concurrencies, the last the too-high one and the adaptive run's ceiling",
    )  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep the run directories and logs")
    add_json_option(parser, "concurrency")
    args = parser.parse_args()
    about = machine()

    def body(fleet: Fleet, work: Path) -> None:
        _, urls = start_mock_worker_group(fleet, "w", WORKERS, WORKER_FLAGS)
        plays = [("fixed", j) for j in args.sweep] + [("adaptive", args.sweep[-1])]
        runs = []
        for mode, concurrency in plays:
            print(f"running {mode} at -j {concurrency} ...")
            runs.append(run_once(urls, mode, concurrency, work / f"{mode}-{concurrency}"))
        summary = ratios(runs)
        report(runs, summary, about)
        fleet_shape = {"workers": WORKERS, "capacity": CAPACITY, "queue": QUEUE}
        write_results(args, {"fleet": fleet_shape, "runs": runs, **summary}, about)

    run_with_fleet("concurrency", args.keep, body)


if __name__ == "__main__":
    main()
