"""Routing policies' workers and where plain consistent hashing would send keys."""

from __future__ import annotations

import bisect

from agent_eval.proxy.fleet.breaker import CircuitBreaker
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies.ring import VIRTUAL_NODES, ring_hash


def make_workers(n: int) -> list[Worker]:
    """n workers, http://w0 to http://w{n-1}, each with a fresh (closed) breaker."""
    return [Worker(f"http://w{i}", "/health", CircuitBreaker(5, 10.0)) for i in range(n)]


def plain_ring_owners(urls: list[str], keys: list[str]) -> list[str]:
    """Where plain consistent hashing (no bound) would put each key."""
    ring = sorted((ring_hash(f"{url}#{i}"), url) for url in urls for i in range(VIRTUAL_NODES))
    points = [point for point, _ in ring]
    return [ring[bisect.bisect(points, ring_hash(key)) % len(ring)][1] for key in keys]
