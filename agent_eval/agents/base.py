"""The agent-runner contract and how runners are found: by name, `module:Class`, or entry point."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from openai import AsyncOpenAI

from agent_eval.agents.trajectory import Trajectory
from agent_eval.errors import ConfigError

ENTRY_POINT_GROUP = "agent_eval.agents"
BUILT_IN = {
    "math_calculator": "agent_eval.agents.math_calculator:MathCalculatorAgent",
    "multi_turn_chat": "agent_eval.agents.multi_turn_chat:MultiTurnChatAgent",
}


@dataclass(frozen=True)
class Sampling:
    """Sampling settings every model call of an attempt uses."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512


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
        runner_class = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load agent {spec!r} ({exc}); check the module path") from None
    runner = runner_class(**options)
    if not isinstance(runner, AgentRunner):
        raise ConfigError(f"agent {spec!r} has no `async run(sample, ctx)` method")
    return runner


def _entry_point(name: str) -> str | None:
    for point in entry_points(group=ENTRY_POINT_GROUP, name=name):
        return point.value
    return None
