"""Least requests: the candidate with the fewest requests in flight."""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Policy, RequestInfo


def fewest_in_flight(workers: Sequence[Worker]) -> Worker | None:
    """Fewest in flight; ties go to the worker that has served least, so idle time spreads too."""
    return min(workers, key=lambda w: (w.in_flight, w.served), default=None)


class LeastRequests(Policy):
    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        return fewest_in_flight(workers)
