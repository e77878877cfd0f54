"""Routing policies on their own: which worker each one picks."""

from __future__ import annotations

import collections
import math
import random
from collections.abc import Sequence
from typing import Literal

from agent_eval.proxy.config import HealthConfig
from agent_eval.proxy.fleet.pool import WorkerPool
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.policies import RequestInfo
from agent_eval.proxy.policies.least_requests import LeastRequests
from agent_eval.proxy.policies.power_of_two import PowerOfTwo
from agent_eval.proxy.policies.round_robin import RoundRobin
from agent_eval.proxy.policies.session import SessionAffinity
from tests.helpers.policies import make_workers, plain_ring_owners


def session_policy(workers: list[Worker], **kwargs: float) -> SessionAffinity:
    policy = SessionAffinity(**kwargs)
    policy.on_workers_changed([w.url for w in workers])
    return policy


def info(key: str | None = None) -> RequestInfo:
    return RequestInfo("/v1/chat/completions", session_key=key)


def test_round_robin_cycles_through_every_worker() -> None:
    workers = make_workers(3)
    policy = RoundRobin()
    picks = [policy.choose(workers, info()).url for _ in range(6)]
    assert picks == [w.url for w in workers] * 2


def test_least_requests_picks_fewest_in_flight() -> None:
    workers = make_workers(3)
    workers[0].in_flight, workers[1].in_flight, workers[2].in_flight = 4, 1, 2
    assert LeastRequests().choose(workers, info()) is workers[1]


def test_power_of_two_never_picks_the_busiest_of_its_pair() -> None:
    workers = make_workers(4)
    for load, worker in enumerate(workers):
        worker.in_flight = load * 10
    policy = PowerOfTwo(random.Random(7))
    picks = collections.Counter(policy.choose(workers, info()).url for _ in range(400))
    assert workers[3].url not in picks  # the busiest loses every pair it is in
    assert picks[workers[0].url] > picks[workers[2].url]


def test_policies_return_none_without_candidates() -> None:
    for policy in (RoundRobin(), LeastRequests(), PowerOfTwo(), SessionAffinity()):
        assert policy.choose([], info("k")) is None


def test_session_sticks_to_one_worker() -> None:
    workers = make_workers(4)
    policy = session_policy(workers)
    first = {f"s{i}": policy.choose(workers, info(f"s{i}")) for i in range(20)}
    for _ in range(3):
        for key, worker in first.items():
            assert policy.choose(workers, info(key)) is worker


def test_session_without_key_goes_to_least_requests() -> None:
    workers = make_workers(2)
    workers[0].in_flight = 3
    assert session_policy(workers).choose(workers, info(None)) is workers[1]


def test_session_moves_only_when_its_worker_leaves_the_candidates() -> None:
    workers = make_workers(3)
    policy = session_policy(workers)
    homes = {f"s{i}": policy.choose(workers, info(f"s{i}")) for i in range(30)}
    dead = workers[0]
    alive = workers[1:]
    for key, home in homes.items():
        now = policy.choose(alive, info(key))
        if home is dead:
            assert now is not dead
        else:
            assert now is home, f"{key} moved from a healthy worker"


def test_bounded_load_holds_with_skewed_keys() -> None:
    workers = make_workers(4)
    policy = session_policy(workers, balance_factor=1.25)
    # Keys chosen so that plain consistent hashing would put all of them on one worker.
    target = workers[0]
    urls = [w.url for w in workers]
    candidates = [f"hot-{i}" for i in range(5000)]
    owners = plain_ring_owners(urls, candidates)
    skewed = [key for key, owner in zip(candidates, owners, strict=True) if owner == target.url]
    keys = skewed[:200]
    assert len(keys) == 200  # the skew is real: all these keys hash to one worker
    for key in keys:
        policy.choose(workers, info(key))
    bound = math.ceil(1.25 * len(keys) / len(workers))
    loads = [policy.sessions_on(w.url) for w in workers]
    assert sum(loads) == len(keys)
    assert max(loads) <= bound, loads


