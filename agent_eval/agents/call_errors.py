"""The error kind of a failed model call, for runners of any framework: it imports none, so a
runner without the Agents SDK (BFCL's, AgentDojo's) does not load it to classify an error."""

from __future__ import annotations

import asyncio
import re

import openai

from agent_eval.agents.trajectory import TrajectoryError
from agent_eval.wire import WORKER_HEADER

# How llama.cpp, vLLM and SGLang word a request longer than the model's context.
_CONTEXT_OVERFLOW = re.compile(r"context (length|window)|maximum context|exceeds? .*context", re.I)


def classify_call_error(exc: BaseException) -> TrajectoryError:
    """An error kind for the results: what went wrong, in a word the metrics can count."""
    if isinstance(exc, asyncio.TimeoutError | openai.APITimeoutError):
        return TrajectoryError("timeout", str(exc) or "the attempt timed out")
    if isinstance(exc, openai.APIConnectionError):
        return TrajectoryError("connection_error", str(exc))
    if isinstance(exc, openai.APIStatusError):
        worker = exc.response.headers.get(WORKER_HEADER)
        return TrajectoryError(_status_kind(exc), str(exc), worker=worker)
    return TrajectoryError("runner_error", f"{type(exc).__name__}: {exc}")


def _status_kind(exc: openai.APIStatusError) -> str:
    """The error kind of an HTTP error answer, from its status and the proxy's error code."""
    if exc.code == "no_healthy_worker":
        return "no_healthy_worker"
    if exc.status_code >= 500 or exc.status_code == 429:
        return "upstream_error"
    if exc.status_code == 400 and _CONTEXT_OVERFLOW.search(str(exc)):
        return "context_overflow"
    return "request_rejected"
