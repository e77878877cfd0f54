"""A record's model calls as the sample page draws them: each call's continuity (whether it
continues the earlier call of its conversation, or where its tokens first differ) in place of
its tokens, and one call's tokens on demand, since an attempt's run to many thousands."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agent_eval.metrics import TurnCheck, recorded_continuity, recorded_tokens
from agent_eval.view.refused import Refused


def marked_calls(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """The trajectory's model calls without their tokens, each with its `continuity`: null when
    it has no tokens, else how many, the call it was checked against and where it drifted."""
    calls = list(trajectory.get("model_calls") or ())
    checks = {turn.call: turn for turn in recorded_continuity(calls).turns}
    return [
        {**_without_tokens(call), "continuity": _continuity(call, checks.get(index))}
        for index, call in enumerate(calls)
    ]


def _without_tokens(call: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in call.items() if key != "tokens"}


def _continuity(call: dict[str, Any], check: TurnCheck | None) -> dict[str, Any] | None:
    tokens = recorded_tokens(call)
    if tokens is None:
        return None
    return {
        "prompt": len(tokens.prompt_ids),
        "completion": len(tokens.completion_ids),
        "previous": None if check is None else check.previous,
        "drift": None if check is None or check.drift is None else asdict(check.drift),
    }


def call_tokens(record: dict[str, Any], index: int) -> dict[str, Any]:
    """Model call `index`'s tokens and logprobs, with where its prompt drifts (null when it
    does not); a 404 for a call that is not there or has none recorded."""
    calls = list((record.get("trajectory") or {}).get("model_calls") or ())
    if not 0 <= index < len(calls):
        raise Refused(404, f"no model call {index}: this attempt has {len(calls)}")
    tokens = recorded_tokens(calls[index])
    if tokens is None:
        raise Refused(404, f"model call {index} has no tokens recorded (run with eval.tokens)")
    mark = _continuity(calls[index], _check_of(calls, index))
    return {**asdict(tokens), "continuity": mark}


def _check_of(calls: list[dict[str, Any]], index: int) -> TurnCheck | None:
    return next((t for t in recorded_continuity(calls).turns if t.call == index), None)
