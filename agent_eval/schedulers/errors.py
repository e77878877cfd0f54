"""Scheduler errors that carry their evidence: which worker, its exit code, the end of its log."""

from __future__ import annotations

from pathlib import Path

from agent_eval.errors import AgentEvalError, ConfigError


class WorkerFailedError(AgentEvalError):
    """A worker exited (or its job ended) before it became ready."""

    def __init__(self, name: str, how: str, log: Path, tail: str) -> None:
        self.name, self.how, self.log, self.tail = name, how, log, tail
        super().__init__(
            f"{name} {how} while starting. Last lines of {log}:\n{tail}\n"
            "Fix the cause above (model path, GPU memory, missing package) and start again."
        )


class WorkerTimeoutError(AgentEvalError):
    """Workers were still not ready at the deadline."""

    def __init__(self, waiting: list[str], timeout: float, detail: str) -> None:
        self.waiting = waiting
        super().__init__(
            f"{', '.join(waiting)} not ready after {timeout:.0f} s. {detail}\n"
            "Raise the start-up timeout if the model is large, or read the logs for a hang."
        )


class GPUAllocationError(ConfigError):
    """More GPUs asked for than exist."""


class SchedulerUnavailableError(ConfigError):
    """The chosen scheduler's tools are not installed or not reachable."""
