"""How fast the view's index opens and filters a 100,000-attempt run, and the memory it takes.

Writes a synthetic run (about 850 bytes an attempt: a question, a tool call, several workers,
some errors) to a temporary directory, then times the first index, three typical filters and
reading one record, and prints the process's peak resident memory.
Run from the repository root: `python -m bench.view_index [--attempts 100000] [--json [PATH]]`;
seconds.
"""

from __future__ import annotations

import argparse
import random
import resource
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from agent_eval.results.record import AttemptRecord
from agent_eval.view.index import Filter, RunIndex
from bench.parts.results_file import add_json_option, machine, write_results

WORKERS = [f"http://10.0.0.{n}:8000" for n in range(1, 9)]
ERRORS = [("timeout", "infra"), ("runner_error", "infra"), ("max_turns", "model")]
NOUNS = ["apples", "bottles", "seats", "marbles", "tickets", "books", "coins", "pencils"]


def trajectory(rng: random.Random, ask: str, output: str, calls: int) -> dict[str, Any]:
    """A small agent trajectory: the question, one tool call and its output, the model calls."""
    arguments = f'{{"a": {rng.randint(1, 99)}, "b": {rng.randint(1, 99)}}}'
    return {
        "final_output": output,
        "messages": [
            {"content": ask, "role": "user"},
            {"arguments": arguments, "name": "add", "type": "function_call"},
            {"output": output, "type": "function_call_output"},
        ],
        "tool_calls": [{"name": "add", "arguments": arguments, "result": output}],
        "model_calls": [
            {"latency_s": 1.5, "prompt_tokens": 300, "worker": rng.choice(WORKERS)}
            for _ in range(calls)
        ],
        "error": None,
    }


def record(rng: random.Random, sample: int, attempt: int) -> AttemptRecord:
    """One synthetic attempt; about one in twenty stops with an error."""
    noun = NOUNS[sample % len(NOUNS)]
    ask = (
        f"A crate holds {sample % 37 + 2} {noun}. How many {noun} are in {sample % 11 + 2} crates?"
    )
    answer = str(rng.randint(1, 500))
    calls = rng.randint(1, 3)
    error = None
    if rng.random() < 0.05:
        kind, failure = rng.choice(ERRORS)
        error = {
            "kind": kind,
            "class": failure,
            "message": "stopped",
            "worker": rng.choice(WORKERS),
        }
    return AttemptRecord(
        sample_id=f"word_problems-{sample}",
        attempt=attempt,
        seed=rng.getrandbits(32),
        session_id=f"word_problems-{sample}-{attempt}",
        reward=float(rng.random() < 0.4),
        correct=rng.random() < 0.4,
        answer=answer,
        turn_rewards=None,
        turn_answers=None,
        challenge_turns=None,
        latency_s=round(rng.uniform(0.5, 60), 3),
        prompt_tokens=300 * calls,
        completion_tokens=rng.randint(10, 200),
        model_calls=calls,
        tool_calls=1,
        tool_errors=0,
        error=error,
        trajectory=trajectory(rng, ask, answer, calls),
    )


def write_run(run_dir: Path, attempts: int) -> None:
    """A samples.jsonl of `attempts` attempts, four per sample."""
    rng = random.Random(0)
    with open(run_dir / "samples.jsonl", "wb") as file:
        for n in range(attempts):
            file.write(record(rng, n // 4, n % 4).to_line())


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--attempts", type=int, default=100_000)
    add_json_option(parser, "view_index")
    args = parser.parse_args()
    about = machine()
    figures: dict[str, Any] = {"attempts": args.attempts}
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        write_run(run_dir, args.attempts)
        size = (run_dir / "samples.jsonl").stat().st_size
        print(f"samples.jsonl: {args.attempts} attempts, {size / 1e6:.1f} MB")
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        seconds, index = timed(lambda: RunIndex(run_dir))
        print(f"open (first index): {seconds:.3f} s")
        figures |= {"samples_mb": size / 1e6, "open_s": seconds, "filters": {}}
        filters = {
            "wrong answers": Filter(outcome="wrong"),
            "timeout on one worker": Filter(outcome="timeout", worker=WORKERS[2]),
            "text 'marbles'": Filter(text="marbles"),
        }
        for name, where in filters.items():
            seconds, page = timed(partial(index.rows, where, sort="latency_s", descending=True))
            print(f"filter {name}: {seconds:.3f} s, {page.total} match")
            figures["filters"][name] = {"seconds": seconds, "matches": page.total}
        seconds, _ = timed(lambda: index.record(len(index) // 2))
        print(f"read one record: {seconds * 1000:.2f} ms")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS: {peak:.0f} MB (before indexing: {base / 1024:.0f} MB)")
    figures |= {"record_s": seconds, "peak_rss_mb": peak, "rss_before_index_mb": base / 1024}
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
