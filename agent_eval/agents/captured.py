"""An attempt's trajectory from the proxy's record of its calls (per-attempt keys), and the
first failure of the infrastructure among them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agent_eval.agents.call_shapes import SHAPES, CallShape, Json
from agent_eval.agents.trajectory import (
    CallTokens,
    ChoiceTokens,
    ModelCallRecord,
    ToolCallRecord,
    Trajectory,
    TrajectoryError,
)


class CallError(BaseModel):
    """Why a recorded call failed, and whose fault it was."""

    model_config = ConfigDict(extra="ignore")

    code: str | None = None
    message: str = ""
    fault: Literal["worker", "proxy", "client"]


class CapturedChoice(BaseModel):
    """One choice's completion ids and logprobs, of a call that sampled several."""

    model_config = ConfigDict(extra="ignore")

    index: int
    completion_ids: list[int]
    logprobs: list[float] | None = None


class CapturedTokens(BaseModel):
    """A call's token ids and logprobs, as the proxy read them from its worker's answer."""

    model_config = ConfigDict(extra="ignore")

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float] | None = None
    choices: list[CapturedChoice] | None = None
    """Every choice's, when the call sampled several (n > 1); absent in older records."""

    def record(self) -> CallTokens:
        choices = None
        if self.choices is not None:
            choices = [ChoiceTokens(c.index, c.completion_ids, c.logprobs) for c in self.choices]
        return CallTokens(self.prompt_ids, self.completion_ids, self.logprobs, choices)


class CapturedCall(BaseModel):
    """One call as the proxy's record of an attempt holds it (GET/DELETE /attempts/KEY)."""

    model_config = ConfigDict(extra="ignore")

    index: int
    route: str
    stream: bool = False
    status: int
    worker: str | None = None
    latency_s: float
    ttft_s: float | None = None
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int | None = None
    request: Json | None = None
    response: Json | None = None
    error: CallError | None = None
    tokens: CapturedTokens | None = None
    """Its tokens, when the proxy captured them (`capture.tokens`)."""

    @property
    def answered(self) -> bool:
        """Whether the model answered: the call took its tokens and the client its answer."""
        return self.error is None and self.status < 400 and self.response is not None


def calls_of(record: dict[str, Any]) -> list[CapturedCall]:
    """The calls of an attempt's record, in the order they started."""
    return [CapturedCall.model_validate(call) for call in record.get("calls") or ()]


# How a failed call's code names the error kind of the results (failures.KINDS).
_KINDS = {"no_healthy_worker": "no_healthy_worker", "upstream_timeout": "timeout"}


def infra_failure(calls: Iterable[CapturedCall]) -> TrajectoryError | None:
    """The first call the infrastructure failed (a worker's or the proxy's fault: no healthy
    worker, a 5xx after the proxy's retries, a worker unreachable), as the attempt's error;
    None when every failure was the client's own."""
    for call in calls:
        error = call.error
        if error is not None and error.fault != "client":
            kind = _KINDS.get(error.code or "", "upstream_error")
            message = f"call {call.index} on {call.route}: {error.message or error.code}"
            return TrajectoryError(kind, message, worker=call.worker)
    return None


def trajectory_from_calls(calls: Sequence[CapturedCall]) -> Trajectory:
    """The attempt's model calls, conversation and tool calls as the proxy saw them; its final
    output is the runner's to say."""
    trajectory = Trajectory()
    conversations: dict[str, list[Json]] = {}
    """Each stored Responses answer's conversation, for a call continuing it by id."""
    for call in calls:
        shape = SHAPES.get(call.route)
        if shape is None or call.request is None:
            continue
        earlier = conversations.get(str(call.request.get("previous_response_id")), [])
        trajectory.messages = [*earlier, *shape.sent(call.request)]
        if call.answered and call.response is not None:
            trajectory.messages += shape.answered(call.response)
            trajectory.model_calls.append(_model_call(call, trajectory, shape))
            if isinstance(answer_id := call.response.get("id"), str):
                conversations[answer_id] = trajectory.messages
    trajectory.tool_calls = _tool_calls(calls)
    return trajectory


def _model_call(call: CapturedCall, trajectory: Trajectory, shape: CallShape) -> ModelCallRecord:
    assert call.request is not None
    return ModelCallRecord(
        call.latency_s,
        call.prompt_tokens,
        call.completion_tokens,
        call.worker,
        ttft_s=call.ttft_s,
        retries=call.retries,
        cached_tokens=call.cached_tokens,
        setup=trajectory.setup_index(shape.setup(call.request)),
        tokens=call.tokens.record() if call.tokens is not None else None,
    )


def _tool_calls(calls: Sequence[CapturedCall]) -> list[ToolCallRecord]:
    """Every tool call the model made, with the result the agent sent back, when it did."""
    results: dict[str, str] = {}
    made: list[tuple[str, ToolCallRecord]] = []
    for call in calls:
        shape = SHAPES.get(call.route)
        if shape is None or call.request is None:
            continue
        results.update(shape.tool_results(call.request))
        if call.answered and call.response is not None:
            made += [
                (use.call_id, ToolCallRecord(use.name, use.arguments, ""))
                for use in shape.tool_uses(call.response)
            ]
    for call_id, record in made:
        record.result = results.get(call_id, "")
    return [record for _, record in made]
