"""Round robin: each candidate in turn."""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Policy, RequestInfo


class RoundRobin(Policy):
    def __init__(self) -> None:
        self._next = 0

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        if not workers:
            return None
        worker = workers[self._next % len(workers)]
        self._next += 1
        return worker
