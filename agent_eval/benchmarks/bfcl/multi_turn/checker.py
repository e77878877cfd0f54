"""BFCL's verdict on a played multi-turn entry, reached as its evaluation reaches it.

As BFCL's `eval_runner` does for each entry: an entry stopped before its last turn (the step
limit) fails as force-terminated; each step's answer is decoded, the undecodable and empty
ones left out; then `multi_turn_checker` replays the model's calls and the ground truth's on
fresh backends, turn by turn, and compares their states and results.
"""

from __future__ import annotations

import json
from typing import Any

from agent_eval.benchmarks.bfcl.findings import right, wrong
from agent_eval.benchmarks.bfcl.multi_turn.backends import own_instances
from agent_eval.benchmarks.bfcl.multi_turn.decode import decode_step
from agent_eval.benchmarks.bfcl.multi_turn.guard import guarded
from agent_eval.benchmarks.bfcl.multi_turn.package import checker
from agent_eval.rewards.result import RewardResult


def score_multi_turn(prediction: dict[str, Any], gold: dict[str, Any]) -> RewardResult:
    """Correct when BFCL's checker finds the entry valid; `benchmark` holds its error otherwise."""
    result, truth, category = prediction.get("result"), gold["ground_truth"], gold["category"]
    if not isinstance(result, list):
        return wrong(category, "multi_turn:inference_error", "the model gave no list of turns")
    if len(result) != len(truth):
        return wrong(
            category,
            "multi_turn:force_terminated",
            f"the play stopped after {len(result)} of {len(truth)} turns (the step limit)",
        )
    decoded = [_turn_calls(turn, prediction.get("mode", "fc"), gold) for turn in result]
    verdict = _check(decoded, gold)
    parsed = json.dumps(decoded)
    if verdict["valid"]:
        return right(category, parsed)
    return wrong(category, verdict["error_type"], verdict["error_message"], parsed)


def _turn_calls(turn: Any, mode: Any, gold: dict[str, Any]) -> list[list[str]]:
    """A turn's steps as executable calls, the steps without any left out."""
    steps = turn if isinstance(turn, list) else []
    decoded = (decode_step(step, mode) for step in steps)
    return [guarded(calls, gold["involved_classes"]) for calls in decoded if calls is not None]


def _check(decoded: list[list[list[str]]], gold: dict[str, Any]) -> dict[str, Any]:
    entry = {key: gold[key] for key in ("id", "initial_config", "involved_classes")}
    with own_instances() as owner:
        verdict: dict[str, Any] = checker().multi_turn_checker(
            decoded, gold["ground_truth"], entry, gold["category"], owner
        )
    return verdict
