"""Rewards by name: "math", an entry point, or `package.module:function`, checked to reach a
worker process."""

from __future__ import annotations

import pickle
from typing import Any

from agent_eval import installs
from agent_eval.errors import ConfigError
from agent_eval.registry import Registry
from agent_eval.rewards.math_answer import math_gold_problem, score_math
from agent_eval.rewards.result import GoldCheck, RewardFn

REWARDS: Registry[RewardFn] = Registry(
    "reward",
    "agent_eval.rewards",
    {
        "math": "agent_eval.rewards.math_answer:score_math",
        "bfcl": "agent_eval.benchmarks.bfcl.reward:score_bfcl",
        "agentdojo": "agent_eval.benchmarks.agentdojo.reward:score_agentdojo",
    },
    own="package.module:function",
    installs=installs.BENCHMARKS,
)


def load_reward(spec: str | None) -> RewardFn:
    """The math scorer for None or "math", else the function the spec names.

    Raises:
        ConfigError: the spec names nothing, the module does not import, the attribute is
            missing, not callable, or cannot be sent to a worker process.
    """
    name = "math" if spec is None else spec.strip()
    target = REWARDS.load(name)
    if not callable(target):
        attr = name.rpartition(":")[2]
        raise ConfigError(f"reward {spec!r}: {attr!r} is a {type(target).__name__}, not a function")
    _check_picklable(name, target)
    return target


def gold_check(reward: RewardFn) -> GoldCheck | None:
    """How `reward` reads a gold answer, where that is known: the math reward's own reading.

    A reward of your own reads golds its own way; None leaves them to it.
    """
    return math_gold_problem if reward is score_math else None


def as_reward(reward: str | RewardFn | None) -> RewardFn:
    """A reward from a spec, or a function given directly (checked to reach a worker)."""
    if not callable(reward):
        return load_reward(reward)
    _check_picklable(getattr(reward, "__qualname__", repr(reward)), reward)
    return reward


def _check_picklable(spec: str, target: Any) -> None:
    # Workers receive the function by reference; a lambda or nested function fails only there.
    try:
        pickle.dumps(target)
    except Exception as exc:
        raise ConfigError(
            f"reward {spec!r}: cannot be sent to a worker process ({exc}); define it as a "
            "module-level function"
        ) from exc
