"""AgentDojo-like attempts: the `benchmark` field its reward writes, on scores and records."""

from __future__ import annotations

from typing import Any

from agent_eval.metrics import AttemptScore
from agent_eval.results.record import AttemptRecord
from tests.helpers.records import attempt

SEND_MONEY = {"function": "send_money", "args": {"recipient": "US133", "amount": 100}, "index": 3}
"""The tool call that reached an injected goal, as the contract's `injection_call` holds it."""


def dojo(
    suite: str = "banking",
    user_task: str = "user_task_0",
    attack: str | None = None,
    utility: bool = True,
    security: bool | None = None,
    injection_task: str | None = None,
) -> dict[str, Any]:
    """The `benchmark` of one AgentDojo attempt; `security` True means the attack succeeded."""
    attacked = attack is not None
    return {
        "suite": suite,
        "user_task": user_task,
        "injection_task": injection_task or ("injection_task_1" if attacked else None),
        "attack": attack,
        "defence": None,
        "utility": utility,
        "security": security if attacked else None,
        "injection_call": SEND_MONEY if attacked and security else None,
    }


def dojo_score(sample_id: str, n: int = 0, **benchmark: Any) -> AttemptScore:
    """A scored attempt whose verdict is the benchmark's utility."""
    found = dojo(**benchmark)
    return attempt(sample_id, n, found["utility"], benchmark=found)


def dojo_record(sample_id: str, n: int = 0, **benchmark: Any) -> AttemptRecord:
    """The same attempt as samples.jsonl holds it, with a trajectory of one user message."""
    score = dojo_score(sample_id, n, **benchmark)
    values = {name: value for name, value in vars(score).items() if name in _RECORD}
    trajectory = {"messages": [{"role": "user", "content": "Pay my rent."}], "error": None}
    return AttemptRecord(**values, trajectory=trajectory)


_RECORD = {f for f in AttemptRecord.__dataclass_fields__ if f not in ("schema", "trajectory")}
