"""Backends: how to start one worker of each inference server."""

from __future__ import annotations

from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig
from agent_eval.registry import Registry

BACKENDS: Registry[type[Backend]] = Registry(
    "backend",
    "agent_eval.backends",
    {
        "sglang": "agent_eval.backends.sglang:SGLang",
        "vllm": "agent_eval.backends.vllm:VLLM",
        "llamacpp": "agent_eval.backends.llamacpp:LlamaCpp",
        "external": "agent_eval.backends.external:External",
    },
)


def get_backend(name: str) -> Backend:
    """The backend called `name`; an unknown name gets the nearest known one."""
    return BACKENDS.load(name)()


__all__ = ["BACKENDS", "Backend", "WorkerCommand", "WorkerConfig", "get_backend"]
