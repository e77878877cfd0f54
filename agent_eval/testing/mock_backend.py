"""A backend that launches mock workers, so schedulers can be tested without GPUs or models."""

from __future__ import annotations

import sys

from agent_eval.allocation import Allocation
from agent_eval.backends.base import Backend, WorkerCommand, WorkerConfig, key_argument


class MockBackend(Backend):
    """Starts `python -m agent_eval.testing.mock_worker` on the given host and port."""

    name = "mock"
    needs_gpus = False

    def __init__(self, python: str = sys.executable, ready_path: str = "/health") -> None:
        self.python = python
        self.ready_path = ready_path

    def command(
        self, config: WorkerConfig, allocation: Allocation, host: str, port: int | str
    ) -> WorkerCommand:
        argv = [
            self.python, "-m", "agent_eval.testing.mock_worker",
            "--host", host, "--port", str(port), "--name", f"mock-{port}",
            "--model", config.served_model_name or "mock-model",
            *config.extra_args,
        ]  # fmt: skip
        return WorkerCommand(argv, ready_path=self.ready_path, health_path="/health")

    def require_key(self, command: WorkerCommand, key: str) -> WorkerCommand:
        """The mock takes its key as SGLang does, from --api-key."""
        return key_argument(command, "--api-key", key)
