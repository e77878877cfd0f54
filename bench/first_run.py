"""Time README's first run, `agent-eval run --agent math_calculator`, against its budget.

Runs the command as a user types it (workers started from cold, evaluated, torn down) into a
temporary folder, then prints its wall time next to the 3-minute budget and its headline
figures next to the 0.2-0.8 accuracy band that makes every metric carry information.
Run from the repository root: `python -m bench.first_run [--runs N] [--json [PATH]]` (seeds 0..N-1).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.parts.results_file import add_json_option, describe, machine, write_results

BUDGET_S = 180.0
BAND = (0.2, 0.8)


def first_run(seed: int, folder: Path) -> dict[str, float]:
    """One run of the command; its wall time, when its workers answered, and its figures."""
    run_dir = folder / f"run-{seed}"
    command = [sys.executable, "-m", "agent_eval", "run", "--agent", "math_calculator"]
    started = time.time()
    subprocess.run(
        [*command, "--seed", str(seed), "-o", str(run_dir)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.time() - started
    summary = json.loads((run_dir / "summary.json").read_text())
    quality, stability = summary["quality"], summary["stability"]
    k = max(int(key) for key in quality["pass_at_k"])
    return {
        "wall": wall,
        # The run saves its config, with the served model's name, once workers answer.
        "workers_ready": (run_dir / "config.yaml").stat().st_mtime - started,
        "attempts": summary["attempts"],
        "accuracy": quality["accuracy"]["value"],
        "pass@1": quality["pass_at_k"]["1"],
        f"pass@{k}": quality["pass_at_k"][str(k)],
        f"maj@{k}": quality["maj_at_k"][str(k)],
        f"pass^{k}": stability["pass_hat_k"][str(k)],
        "consistency": stability["consistency"],
    }


def report(results: list[dict[str, float]], about: dict[str, Any]) -> None:
    print(f"{time.strftime('%Y-%m-%d')}, {describe(about)}")
    print(f"{'seed':>4} {'wall s':>7} {'/ budget':>8} {'workers s':>9} {'attempts':>8}", end="")
    figures = [k for k in results[0] if k not in ("wall", "workers_ready", "attempts")]
    print("".join(f" {name:>11}" for name in figures))
    for seed, r in enumerate(results):
        row = f"{seed:>4} {r['wall']:>7.1f} {r['wall'] / BUDGET_S:>8.2f} "
        row += f"{r['workers_ready']:>9.1f} {int(r['attempts']):>8}"
        print(row + "".join(f" {r[name]:>11.3f}" for name in figures))
    worst = max(r["wall"] for r in results)
    inside = all(BAND[0] <= r["accuracy"] <= BAND[1] for r in results)
    print(
        f"slowest {worst:.1f} s = {worst / BUDGET_S:.2f}x the {BUDGET_S:.0f} s budget; "
        f"accuracy {'inside' if inside else 'OUTSIDE'} {BAND[0]}-{BAND[1]} in every run"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1, help="Runs, with seeds 0..N-1.")
    add_json_option(parser, "first_run")
    args = parser.parse_args()
    about = machine()
    with tempfile.TemporaryDirectory() as folder:
        results = [first_run(seed, Path(folder)) for seed in range(args.runs)]
    report(results, about)
    runs = [{"seed": seed, **result} for seed, result in enumerate(results)]
    write_results(args, {"budget_s": BUDGET_S, "band": BAND, "runs": runs}, about)


if __name__ == "__main__":
    main()
