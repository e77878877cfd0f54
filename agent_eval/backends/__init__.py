"""Backends: how to start one worker of each inference server."""

from __future__ import annotations

import difflib

from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig
from agent_eval.backends.external import External
from agent_eval.backends.llamacpp import LlamaCpp
from agent_eval.backends.sglang import SGLang
from agent_eval.backends.vllm import VLLM
from agent_eval.errors import ConfigError

BACKENDS: dict[str, type[Backend]] = {
    backend.name: backend for backend in (SGLang, VLLM, LlamaCpp, External)
}


def get_backend(name: str) -> Backend:
    """The backend called `name`; an unknown name gets the nearest known one."""
    try:
        return BACKENDS[name]()
    except KeyError:
        close = difflib.get_close_matches(name, BACKENDS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"unknown backend {name!r}; {hint}backends are {', '.join(BACKENDS)}"
        ) from None


__all__ = ["BACKENDS", "Backend", "WorkerCommand", "WorkerConfig", "get_backend"]
