"""Every way an attempt can fail, and whose failure it is: the model's or the infrastructure's.

A model failure is a result: the attempt counts, as wrong. An infrastructure failure says
nothing about the model: the engine replays the attempt, and one that still fails is left
unscored, out of every quality metric, rather than counted as a wrong answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class FailureClass(StrEnum):
    """Whose failure an error kind is."""

    MODEL = "model"
    INFRA = "infra"


@dataclass(frozen=True)
class FailureKind:
    """One error kind of the results, its class, and what it means."""

    name: str
    failure_class: FailureClass
    meaning: str


_MODEL, _INFRA = FailureClass.MODEL, FailureClass.INFRA
KINDS: dict[str, FailureKind] = {
    kind.name: kind
    for kind in (
        FailureKind("max_turns", _MODEL, "every model call used, no final answer"),
        FailureKind(
            "malformed_tool_call", _MODEL, "a call of a tool that does not exist, or bad JSON"
        ),
        FailureKind(
            "context_overflow", _MODEL, "the conversation outgrew the model's context (400)"
        ),
        FailureKind(
            "agent_error", _MODEL, "the agent program exited non-zero or was killed, no answer"
        ),
        FailureKind(
            "limit_exceeded",
            _MODEL,
            "the attempt went past one of eval.limits (its record's error names which), or an "
            "agent program past its memory",
        ),
        FailureKind("no_healthy_worker", _INFRA, "the proxy had no worker to send a call to"),
        FailureKind("upstream_error", _INFRA, "a 5xx or 429 after the proxy's own retries"),
        FailureKind("request_rejected", _INFRA, "another 4xx: a setting or the harness is wrong"),
        FailureKind("connection_error", _INFRA, "the connection to the proxy failed or broke"),
        FailureKind(
            "timeout",
            _INFRA,
            "no answer from the server in time (a call or attempt); an agent program past its "
            "own time limit is recorded as the model's",
        ),
        FailureKind("scorer_timeout", _INFRA, "scoring the answer took longer than its limit"),
        FailureKind("scorer_error", _INFRA, "the reward function raised"),
        FailureKind("runner_error", _INFRA, "the agent runner raised: a bug in the harness"),
        FailureKind(
            "no_model_call",
            _INFRA,
            "a keyed agent failed before its first model call: its setup, not the model",
        ),
    )
}


def failure_class(kind: str) -> FailureClass:
    """The class of an error kind; a kind not in the table (a third-party runner's) is infra."""
    known = KINDS.get(kind)
    # Unknown kinds come from code we do not know: counting them as wrong answers could
    # lower a model's score for a harness fault, so they are replayed and left unscored.
    return known.failure_class if known is not None else FailureClass.INFRA


def recorded_class(error: Mapping[str, str]) -> FailureClass:
    """The class of a recorded error; records written before classes were kept give their kind's."""
    recorded = error.get("class")
    return FailureClass(recorded) if recorded else failure_class(error["kind"])
