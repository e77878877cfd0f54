"""score_agentdojo: AgentDojo's utility as the verdict, its security and the injection's call
beside it (`RewardResult.benchmark`); runs in the scoring process pool."""

from __future__ import annotations

from pydantic import ValidationError

from agent_eval.benchmarks.agentdojo.checker import verdict
from agent_eval.benchmarks.agentdojo.wire import Gold, Prediction
from agent_eval.rewards.result import RewardResult


def score_agentdojo(prediction: str, gold: str) -> RewardResult:
    """AgentDojo's verdict on an attempt of the agentdojo runner (its final output)."""
    task = Gold.model_validate_json(gold)
    try:
        played = Prediction.model_validate_json(prediction)
    except ValidationError as exc:
        return RewardResult.failed("parse_failed", f"not an agentdojo runner's output: {exc}")
    found = verdict(task, played)
    benchmark = {
        "suite": task.suite,
        "user_task": task.user_task,
        "injection_task": task.injection_task,
        "attack": task.attack,
        "defence": played.defence,
        "utility": found.utility,
        "security": found.security,
        "injection_call": found.injection_call,
    }
    return RewardResult(
        reward=float(found.utility), correct=found.utility, status="ok", benchmark=benchmark
    )
