"""Deterministic runs whose results are pinned: what a change to the code does to them.

Each scenario plays on one mock worker, one attempt at a time (so lines come in one order).
tests/test_results_golden.py compares today's results with tests/golden/results.json.gz,
timings, ports and the mock's random ids masked. `python -m tests.helpers.golden_runs OUT
[--agent-eval CMD]` plays them into OUT/<scenario>/ (with another version's command, say);
`--compare A B` says which fields differ; `--update` writes the pinned file from today's code.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

MATH = ("--agent", "math_calculator", "--dataset", "gsm8k_mini", "--limit", "8", "-n", "2")
SESSIONS = ("--agent", "multi_turn_chat", "--dataset", "sessions_mini", "-n", "2")
SCENARIOS: dict[str, tuple[str, ...]] = {
    "math_calculator": MATH,
    "multi_turn_chat": SESSIONS,
    "perturbed": (*MATH, "--perturb", "numbers,names"),
    "resumed": MATH,
}
PINNED = Path(__file__).parents[1] / "golden" / "results.json.gz"
"""The scenarios' results as the code gave them when last pinned (masked)."""
RESUMED_KEPT = 5
"""The resumed scenario's run is cut back to this many attempts, then resumed."""

TIMINGS = {
    "latency_s", "ttft_s", "wall_time_s", "attempts_per_s", "completion_tokens_per_s",
    "prompt_tokens_per_s", "worker", "set_aside_at", "call_id",
}  # fmt: skip
"""Keys whose values vary from one play to the next: times, the worker's URL (its port), the
model's random tool-call ids."""
NEW = {"schema_version"}
"""summary.json's keys the new version adds."""


@contextmanager
def mock_worker() -> Iterator[str]:
    """One mock worker answering with a calculator call first; its URL."""
    command = [sys.executable, "-m", "agent_eval.testing.mock_worker", "--two-step"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().split()[1]
    finally:
        process.terminate()
        process.wait()


def play(out: Path, agent_eval: list[str]) -> None:
    """Every scenario played into `out`, by the command `agent_eval`."""
    out.mkdir(parents=True, exist_ok=True)
    with mock_worker() as url:
        for name, args in SCENARIOS.items():
            run_dir = out / name
            shutil.rmtree(run_dir, ignore_errors=True)
            common = [*agent_eval, "run", *args, "--endpoint", url, "-j", "1", "--seed", "7"]
            _agent_eval([*common, "-o", str(run_dir)], out)
            if name == "resumed":
                _cut(run_dir)
                _agent_eval([*agent_eval, "run", "--resume", str(run_dir)], out)


def _agent_eval(command: list[str], cwd: Path) -> None:
    """Run one command from `cwd`: not from a checkout, whose package `-m` would import first."""
    subprocess.run(command, check=True, capture_output=True, cwd=cwd)


def _cut(run_dir: Path) -> None:
    """The run as if stopped after its first attempts: no summary yet."""
    (run_dir / "summary.json").unlink()
    samples = run_dir / "samples.jsonl"
    kept = samples.read_bytes().splitlines(keepends=True)[:RESUMED_KEPT]
    samples.write_bytes(b"".join(kept))


def masked(value: Any) -> Any:
    """`value` with every timing replaced by a mark, and the new keys left out."""
    if isinstance(value, dict):
        return {
            key: "<varies>" if key in TIMINGS else masked(item)
            for key, item in value.items()
            if key not in NEW
        }
    if isinstance(value, list):
        return [masked(item) for item in value]
    return value


def results(run_dir: Path) -> dict[str, Any]:
    """A run's samples.jsonl lines and summary.json, masked."""
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"samples": [masked(json.loads(line)) for line in lines], "summary": masked(summary)}


def differences(before: Any, after: Any, where: str = "") -> list[str]:
    """Where two masked results differ, one line each."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(set(before) | set(after))
        return [
            line
            for key in keys
            for line in differences(before.get(key, "<absent>"), after.get(key, "<absent>"),
                                    f"{where}.{key}")
        ]  # fmt: skip
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [
            line
            for index, (old, new) in enumerate(zip(before, after, strict=True))
            for line in differences(old, new, f"{where}[{index}]")
        ]
    return [] if before == after else [f"{where}: {before!r} -> {after!r}"]


def compare(before: Path, after: Path) -> list[str]:
    """Every scenario's differences between two played folders."""
    return pinned_differences({name: results(before / name) for name in SCENARIOS}, after)


def pinned_differences(pinned: dict[str, Any], played: Path) -> list[str]:
    """Every scenario's differences between pinned results and a played folder."""
    return [
        f"{name}{line}"
        for name in SCENARIOS
        for line in differences(pinned[name], results(played / name))
    ]


def read_pinned() -> dict[str, Any]:
    """The pinned results, by scenario."""
    return json.loads(gzip.decompress(PINNED.read_bytes()))


def write_pinned(played: Path) -> None:
    """Pin the results of a played folder."""
    data = {name: results(played / name) for name in SCENARIOS}
    PINNED.write_bytes(gzip.compress(json.dumps(data, indent=1, sort_keys=True).encode(), mtime=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--agent-eval", default=f"{sys.executable} -m agent_eval")
    parser.add_argument("--compare", type=Path, help="compare OUT with this played folder")
    parser.add_argument("--update", action="store_true", help="play OUT, then pin its results")
    args = parser.parse_args()
    if args.update:
        play(args.out, shlex.split(args.agent_eval))
        write_pinned(args.out)
        return
    if args.compare is not None:
        found = compare(args.out, args.compare)
        print("\n".join(found) or "same results, field by field")
        raise SystemExit(1 if found else 0)
    play(args.out, shlex.split(args.agent_eval))


if __name__ == "__main__":
    main()
