"""Rewards by name: "math" or `package.module:function`, checked to reach a worker process."""

from __future__ import annotations

import importlib
import pickle
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.rewards.math_answer import score_math
from agent_eval.rewards.result import RewardFn


def load_reward(spec: str | None) -> RewardFn:
    """The math scorer for None or "math", else the function named by `package.module:function`.

    Raises:
        ConfigError: the spec is malformed, the module does not import, the attribute is missing,
            not callable, or cannot be sent to a worker process.
    """
    if spec is None or spec.strip() == "math":
        return score_math
    module_name, sep, attr = spec.strip().partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"reward {spec!r}: expected 'math' or 'package.module:function'")
    target = _resolve(spec, _import_module(spec, module_name), attr)
    if not callable(target):
        kind = type(target).__name__
        raise ConfigError(f"reward {spec!r}: {attr!r} is a {kind}, not a function")
    _check_picklable(spec, target)
    return target


def as_reward(reward: str | RewardFn | None) -> RewardFn:
    """A reward from a spec, or a function given directly (checked to reach a worker)."""
    if not callable(reward):
        return load_reward(reward)
    _check_picklable(getattr(reward, "__qualname__", repr(reward)), reward)
    return reward


def _import_module(spec: str, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ConfigError(
            f"reward {spec!r}: module {module_name!r} not found ({exc}); install it or put it "
            "on PYTHONPATH"
        ) from exc
    except Exception as exc:
        raise ConfigError(
            f"reward {spec!r}: importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def _resolve(spec: str, module: Any, attr: str) -> Any:
    target = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(
                f"reward {spec!r}: module {module.__name__!r} has no attribute {attr!r}"
            ) from None
    return target


def _check_picklable(spec: str, target: Any) -> None:
    # Workers receive the function by reference; a lambda or nested function fails only there.
    try:
        pickle.dumps(target)
    except Exception as exc:
        raise ConfigError(
            f"reward {spec!r}: cannot be sent to a worker process ({exc}); define it as a "
            "module-level function"
        ) from exc
