"""What checking continuity costs when a run's records are read: one long agent attempt with
its tokens recorded, its samples.jsonl line parsed, scored (continuity included) and checked.

The attempt makes --calls model calls of one conversation: a --prompt-token first prompt, then
each call's prompt is the previous one's with its completion (--completion tokens) and a tool's
result (--tool tokens) added; ids are random and read back from JSON, as a summary reads them.
Run from the repository root: `python -m bench.continuity [--calls 40] [--json [PATH]]`;
milliseconds, the median of --repeats.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from agent_eval.agents.trajectory import CallTokens, ModelCallRecord, Trajectory
from agent_eval.metrics import recorded_continuity
from agent_eval.results.record import AttemptRecord
from bench.parts.results_file import add_json_option, machine, write_results

VOCABULARY = 150_000


def conversation(args: argparse.Namespace, rng: random.Random) -> list[CallTokens]:
    """The attempt's calls, each prompt continuing the one before it."""
    prompt, calls = _ids(rng, args.prompt), []
    for _ in range(args.calls):
        completion = _ids(rng, args.completion)
        calls.append(CallTokens(prompt, completion, [-0.5] * len(completion)))
        prompt = prompt + completion + _ids(rng, args.tool)
    return calls


def _ids(rng: random.Random, count: int) -> list[int]:
    return [rng.randrange(VOCABULARY) for _ in range(count)]


def line(calls: list[CallTokens]) -> bytes:
    """The attempt's samples.jsonl line."""
    model_calls = [ModelCallRecord(1.0, len(c.prompt_ids), len(c.completion_ids)) for c in calls]
    for model_call, tokens in zip(model_calls, calls, strict=True):
        model_call.tokens = tokens
    trajectory = Trajectory(final_output="4", model_calls=model_calls).to_dict()
    record = AttemptRecord(
        sample_id="q", attempt=0, seed=0, session_id="q-0", reward=1.0, correct=True,
        answer="4", turn_rewards=None, turn_answers=None, challenge_turns=None, latency_s=1.0,
        prompt_tokens=sum(len(c.prompt_ids) for c in calls),
        completion_tokens=sum(len(c.completion_ids) for c in calls),
        model_calls=len(calls), tool_calls=0, tool_errors=0, error=None, trajectory=trajectory,
    )  # fmt: skip
    return record.to_line()


def median_ms(action: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--prompt", type=int, default=2_000)
    parser.add_argument("--completion", type=int, default=200)
    parser.add_argument("--tool", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    add_json_option(parser, "continuity")
    args = parser.parse_args()
    about = machine()
    text = line(conversation(args, random.Random(0)))
    record = AttemptRecord.from_line(text, "the bench's line")
    calls = record.trajectory["model_calls"]
    prompt_ids = sum(len(call["tokens"]["prompt_ids"]) for call in calls)
    figures = {
        "line_mb": len(text) / 1e6,
        "prompt_ids": prompt_ids,
        "parse_ms": median_ms(lambda: AttemptRecord.from_line(text, "line"), args.repeats),
        "score_ms": median_ms(record.score, args.repeats),
        "continuity_ms": median_ms(lambda: recorded_continuity(calls), args.repeats),
        "checked": record.score().continuity.checked,
    }
    size = f"{prompt_ids:,} prompt ids in all, line {figures['line_mb']:.1f} MB"
    print(f"one attempt: {args.calls} calls, {size}")
    print(f"parse its line: {figures['parse_ms']:.1f} ms")
    print(f"score it (continuity included): {figures['score_ms']:.1f} ms")
    print(f"continuity alone: {figures['continuity_ms']:.1f} ms over {figures['checked']} turns")
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
