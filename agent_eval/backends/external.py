"""External: workers someone else runs; nothing is launched."""

from __future__ import annotations

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig


class External(Backend):
    name = "external"
    needs_gpus = False
    launches = False

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        raise NotImplementedError("external workers are given by URL, not launched")

    def served_name(self, config: WorkerConfig) -> str | None:
        return config.served_model_name
