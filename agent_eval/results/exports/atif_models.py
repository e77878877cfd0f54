"""ATIF, Harbor's Agent Trajectory Interchange Format (RFC 0001, v1.7), as pydantic models.

The fields, their types and the rules follow the RFC and Harbor's reference models
(src/harbor/models/trajectories/): unknown fields are refused, step ids run from 1, LLM fields
belong to agent steps, an observation answers a call of its own step. Reads v1.0 to v1.7 (each
version only adds optional fields); writes v1.7.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Version = Literal[
    "ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6",
    "ATIF-v1.7",
]  # fmt: skip
SCHEMA_VERSION: Version = "ATIF-v1.7"
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ImageSource(_Atif):
    media_type: Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
    path: str


class ContentPart(_Atif):
    """Text or an image (v1.6): text only with `text`, an image only with `source`."""

    type: Literal["text", "image"]
    text: str | None = None
    source: ImageSource | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if (self.type == "text") != (self.text is not None and self.source is None):
            raise ValueError("a text part has `text` and no `source`")
        if (self.type == "image") != (self.source is not None and self.text is None):
            raise ValueError("an image part has `source` and no `text`")
        return self


Content = str | list[ContentPart]


class ToolCall(_Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class SubagentTrajectoryRef(_Atif):
    trajectory_id: str | None = None
    session_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _resolvable(self) -> Self:
        if self.trajectory_id is None and self.trajectory_path is None:
            raise ValueError("a subagent reference sets trajectory_id or trajectory_path")
        return self


class ObservationResult(_Atif):
    source_call_id: str | None = None
    content: Content | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Atif):
    results: list[ObservationResult]


class Metrics(_Atif):
    """One step's LLM figures; `prompt_tokens` counts the cached ones too."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class Step(_Atif):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: Content
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value

    @model_validator(mode="after")
    def _agent_fields(self) -> Self:
        if self.source != "agent":
            given = [name for name in AGENT_ONLY if getattr(self, name) is not None]
            if given:
                raise ValueError(f"{', '.join(given)} belong to agent steps, not {self.source}")
        elif self.llm_call_count == 0 and (self.metrics or self.reasoning_content is not None):
            raise ValueError("a step of no LLM call has no metrics nor reasoning_content")
        return self


class Agent(_Atif):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Trajectory(_Atif):
    """One ATIF document: who played, every step, the totals."""

    schema_version: Version = SCHEMA_VERSION
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _steps_in_order(self) -> Self:
        for place, step in enumerate(self.steps, start=1):
            if step.step_id != place:
                raise ValueError(f"step {place} has step_id {step.step_id}: ids run 1, 2, ...")
        return self

    @model_validator(mode="after")
    def _results_answer_their_calls(self) -> Self:
        for step in self.steps:
            calls = {call.tool_call_id for call in step.tool_calls or ()}
            for result in step.observation.results if step.observation else ():
                if result.source_call_id is not None and result.source_call_id not in calls:
                    raise ValueError(
                        f"step {step.step_id} has a result for call {result.source_call_id!r}, "
                        "which none of its tool_calls is"
                    )
        return self

    @model_validator(mode="after")
    def _subagents_named_once(self) -> Self:
        names = [sub.trajectory_id for sub in self.subagent_trajectories or ()]
        if None in names or len(set(names)) != len(names):
            raise ValueError("each embedded subagent trajectory has its own trajectory_id")
        return self

    def to_json(self) -> dict[str, Any]:
        """As a file holds it: the fields that are set, absent ones left out."""
        return self.model_dump(mode="json", exclude_none=True)
