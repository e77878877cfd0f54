"""Measure how many stored attempts per second `agent-eval rescore` scores again.

Builds a run of N attempts (GSM8K test questions, two attempts each, synthetic answers, a fifth
of them wrong) in a temporary folder, rescores it with the math reward on two scoring processes,
and prints attempts per second end to end and after the processes' start-up, timed on its own.
Run from the repository root:
`python -m bench.rescore [--attempts N] [--gsm8k PATH] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import zlib
from pathlib import Path

from agent_eval.agents import Trajectory
from agent_eval.data import Item, Sample
from agent_eval.metrics import summarize
from agent_eval.rescore import rescore
from agent_eval.results.files import SAMPLES, SUMMARY, RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.rewards import RewardScorer, gsm8k_gold
from agent_eval.run.config import RunConfig, save_run_config
from agent_eval.run.parts import dataset_items
from bench.parts.fleet import GSM8K_TEST
from bench.parts.results_file import add_json_option, machine, write_results

ATTEMPTS_PER_SAMPLE = 2
WORKERS = 2  # this machine's cores


def build_run(path: Path, gsm8k: Path, attempts: int) -> None:
    """A finished run of `attempts` records with answers no model gave, and its config."""
    samples = attempts // ATTEMPTS_PER_SAMPLE
    config = RunConfig.model_validate(
        {
            "dataset": {"name": "gsm8k", "path": str(gsm8k), "limit": samples},
            "eval": {"n_samples": ATTEMPTS_PER_SAMPLE},
            "reward": {"workers": WORKERS},
            "output": {"dir": str(path)},
        }
    )
    save_run_config(config, path)
    records = [
        _record(item, attempt)
        for item in dataset_items(config)
        for attempt in range(ATTEMPTS_PER_SAMPLE)
    ]
    (path / SAMPLES).write_bytes(b"".join(record.to_line() for record in records))
    summary = summarize((record.score() for record in records), 100.0, (1, 2))
    RunDirectory(path).write_json(SUMMARY, summary.to_dict())


def _record(item: Item, attempt: int) -> AttemptRecord:
    assert isinstance(item, Sample) and item.question is not None and item.answer is not None
    gold = gsm8k_gold(item.answer)
    wrong = zlib.crc32(f"{item.id}-{attempt}".encode()) % 5 == 0  # a fifth, the same each run
    given = f"{gold}1" if wrong else gold
    output = f"Adding the amounts step by step gives {given}.\nThe answer is \\boxed{{{given}}}"
    trajectory = Trajectory(
        final_output=output,
        messages=[
            {"role": "user", "content": item.question},
            {"role": "assistant", "content": output},
        ],
    )
    return AttemptRecord(
        sample_id=item.id,
        attempt=attempt,
        seed=attempt,
        session_id=f"{item.id}-{attempt}",
        reward=float(not wrong),
        correct=not wrong,
        answer=given,
        turn_rewards=None,
        turn_answers=None,
        challenge_turns=None,
        latency_s=1.0,
        prompt_tokens=200,
        completion_tokens=100,
        model_calls=1,
        tool_calls=0,
        tool_errors=0,
        error=None,
        trajectory=trajectory.to_dict(),
    )


async def start_up_seconds() -> float:
    """How long the scoring processes take to start, as rescore starts them."""
    started = time.monotonic()
    async with RewardScorer(max_workers=WORKERS):
        return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--gsm8k", type=Path, default=GSM8K_TEST)
    add_json_option(parser, "rescore")
    args = parser.parse_args()
    about = machine()
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        build_run(run, args.gsm8k, args.attempts)
        start_up = asyncio.run(start_up_seconds())
        started = time.monotonic()
        rescored = rescore(run)
        seconds = time.monotonic() - started
    attempts = rescored.new.summary.attempts
    print(f"{attempts} attempts rescored in {seconds:.1f} s: {attempts / seconds:.0f} attempts/s")
    scoring = seconds - start_up
    print(f"starting {WORKERS} scoring processes: {start_up:.1f} s")
    print(f"after start-up: {attempts / scoring:.0f} attempts/s")
    figures = {
        "attempts": attempts,
        "scoring_processes": WORKERS,
        "seconds": seconds,
        "attempts_per_s": attempts / seconds,
        "start_up_s": start_up,
        "attempts_per_s_after_start_up": attempts / scoring,
    }
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
