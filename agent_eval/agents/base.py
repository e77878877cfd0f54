"""The agent-runner contract and how runners are found: by name, `module:Class`, or entry point."""

from __future__ import annotations

import difflib
import inspect
import json
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.errors import PydanticSchemaGenerationError

from agent_eval import installs
from agent_eval.agents.trajectory import Trajectory
from agent_eval.errors import ConfigError
from agent_eval.registry import Registry
from agent_eval.settings import Section

# For RunContext's hint alone: the client's import is half a second, which a command that
# plays no attempt (report, ctl, --help) should not pay.
if TYPE_CHECKING:
    from openai import AsyncOpenAI

AGENTS: Registry[Callable[..., Any]] = Registry(
    "agent",
    "agent_eval.agents",
    {
        "math_calculator": "agent_eval.agents.math_calculator:MathCalculatorAgent",
        "multi_turn_chat": "agent_eval.agents.multi_turn_chat:MultiTurnChatAgent",
        "command": "agent_eval.agents.command:CommandAgent",
        "bfcl": "agent_eval.benchmarks.bfcl.runner:BfclAgent",
        "agentdojo": "agent_eval.benchmarks.agentdojo.runner:AgentDojoAgent",
    },
    installs=installs.BENCHMARKS,
)


class Sampling(Section):
    """Sampling settings every model call of an attempt uses."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.0, ge=0, description="Sampling temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_tokens: int = Field(512, ge=1, description="Most tokens per model call.")


@dataclass
class RunContext:
    """What a runner gets for one attempt: a client bound to the proxy with the session id, and
    with a per-attempt key (a runner's `uses_attempt_keys`, or `eval.capture`) the key and
    where to send it, for a program that makes its own client (None otherwise).

    `trajectory` is the attempt's record: a runner that fills it as it goes (the built-in ones
    do) keeps what it did even when the engine stops it (timeout) or it raises.
    """

    client: AsyncOpenAI
    model: str
    session_id: str
    seed: int
    sampling: Sampling = field(default_factory=Sampling)
    trajectory: Trajectory = field(default_factory=Trajectory)
    time_limit: float | None = None
    """Seconds the engine gives the attempt: a runner that runs a program stops it sooner."""
    run_dir: Path | None = None
    """The run's directory, where a runner may keep what an attempt leaves for debugging."""
    base_url: str | None = None
    """With a per-attempt key: the proxy's base URL (`http://HOST:PORT/v1`) to send it to."""
    api_key: str | None = None
    """The attempt's own key: every call made with it is recorded as this attempt's."""
    attempt_base_url: str | None = None
    """`http://HOST:PORT/a/KEY/v1`, the key in the URL, for a program that cannot set a key."""


@runtime_checkable
class AgentRunner(Protocol):
    """Plays one whole attempt at a sample through the proxy.

    A runner whose class sets `uses_attempt_keys = True` gets a key of its own per attempt,
    and its trajectory's calls and messages are the proxy's record of what was sent with it.
    """

    async def run(self, sample: Any, ctx: RunContext) -> Trajectory: ...


def load_runner(spec: str, **options: Any) -> AgentRunner:
    """A runner by built-in name, `package.module:Class`, or `agent_eval.agents` entry point."""
    factory = AGENTS.load(spec)
    _check_options(spec, factory, options)
    runner = factory(**options)
    if not isinstance(runner, AgentRunner):
        raise ConfigError(f"agent {spec!r} has no `async run(sample, ctx)` method")
    return runner


def runner_options(spec: str, **options: Any) -> dict[str, Any]:
    """Every keyword the runner's constructor takes: the given value, else the runner's default.

    The runner is the one source of its defaults; a saved config names them all.
    """
    try:
        parameters = inspect.signature(AGENTS.load(spec)).parameters.values()
    except (TypeError, ValueError):  # a constructor without a readable signature
        return dict(options)
    named = {
        p.name: p.default
        for p in parameters
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and _plain(p.default)
    }
    return {**named, **options}


def _check_options(spec: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Refuse an option the runner's constructor does not take, or a value its hint refuses."""
    try:
        signature = inspect.signature(factory)
        hints = typing.get_type_hints(getattr(factory, "__init__", factory))
    except (TypeError, ValueError, NameError):  # no readable signature: the runner checks
        return
    parameters = signature.parameters
    if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
        return
    for name, value in options.items():
        if name not in parameters:
            close = difflib.get_close_matches(name, parameters, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ConfigError(
                f"agent {spec!r} takes no option {name!r}; {hint}"
                f"it takes: {', '.join(parameters) or 'none'}"
            )
        if name in hints:
            _check_value(spec, name, hints[name], value)


def _check_value(spec: str, name: str, hint: Any, value: Any) -> None:
    try:
        TypeAdapter(hint).validate_python(value, strict=False)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"]
        raise ConfigError(f"agent {spec!r}: option {name}={value!r} is refused: {reason}") from None
    except PydanticSchemaGenerationError:  # a type pydantic cannot check: the runner does
        return


def _plain(default: Any) -> bool:
    """Whether a default is plain data a config file can hold (not unset, not an object)."""
    try:
        json.dumps(default)
    except (TypeError, ValueError):
        return False
    return default is not inspect.Parameter.empty


def uses_attempt_keys(runner: object) -> bool:
    """Whether a runner asks for a per-attempt key (class attribute `uses_attempt_keys`)."""
    return getattr(runner, "uses_attempt_keys", False) is True
