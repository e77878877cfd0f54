"""Whose failure each error is: the model's (counted as wrong) or the infrastructure's."""

from __future__ import annotations

import httpx2 as httpx  # the HTTP library openai is built on
import openai
import pytest
from agents.exceptions import MaxTurnsExceeded

from agent_eval.agents.recording import classify
from agent_eval.agents.trajectory import TrajectoryError
from agent_eval.failures import KINDS, FailureClass, failure_class, recorded_class

REQUEST = httpx.Request("POST", "http://proxy/v1/chat/completions")


def status_error(status: int, message: str, code: str | None = None) -> openai.APIStatusError:
    body = {"error": {"message": message, "code": code}}
    response = httpx.Response(status, json=body, request=REQUEST)
    return openai.APIStatusError(message, response=response, body=body["error"])


@pytest.mark.parametrize(
    ("exc", "kind", "whose"),
    [
        (MaxTurnsExceeded("Max turns (8) exceeded"), "max_turns", "model"),
        (status_error(503, "no worker can take the request", "no_healthy_worker"),
         "no_healthy_worker", "infra"),
        (status_error(502, "bad gateway", "upstream_error"), "upstream_error", "infra"),
        (status_error(429, "too many requests"), "upstream_error", "infra"),
        (status_error(400, "Requested tokens (4100) exceed context window of 4096"),
         "context_overflow", "model"),
        (status_error(400, "This model's maximum context length is 8192 tokens"),
         "context_overflow", "model"),
        (status_error(404, "model 'x' not found", "model_not_found"), "request_rejected", "infra"),
        (openai.APIConnectionError(request=REQUEST), "connection_error", "infra"),
        (openai.APITimeoutError(request=REQUEST), "timeout", "infra"),
        (KeyError("oops"), "runner_error", "infra"),
    ],
)  # fmt: skip
def test_each_error_gets_its_kind_and_class(exc: BaseException, kind: str, whose: str) -> None:
    recorded = classify(exc).to_dict()
    assert (recorded["kind"], recorded["class"]) == (kind, whose)


def test_every_kind_has_a_class_and_a_meaning() -> None:
    assert {kind.failure_class for kind in KINDS.values()} == set(FailureClass)
    assert all(kind.meaning for kind in KINDS.values())


def test_a_runner_may_say_whose_failure_its_own_kind_is() -> None:
    own = TrajectoryError("refusal", "the model declined", FailureClass.MODEL).to_dict()
    assert own["class"] == "model"
    # A kind nobody classed is not counted against the model.
    assert failure_class("something_new") is FailureClass.INFRA


def test_records_written_before_classes_take_their_kind_s_class() -> None:
    assert recorded_class({"kind": "max_turns", "message": ""}) is FailureClass.MODEL
    assert recorded_class({"kind": "upstream", "message": ""}) is FailureClass.INFRA
    assert recorded_class({"kind": "x", "class": "model", "message": ""}) is FailureClass.MODEL
