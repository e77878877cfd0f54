"""samples.jsonl lines in the shape of real records, for the view's index and its file-head
reader."""

from __future__ import annotations

from typing import Any

import orjson

from tests.helpers.run_files import valid_record

A, B = "http://a:8000", "http://b:8000"


def line(
    sample: str,
    attempt: int,
    *,
    correct: bool = False,
    answer: str = "7",
    error: dict[str, str] | None = None,
    workers: tuple[str, ...] = (A,),
    tools: int = 1,
    tokens: tuple[int, int] = (100, 10),
    latency: float = 1.0,
    ask: Any = "How many apples?",
) -> bytes:
    """One samples.jsonl line in the shape of a real record: unscored ones without a score."""
    unscored = error is not None and error["class"] == "infra"
    record = {
        "schema": 2,
        "sample_id": sample,
        "attempt": attempt,
        "seed": attempt,
        "session_id": f"{sample}-{attempt}",
        "reward": None if unscored else float(correct),
        "correct": None if unscored else correct,
        "answer": answer,
        "turn_rewards": None,
        "turn_answers": None,
        "challenge_turns": None,
        "latency_s": latency,
        "prompt_tokens": tokens[0],
        "completion_tokens": tokens[1],
        "model_calls": len(workers),
        "tool_calls": tools,
        "tool_errors": 0,
        "error": error,
        "trajectory": {
            "final_output": answer,
            "messages": [{"role": "user", "content": ask}],
            "model_calls": [{"worker": worker} for worker in workers],
        },
    }
    return orjson.dumps(valid_record(record), option=orjson.OPT_APPEND_NEWLINE)
