"""The pool's index of available workers against a scan of them, after any sequence of changes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_eval.proxy.config import HealthConfig
from agent_eval.proxy.fleet.breaker import BreakerState
from agent_eval.proxy.fleet.health_copy import WorkerHealth, adopt
from agent_eval.proxy.fleet.pool import ModelNotServedError, WorkerPool
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import Policy, RequestInfo
from agent_eval.proxy.policies.least_requests import fewest_in_flight

URLS = [f"http://127.0.0.1:{9000 + i}" for i in range(5)]
MODELS = ["a", "b", "c"]
ROUTE = "/v1/chat/completions"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recording(Policy):
    """Keeps what the pool offered, and picks the least loaded of it."""

    def __init__(self) -> None:
        self.offered: Sequence[Worker] = []

    def choose(self, workers: Sequence[Worker], info: RequestInfo) -> Worker | None:
        self.offered = workers
        return fewest_in_flight(workers)


def scanned(pool: WorkerPool, info: RequestInfo, tried: list[Worker], now: float) -> list[Worker]:
    """The candidates as a scan over every worker finds them: what the index must agree with."""
    available = [w for w in pool if w.health.healthy and w.breaker.allows(now)]
    serving = available
    if info.model is not None:
        serving = [w for w in available if info.model in w.models]
        serving = serving or [w for w in available if w.answers_to(info.model)]
        if not serving and len(pool.models()) > 1:
            raise ModelNotServedError(info.model, pool.models())
        serving = serving or available
    untried = [w for w in serving if w not in tried]
    if not untried and tried:
        untried = [w for w in serving if w is not tried[-1]]
    return untried


def apply(pool: WorkerPool, clock: Clock, op: tuple[str, int, object]) -> None:
    name, i, arg = op
    if name == "tick":
        clock.now += float(i)
        return
    url = URLS[i]
    worker = pool.get(url)
    if name == "add" and worker is None:
        pool.add(url)
    elif worker is None:
        return
    elif name == "remove":
        pool.remove(url)
    elif name == "probe":
        if worker.health.record(bool(arg), 2, 2) and worker.health.healthy:
            worker.breaker.reset()
    elif name == "mark_down":
        worker.health.mark_down("refused")
    elif name == "list_models" and isinstance(arg, list):
        worker.list_models(tuple(arg))
    elif name == "adopt":
        view = WorkerHealth(
            url=url, healthy=bool(arg), probed=True, last_error=None, models=["b"], native={}
        )
        adopt(pool, [view])
    elif name == "fail":
        worker.breaker.record_failure(clock.now)
    elif name == "succeed":
        worker.breaker.record_success()
    elif name == "trial" and worker.breaker.allows(clock.now):
        worker.breaker.begin()
    elif name == "end_trial":
        worker.breaker.end_trial()


OPS = st.one_of(
    st.tuples(
        st.sampled_from(["add", "remove", "mark_down", "fail", "succeed", "trial", "end_trial"]),
        st.integers(0, 4),
        st.none(),
    ),
    st.tuples(st.sampled_from(["probe", "adopt"]), st.integers(0, 4), st.booleans()),
    st.tuples(
        st.just("list_models"),
        st.integers(0, 4),
        st.lists(st.sampled_from(MODELS), max_size=2, unique=True),
    ),
    st.tuples(st.just("tick"), st.integers(1, 6), st.none()),
)


def check_index(pool: WorkerPool) -> None:
    """The index holds what the workers' own state says."""
    healthy = {w.url for w in pool if w.health.healthy}
    serving = {m: {w.url for w in pool if w.health.healthy and m in w.models} for m in MODELS}
    unclosed = {w.url for w in pool if w.breaker.state is not BreakerState.CLOSED}
    assert pool._healthy == healthy
    assert {m: pool._serving.get(m, set()) for m in MODELS} == serving
    assert set(pool._serving) <= set(MODELS)
    assert set(pool._unclosed) == unclosed


def check_request(
    pool: WorkerPool, policy: Recording, clock: Clock, info: RequestInfo, tried: list[Worker]
) -> None:
    """The pool offers the policy what a scan finds, found by URL alike, and honours `prefer`."""
    try:
        expected = scanned(pool, info, tried, clock.now)
    except ModelNotServedError:
        with pytest.raises(ModelNotServedError):
            pool.choose(info, tried)
        return
    policy.offered = []
    chosen = pool.choose(info, tried)
    by_url = {w.url: w for w in expected}
    if info.prefer in by_url:
        assert chosen is by_url[info.prefer]
        return
    offered = policy.offered
    assert len(offered) == len(expected)
    assert list(offered) == expected
    for url in [*URLS, "http://127.0.0.1:1"]:
        assert offered.get(url) is by_url.get(url)  # type: ignore[attr-defined]
    assert chosen is fewest_in_flight(expected)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, max_size=40), data=st.data())
def test_the_index_agrees_with_a_scan_after_any_changes(
    ops: list[tuple[str, int, object]], data: st.DataObject
) -> None:
    clock = Clock()
    policy = Recording()
    pool = WorkerPool(HealthConfig(breaker_failures=1, breaker_cooldown=5.0), policy, clock)
    # Most workers up from the start, so the changes drawn have something to take down.
    pool.add_all(URLS[:4])
    for worker, models in zip(pool, (["a"], ["a", "b"], ["b"]), strict=False):
        worker.health.record(True, 2, 2)
        worker.list_models(tuple(models))
    for op in ops:
        apply(pool, clock, op)
        check_index(pool)
        workers = list(pool)
        info = RequestInfo(
            ROUTE,
            model=data.draw(st.sampled_from([None, *MODELS])),
            prefer=data.draw(st.sampled_from([None, *URLS])),
        )
        tried = data.draw(st.lists(st.sampled_from(workers), max_size=3)) if workers else []
        check_request(pool, policy, clock, info, tried)


def test_a_removed_worker_changes_nothing_in_the_pool() -> None:
    clock = Clock()
    pool = WorkerPool(HealthConfig(), Recording(), clock)
    worker = pool.add(URLS[0])
    worker.health.record(True, 2, 2)
    worker.list_models(("a",))
    pool.remove(URLS[0])
    worker.health.mark_down("gone")
    worker.breaker.record_failure(clock.now)
    assert not pool._healthy and not pool._serving and not pool._unclosed
