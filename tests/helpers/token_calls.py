"""Model calls with their tokens, as the proxy records them: a conversation whose turns continue
each other, or one whose toy chat template renders an earlier turn anew (drift)."""

from __future__ import annotations

from typing import Any

import orjson

from agent_eval.agents.trajectory import CallTokens, ChoiceTokens, ModelCallRecord, Trajectory
from agent_eval.data import Sample
from agent_eval.results.record import AttemptRecord
from agent_eval.run.engine import attempt_record
from agent_eval.run.scoring import Scored

HEADER = [1, 2]
"""The toy template's first tokens, which every conversation shares."""
RENDERED_ANEW = 9
"""The token the drifting template renders the last token of an earlier completion as."""


def conversation(turns: int, first: int = 100, drift_at: int | None = None) -> list[CallTokens]:
    """`turns` calls of one conversation: each prompt is the previous call's prompt, completion
    and a tool's result; at call `drift_at` the previous completion's last token is sent back
    as RENDERED_ANEW."""
    prompt = [*HEADER, *range(first, first + 10)]
    calls: list[CallTokens] = []
    for turn in range(turns):
        completion = [first + 20 + 3 * turn + k for k in range(3)]
        calls.append(CallTokens(prompt, completion, [-0.05 - turn - k for k in range(3)]))
        sent_back = [*completion[:-1], RENDERED_ANEW] if turn + 1 == drift_at else completion
        prompt = [*prompt, *sent_back, 50 + turn, 51 + turn]
    return calls


def sampled_call(call: CallTokens, took: int, n: int = 3) -> CallTokens:
    """`call` as one of `n` choices (n > 1), the one at `took`; the others, the first among
    them unless `took` is 0, say something else."""
    choices = [ChoiceTokens(k, [900 + k] * 3, [-1.0 - k] * 3) for k in range(n)]
    choices[took] = ChoiceTokens(took, call.completion_ids, call.logprobs)
    first = choices[0]
    return CallTokens(call.prompt_ids, first.completion_ids, first.logprobs, choices)


def drift_index(calls: list[CallTokens], call: int) -> int:
    """Where `conversation(drift_at=call)` makes call `call`'s prompt first differ."""
    before = calls[call - 1]
    return len(before.prompt_ids) + len(before.completion_ids) - 1


def record_with_tokens(
    sample_id: str, attempt: int, calls: list[CallTokens | None]
) -> AttemptRecord:
    """A right answer's record whose model calls carry `calls`' tokens (None: not captured)."""
    model_calls = [
        ModelCallRecord(0.1, len(t.prompt_ids) if t else 0, len(t.completion_ids) if t else 0)
        for t in calls
    ]
    for model_call, tokens in zip(model_calls, calls, strict=True):
        model_call.tokens = tokens
    trajectory = Trajectory(final_output="4", model_calls=model_calls)
    scored = Scored(1.0, True, "4", None, None, failure=None)
    item = Sample(sample_id, "2+2?", "4")
    return attempt_record(item, attempt, 0, f"{sample_id}-{attempt}", trajectory, scored, 0.5)


def line_with_tokens(
    sample_id: str, attempt: int, calls: list[CallTokens | None]
) -> dict[str, Any]:
    """`record_with_tokens` as its samples.jsonl line reads back."""
    loaded: dict[str, Any] = orjson.loads(record_with_tokens(sample_id, attempt, calls).to_line())
    return loaded
