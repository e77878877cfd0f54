"""Fixed routes: a session goes to the worker its key hashes to, by position, whatever the load.

Positions are the order workers joined the pool, so two runs whose workers start in the same
order send each attempt to the same worker, whatever ports they got (`rollout.reproducible`).
A worker out of the pool passes its sessions to the next position.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.base import Policy, RequestInfo, as_candidates
from agent_eval.proxy.policies.least_requests import fewest_in_flight
from agent_eval.proxy.policies.ring import ring_hash


class FixedRoutes(Policy):
    def __init__(self) -> None:
        self._order: list[str] = []

    def on_workers_changed(self, urls: Sequence[str]) -> None:
        self._order = list(urls)

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        candidates = as_candidates(workers)
        if info.session_key is None or not self._order:
            return fewest_in_flight(workers)
        start = ring_hash(info.session_key) % len(self._order)
        for offset in range(len(self._order)):
            worker = candidates.get(self._order[(start + offset) % len(self._order)])
            if worker is not None:
                return worker
        return fewest_in_flight(workers)
