"""The agent-runner contract and how runners are found: by name, `module:Class`, or entry point."""

from __future__ import annotations

import difflib
import importlib
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from openai import AsyncOpenAI
from pydantic import ConfigDict, Field

from agent_eval.agents.trajectory import Trajectory
from agent_eval.errors import ConfigError
from agent_eval.settings import Section

ENTRY_POINT_GROUP = "agent_eval.agents"
BUILT_IN = {
    "math_calculator": "agent_eval.agents.math_calculator:MathCalculatorAgent",
    "multi_turn_chat": "agent_eval.agents.multi_turn_chat:MultiTurnChatAgent",
}


class Sampling(Section):
    """Sampling settings every model call of an attempt uses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0, description="Sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int = Field(512, ge=1, description="Most tokens per model call.")


@dataclass
class RunContext:
    """What a runner gets for one attempt: a client bound to the proxy with the session id.

    `trajectory` is the attempt's record: a runner that fills it as it goes (the built-in ones
    do) keeps what it did even when the engine stops it (timeout) or it raises.
    """

    client: AsyncOpenAI
    model: str
    session_id: str
    seed: int
    sampling: Sampling = field(default_factory=Sampling)
    trajectory: Trajectory = field(default_factory=Trajectory)


@runtime_checkable
class AgentRunner(Protocol):
    """Plays one whole attempt at a sample through the proxy."""

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory: ...


def load_runner(spec: str, **options: Any) -> AgentRunner:
    """A runner by built-in name, `package.module:Class`, or `agent_eval.agents` entry point."""
    runner = runner_class(spec)(**options)
    if not isinstance(runner, AgentRunner):
        raise ConfigError(f"agent {spec!r} has no `async run(sample, ctx)` method")
    return runner


def runner_options(spec: str, **options: Any) -> dict[str, Any]:
    """Every keyword the runner's constructor takes: the given value, else the runner's default.

    The runner is the one source of its defaults; a saved config names them all.
    """
    try:
        parameters = inspect.signature(runner_class(spec)).parameters.values()
    except (TypeError, ValueError):  # a constructor without a readable signature
        return dict(options)
    named = {
        p.name: p.default
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and _plain(p.default)
    }
    return {**named, **options}


def _plain(default: Any) -> bool:
    """Whether a default is plain data a config file can hold (not unset, not an object)."""
    try:
        json.dumps(default)
    except (TypeError, ValueError):
        return False
    return default is not inspect.Parameter.empty


def runner_class(spec: str) -> Callable[..., Any]:
    """The class (or factory) a runner spec names. Raises: ConfigError with the known names."""
    target = BUILT_IN.get(spec) or _entry_point(spec) or spec
    if ":" not in target:
        known = [*BUILT_IN, *(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))]
        close = difflib.get_close_matches(spec, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"unknown agent {spec!r}; {hint}agents are {', '.join(known)}, "
            "or give your own as package.module:Class"
        )
    module_name, _, attribute = target.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load agent {spec!r} ({exc}); check the module path") from None


def _entry_point(name: str) -> str | None:
    for point in entry_points(group=ENTRY_POINT_GROUP, name=name):
        return point.value
    return None
