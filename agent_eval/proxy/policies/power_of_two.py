"""Power of two choices: two candidates at random, the one with fewer requests in flight."""

from __future__ import annotations

import random
from collections.abc import Sequence

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Policy, RequestInfo
from agent_eval.proxy.policies.least_requests import fewest_in_flight


class PowerOfTwo(Policy):
    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        if len(workers) <= 2:
            return fewest_in_flight(workers)
        return fewest_in_flight(self._rng.sample(list(workers), 2))
