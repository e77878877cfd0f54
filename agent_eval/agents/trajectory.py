"""What one attempt of an agent did: messages, tool calls, model calls (and the system prompt and
tools each was given), final output, error."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agent_eval.failures import FailureClass, failure_class
from agent_eval.rewards.check import CheckRecord


@dataclass
class ToolCallRecord:
    name: str
    arguments: str
    result: str


@dataclass
class ToolDefinition:
    """A tool as the model was told of it."""

    name: str
    description: str
    parameters: dict[str, Any] | None
    """The JSON Schema of its arguments; None for a hosted tool, which its host describes."""


@dataclass
class ModelSetup:
    """What a model call was given besides the conversation: the system prompt and the tools."""

    system_prompt: str | None
    tools: list[ToolDefinition]


@dataclass
class ChoiceTokens:
    """One of the choices a model call sampled against its one prompt (n > 1)."""

    index: int
    completion_ids: list[int]
    logprobs: list[float] | None = None


@dataclass
class CallTokens:
    """The tokens of one model call as its worker gave them: for n > 1, the first choice's
    (the one a chat agent goes on with), and every choice's in `choices`."""

    prompt_ids: list[int]
    """Every token the model was given, in order."""
    completion_ids: list[int]
    """Every token it produced."""
    logprobs: list[float] | None = None
    """One per completion id, as the worker gave it; None: the worker gave none."""
    choices: list[ChoiceTokens] | None = None
    """Each choice, in index order, when the call sampled several; None: it sampled one."""

    def answers(self) -> list[CallTokens]:
        """The call as each of its choices answered it: itself, for a call of one choice."""
        if not self.choices:
            return [self]
        return [CallTokens(self.prompt_ids, c.completion_ids, c.logprobs) for c in self.choices]


@dataclass
class ModelCallRecord:
    latency_s: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    worker: str | None = None
    """The worker that answered, as the proxy named it; None when the answer did not say."""
    ttft_s: float | None = None
    """Seconds to the first bytes of a streamed answer; None when it was not streamed."""
    retries: int = 0
    """Requests sent again before the answer: the proxy's to other workers, the client's own.
    (An attempt played again is a replay: `Trajectory.replays`.)"""
    cached_tokens: int | None = None
    """Prompt tokens the worker served from its prefix cache; None when it did not report them."""
    setup: int | None = None
    """The index in the trajectory's `setups` of what this call was given; None: not recorded."""
    tokens: CallTokens | None = None
    """Its token ids and logprobs, when the proxy captured them (`eval.tokens`); None: not."""


@dataclass
class TrajectoryError:
    """Why an attempt did not finish: a kind of `failures.KINDS` (or a runner's own), and whose."""

    kind: str
    message: str
    failure_class: FailureClass | None = None
    """Whose failure, for a kind the table does not know; None: the table's class."""
    worker: str | None = None
    """The worker whose error answer this is, when the answer named one."""
    limit: str | None = None
    """For limit_exceeded: the limit passed, as eval.limits names it (tokens, wall_time, ...)."""

    @property
    def whose(self) -> FailureClass:
        """The model's failure, or the infrastructure's."""
        return self.failure_class or failure_class(self.kind)

    def to_dict(self) -> dict[str, str | None]:
        """As the record keeps it: kind, class, message, the worker that answered, and the
        limit passed when there is one."""
        recorded = {
            "kind": self.kind,
            "class": str(self.whose),
            "message": self.message,
            "worker": self.worker,
        }
        return recorded if self.limit is None else {**recorded, "limit": self.limit}


@dataclass
class ProgramRecord:
    """What an agent program run by the `command` runner did: how it ended and what it changed."""

    command: str
    """As run, keys redacted."""
    exit_code: int | None
    """None when a signal ended it, or it never started."""
    signal: str | None
    stdout_tail: str
    stderr_tail: str
    duration_s: float
    answer_source: str
    """Where its answer was read: "stdout", or the answer file's path in its working directory."""
    diff: str = ""
    """Its working directory's changes as a unified diff (text files; binary ones named)."""
    check: CheckRecord | None = None
    """The check command run after it, when there was one: its verdict is the attempt's score."""


@dataclass
class Trajectory:
    """JSON-ready record of one attempt; `final_output` is None when it failed."""

    final_output: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    model_calls: list[ModelCallRecord] = field(default_factory=list)
    turn_outputs: list[str | None] = field(default_factory=list)
    error: TrajectoryError | None = None
    replays: list[dict[str, Any]] = field(default_factory=list)
    """The earlier plays of this attempt the infrastructure stopped, each followed by a replay:
    error, session, latency."""
    setups: list[ModelSetup] = field(default_factory=list)
    """Each distinct system prompt and tool set the model calls were given, once: most attempts
    give every call the same, and a prompt with its tool schemas runs to kilobytes."""
    program: ProgramRecord | None = None
    """The agent program's own record, for a runner that runs one (`command`); None otherwise."""

    @property
    def prompt_tokens(self) -> int:
        return sum(call.prompt_tokens for call in self.model_calls)

    @property
    def completion_tokens(self) -> int:
        return sum(call.completion_tokens for call in self.model_calls)

    def setup_index(self, setup: ModelSetup) -> int:
        """Where `setup` is in `setups`, added there if no earlier call was given the same."""
        if setup in self.setups:
            return self.setups.index(setup)
        self.setups.append(setup)
        return len(self.setups) - 1

    def to_dict(self) -> dict[str, Any]:
        recorded = asdict(self)
        recorded["error"] = self.error.to_dict() if self.error is not None else None
        return recorded


def question(recorded: dict[str, Any]) -> str:
    """The first user message's text of a recorded trajectory (Trajectory.to_dict()); its
    content is a string or a list of parts. Empty when the attempt stopped before it."""
    for message in recorded.get("messages") or ():
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(
                part.get("text", "") for part in content or () if isinstance(part, dict)
            )
    return ""
