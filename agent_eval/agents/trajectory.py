"""What one attempt of an agent did: messages, tool calls, model calls, final output, error."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class ToolCallRecord:
    name: str
    arguments: str
    result: str


@dataclass
class ModelCallRecord:
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class TrajectoryError:
    """Why an attempt did not finish: kind is one of ERROR_KINDS."""

    kind: str
    message: str


ERROR_KINDS = ("max_turns", "malformed_tool_call", "timeout", "upstream", "runner_error")


@dataclass
class Trajectory:
    """JSON-ready record of one attempt; `final_output` is None when it failed."""

    final_output: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    model_calls: list[ModelCallRecord] = field(default_factory=list)
    turn_outputs: list[str | None] = field(default_factory=list)
    error: TrajectoryError | None = None

    @property
    def prompt_tokens(self) -> int:
        return sum(call.prompt_tokens for call in self.model_calls)

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.model_calls)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
