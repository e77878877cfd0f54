"""The session policy alone, in process: routing decisions per second and memory per session
over many workers and sessions, with no HTTP around it.

`policy` times `SessionAffinity.choose` over a ready list of candidates; `pool` times
`WorkerPool.choose`, what the proxy calls per request (the candidates filtered, then the
policy). New sessions are placed; known ones are found again, in another order.
"""

from __future__ import annotations

import gc
import random
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agent_eval.proxy.config import HealthConfig
from agent_eval.proxy.fleet.pool import WorkerPool
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import RequestInfo
from agent_eval.proxy.policies.session import SessionAffinity

ROUTE = "/v1/chat/completions"
MODEL = "mock-model"
TRACED_WORKERS = 10
"""Workers under the traced run: a session's bytes do not grow with them, tracing's cost does."""


@dataclass(frozen=True)
class PolicyFigures:
    """Decisions per second of one (workers, sessions) size, and the policy's bytes per session."""

    workers: int
    sessions: int
    policy_new_per_s: float
    policy_known_per_s: float
    pool_new_per_s: float
    pool_known_per_s: float
    bytes_per_session: float
    max_avg_sessions: float
    """The most sessions one worker holds over the mean."""
    ring_new_per_s: float
    """New sessions placed by the ring alone, as with several proxy processes."""
    ring_max_avg_sessions: float


def _pool(
    workers: int, sessions: int, placement: Literal["ring"] | None = None
) -> tuple[WorkerPool, SessionAffinity]:
    """A pool of healthy workers serving the model, under a session policy that keeps them all."""
    policy = SessionAffinity(ttl=1e9, max_sessions=sessions, placement=placement)
    pool = WorkerPool(HealthConfig(), policy)
    pool.add_all(f"http://127.0.0.1:{20000 + i}" for i in range(workers))
    for worker in pool:
        worker.health.healthy = worker.health.probed = True
        worker.list_models((MODEL,))
    return pool, policy


def _infos(sessions: int, seed: int) -> list[RequestInfo]:
    keys = [f"scale-{i}" for i in range(sessions)]
    random.Random(seed).shuffle(keys)
    return [RequestInfo(route=ROUTE, model=MODEL, session_key=key) for key in keys]


def _rate(decide: Callable[[RequestInfo], object], infos: list[RequestInfo]) -> float:
    """Decisions per second over every info, garbage collection off as in a warmed proxy."""
    gc.disable()
    try:
        started = time.perf_counter()
        for info in infos:
            decide(info)
        return len(infos) / (time.perf_counter() - started)
    finally:
        gc.enable()


def _bytes_per_session(workers: int, sessions: int) -> float:
    """Bytes the policy's tables grow by per session placed, keys included (traced)."""
    pool, policy = _pool(workers, sessions)
    candidates = list(pool)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(sessions):
            policy.choose(candidates, RequestInfo(route=ROUTE, model=MODEL, session_key=f"s-{i}"))
        gc.collect()
        return (tracemalloc.get_traced_memory()[0] - before) / sessions
    finally:
        tracemalloc.stop()


def measure_policy(workers: int, sessions: int, seed: int = 0) -> PolicyFigures:
    """Every figure of one size: each timed on a fresh pool, new sessions then known ones."""
    pool, policy = _pool(workers, sessions)
    candidates = list(pool)
    policy_new = _rate(lambda info: policy.choose(candidates, info), _infos(sessions, seed))
    policy_known = _rate(lambda info: policy.choose(candidates, info), _infos(sessions, seed + 1))
    held = _max_avg(policy, candidates)
    _, ring = _pool(workers, sessions, "ring")
    ring_new = _rate(lambda info: ring.choose(candidates, info), _infos(sessions, seed))
    ring_held = _max_avg(ring, candidates)
    pool, _ = _pool(workers, sessions)
    pool_new = _rate(lambda info: pool.choose(info, []), _infos(sessions, seed))
    pool_known = _rate(lambda info: pool.choose(info, []), _infos(sessions, seed + 1))
    return PolicyFigures(
        workers=workers,
        sessions=sessions,
        policy_new_per_s=policy_new,
        policy_known_per_s=policy_known,
        pool_new_per_s=pool_new,
        pool_known_per_s=pool_known,
        bytes_per_session=_bytes_per_session(min(workers, TRACED_WORKERS), sessions),
        max_avg_sessions=held,
        ring_new_per_s=ring_new,
        ring_max_avg_sessions=ring_held,
    )


def _max_avg(policy: SessionAffinity, workers: list[Worker]) -> float:
    held = [policy.sessions_on(worker.url) for worker in workers]
    return max(held) / (sum(held) / len(held))