def test_a_new_session_goes_to_the_idlest_worker_under_the_session_bound() -> None:
    workers = make_workers(3)
    policy = session_policy(workers, balance_factor=1.0)
    for key, worker in (("a", workers[0]), ("b", workers[0]), ("c", workers[1])):
        policy.pin(key, worker.url)
    for load, worker in zip((0, 1, 2), workers, strict=True):
        worker.in_flight = load
    urls = [w.url for w in workers]
    key = next(
        k for k in (f"k{i}" for i in range(1000)) if plain_ring_owners(urls, [k]) == [urls[2]]
    )
    # w0 is idle but holds ceil(1.0 * 4 / 3) = 2 sessions; w2 is where the key hashes.
    assert policy.choose(workers, info(key)) is workers[1]


def test_bounded_load_bound_counts_live_sessions_only() -> None:
    now = [0.0]
    workers = make_workers(2)
    policy = session_policy(workers, ttl=10.0, clock=lambda: now[0])
    for i in range(10):
        policy.choose(workers, info(f"old-{i}"))
    now[0] = 100.0  # every old session has expired
    policy.choose(workers, info("fresh"))
    assert sum(policy.sessions_on(w.url) for w in workers) == 1


def test_retry_detour_does_not_move_the_session() -> None:
    workers = make_workers(2)
    policy = session_policy(workers)
    home = policy.choose(workers, info("s"))
    other = next(w for w in workers if w is not home)
    detour = RequestInfo("/v1/chat/completions", session_key="s", detour_from=frozenset({home.url}))
    assert policy.choose([other], detour) is other
    assert policy.choose(workers, info("s")) is home


def test_ring_placement_places_a_session_alike_whatever_the_loads() -> None:
    # Two proxy processes see different loads; by the ring alone both place each session alike.
    workers = make_workers(3)
    keys = [f"s{i}" for i in range(30)]

    def placed(placement: Literal["idlest", "ring"]) -> list[list[Worker | None]]:
        seen = []
        for loads in ((0, 5, 9), (9, 0, 5)):
            policy = SessionAffinity(placement=placement)
            policy.on_workers_changed([w.url for w in workers])
            for load, worker in zip(loads, workers, strict=True):
                worker.in_flight = load
            seen.append([policy.choose(workers, info(key)) for key in keys])
        return seen

    by_ring, by_load = placed("ring"), placed("idlest")
    assert by_ring[0] == by_ring[1]
    assert by_load[0] != by_load[1]  # the idlest placement follows each process's loads


def test_a_ring_changed_worker_by_worker_places_keys_as_one_built_at_once() -> None:
    workers = make_workers(12)
    urls = [w.url for w in workers]
    policy = SessionAffinity(placement="ring")
    for end in range(1, len(urls) + 1):
        policy.on_workers_changed(urls[:end])
    kept = [url for i, url in enumerate(urls) if i % 3]
    policy.on_workers_changed(kept)
    policy.on_workers_changed([*kept, urls[0]])
    final = [*kept, urls[0]]
    keys = [f"k{i}" for i in range(200)]
    candidates = [w for w in workers if w.url in final]
    placed = [policy.choose(candidates, info(key)) for key in keys]
    assert [w.url for w in placed if w is not None] == plain_ring_owners(final, keys)


def test_a_pool_tells_its_policy_of_its_first_workers_once() -> None:
    heard: list[list[str]] = []

    class Listening(RoundRobin):
        def on_workers_changed(self, urls: Sequence[str]) -> None:
            heard.append(list(urls))

    pool = WorkerPool(HealthConfig(), Listening())
    pool.add_all(["http://127.0.0.1:9001", "http://127.0.0.1:9002/v1/"])
    pool.add("http://127.0.0.1:9003")
    assert heard == [
        ["http://127.0.0.1:9001", "http://127.0.0.1:9002"],
        ["http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003"],
    ]
