"""An attempt as RL training lines: its model calls' token ids concatenated as one rollout, a
loss mask and log probabilities over it, and its rewards.

One line per attempt, in the shape of verl's AgentLoopOutput (verl/experimental/agent_loop/
agent_loop.py; SkyRL's TrajectoryOutput and AReaL's concatenated export say the same):
`prompt_ids`, the first call's prompt; `response_ids`, all that follows: each call's completion
and, between two calls, the tokens the next prompt adds (tool outputs, the user's next turn, the
chat template's markers); `response_mask`, 1 on the tokens the model produced and 0 on those it
was given; `response_logprobs`, the worker's per token, 0.0 on the masked ones as verl pads them;
`reward_score`, the attempt's reward. Per call, `calls` says where its completion lies in
`response_ids` and which session turn it answered, with that turn's reward.

Concatenating is honest only where each call's prompt begins with the previous call's prompt
and completion. Where it does not (drift: a template that renders an earlier turn anew), the
attempt is split there, one line per run of calls that continue each other (`segment`), so no
line holds tokens the model was never given in that order. A call without token ids (one that
failed) ends a run too; the attempts with none are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from agent_eval.agents.trajectory import CallTokens
from agent_eval.metrics.continuity import continues, followed, recorded_tokens
from agent_eval.results.exports.atif import record_attempt, to_atif
from agent_eval.results.exports.lines import Converted
from agent_eval.results.record import AttemptRecord

NO_TOKENS = "without token ids (run with eval.tokens=true to capture them, or export --format sft)"
PARTLY = (
    "with model calls without token ids (a call that failed, say): each such call ends a line, "
    "and what it said is in the next line's prompt"
)
SPLIT = "split where a call's prompt does not continue the call before (token drift)"


@dataclass
class _Rollout:
    """One line's token sequences, built call by call."""

    prompt_ids: list[int]
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    response_logprobs: list[float] | None = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)

    def add(self, tokens: CallTokens, given: list[int]) -> int:
        """A call's completion after the tokens its prompt was `given` since the last one;
        where the completion starts."""
        self._extend(given, 0, [0.0] * len(given))
        start = len(self.response_ids)
        self._extend(tokens.completion_ids, 1, tokens.logprobs)
        return start

    def _extend(self, ids: list[int], produced: int, logprobs: list[float] | None) -> None:
        self.response_ids += ids
        self.response_mask += [produced] * len(ids)
        if logprobs is None:
            # A call the worker gave none for: the line has none rather than made-up ones.
            self.response_logprobs = None
        elif self.response_logprobs is not None:
            self.response_logprobs += logprobs


def rl_lines(record: AttemptRecord, runner: str, model: str | None) -> Converted:
    """The attempt's lines: one, or one per run of calls that continue each other."""
    tokens = [recorded_tokens(call) for call in record.trajectory.get("model_calls") or ()]
    if not any(tokens):
        return Converted.left_out(NO_TOKENS)
    turns = _turns(record, runner, model, len(tokens))
    segments = _segments(tokens)
    lines = [
        _line(record, place, [(index, captured, turns[index]) for index, captured in segment])
        for place, segment in enumerate(segments)
    ]
    drifted = any(
        earlier and later and not continues(earlier, later) for earlier, later in pairwise(tokens)
    )
    notes = (PARTLY,) * (None in tokens) + (SPLIT,) * drifted
    return Converted(lines, notes)


def _segments(tokens: list[CallTokens | None]) -> list[list[tuple[int, CallTokens]]]:
    """The calls with tokens, by index, in runs where each call continues the one before; a
    call without tokens ends a run (what it said is in the next call's prompt). A call of
    several choices (n > 1) is taken with the one the next call goes on from, or its first."""
    segments: list[list[tuple[int, CallTokens]]] = []
    previous: CallTokens | None = None
    for index, current in enumerate(tokens):
        taken = followed(previous, current) if previous and current else None
        if current is not None and taken is not None:
            segments[-1][-1] = (segments[-1][-1][0], taken)
            segments[-1].append((index, current))
        elif current is not None:
            segments.append([(index, current)])
        previous = current
    return segments


def _line(
    record: AttemptRecord, segment: int, calls: list[tuple[int, CallTokens, int | None]]
) -> dict[str, Any]:
    """One rollout of calls that continue each other, with the attempt's rewards."""
    rollout = _Rollout(calls[0][1].prompt_ids)
    seen = len(rollout.prompt_ids)
    for index, tokens, turn in calls:
        start = rollout.add(tokens, tokens.prompt_ids[seen:])
        seen = len(tokens.prompt_ids) + len(tokens.completion_ids)
        place = {"index": index, "start": start, "end": len(rollout.response_ids)}
        rollout.calls.append({**place, "turn": turn, "turn_reward": _reward(record, turn)})
    return {
        "sample_id": record.sample_id,
        "attempt": record.attempt,
        "session_id": record.session_id,
        "segment": segment,
        "prompt_ids": rollout.prompt_ids,
        "response_ids": rollout.response_ids,
        "response_mask": rollout.response_mask,
        "response_logprobs": rollout.response_logprobs,
        "reward_score": record.reward,
        "correct": record.correct,
        "turn_rewards": record.turn_rewards,
        "calls": rollout.calls,
    }


def _reward(record: AttemptRecord, turn: int | None) -> float | None:
    rewards = record.turn_rewards
    return (
        rewards[turn] if rewards is not None and turn is not None and turn < len(rewards) else None
    )


def _turns(record: AttemptRecord, runner: str, model: str | None, calls: int) -> list[int | None]:
    """The session turn each call answered (the users' messages before its step, less one),
    as ATIF pairs calls with agent steps; None for a sample of one turn or a call past them."""
    if record.turn_rewards is None:
        return [None] * calls
    turns: list[int | None] = []
    users = 0
    for step in to_atif(record_attempt(record, runner, model)).steps:
        users += step.source == "user"
        if step.source == "agent":
            turns.append(max(users - 1, 0))
    return (turns + [None] * calls)[:calls]
