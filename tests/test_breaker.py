"""Circuit breaker and probe hysteresis on their own."""

from __future__ import annotations

from agent_eval.proxy.fleet.breaker import BreakerState, CircuitBreaker
from agent_eval.proxy.fleet.worker import HealthRecord


def test_breaker_opens_at_threshold_and_half_opens_after_cooldown() -> None:
    breaker = CircuitBreaker(failure_threshold=3, cooldown=10.0)
    for t in range(2):
        breaker.record_failure(now=t)
    assert breaker.allows(2.0)
    breaker.record_failure(now=2.0)
    assert breaker.state is BreakerState.OPEN
    assert not breaker.allows(11.9)
    assert breaker.allows(12.0)
    assert breaker.state is BreakerState.HALF_OPEN


def test_half_open_lets_one_trial_through_and_closes_on_success() -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown=1.0)
    breaker.record_failure(now=0.0)
    assert breaker.allows(1.0)
    assert breaker.begin()
    assert not breaker.allows(1.1), "a second request went through during the trial"
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.allows(1.2)


def test_half_open_trial_failure_reopens() -> None:
    breaker = CircuitBreaker(failure_threshold=5, cooldown=1.0)
    for _ in range(5):
        breaker.record_failure(now=0.0)
    assert breaker.allows(1.0)
    assert breaker.begin()
    breaker.record_failure(now=1.0)
    assert breaker.state is BreakerState.OPEN
    assert not breaker.allows(1.5)


def test_success_resets_the_failure_count() -> None:
    breaker = CircuitBreaker(failure_threshold=2, cooldown=1.0)
    breaker.record_failure(now=0.0)
    breaker.record_success()
    breaker.record_failure(now=0.0)
    assert breaker.state is BreakerState.CLOSED


def test_first_probe_decides_then_thresholds_apply() -> None:
    health = HealthRecord()
    assert health.record(True, failure_threshold=2, success_threshold=3)
    assert health.healthy
    assert not health.record(False, 2, 3)
    assert health.healthy, "one failure under a threshold of 2 marked the worker down"
    assert health.record(False, 2, 3)
    assert not health.healthy
    health.record(True, 2, 3)
    health.record(True, 2, 3)
    assert not health.healthy
    assert health.record(True, 2, 3)
    assert health.healthy


def test_passive_mark_down_needs_probes_to_come_back() -> None:
    health = HealthRecord()
    health.record(True, 1, 2)
    health.mark_down("connection refused")
    assert not health.healthy
    health.record(True, 1, 2)
    assert not health.healthy
    health.record(True, 1, 2)
    assert health.healthy


def test_trial_without_verdict_lets_another_through() -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown=1.0)
    breaker.record_failure(now=0.0)
    assert breaker.allows(1.0) and breaker.begin()
    assert not breaker.allows(1.0)
    breaker.end_trial()  # the trial's client left before the worker answered
    assert breaker.allows(1.0)
    assert not CircuitBreaker(1, 1.0).begin(), "a closed breaker has no trials"
