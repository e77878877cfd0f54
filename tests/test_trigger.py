"""The adaptive evaluation trigger on synthetic signals: thresholds, windows, gaps, restarts."""

from __future__ import annotations

import json
import logging
import math
import random

import pytest

from agent_eval.errors import ConfigError
from agent_eval.trigger import AdaptiveTrigger, Decision, TriggerError, probe_threshold


class FakeClock:
    """A clock the test moves by hand, so time windows need no sleeping."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def reasons(trigger: AdaptiveTrigger, values: list[float | None], every: int = 10) -> list[str]:
    """Observe `values` at steps 0, every, 2*every, ...; the reason of each decision."""
    out = []
    for i, value in enumerate(values):
        trigger.observe(i * every, value)
        assert trigger.last_decision is not None
        out.append(trigger.last_decision.reason)
    return out


def test_the_first_observation_fires_and_sets_the_reference() -> None:
    trigger = AdaptiveTrigger(0.25, alpha=1.0)
    assert trigger.last_decision is None
    assert trigger.observe(0, 0.5)
    assert trigger.last_decision == Decision(0, True, "first", 0.5, None, None, None, None)
    assert not trigger.observe(10, 0.5)
    decision = trigger.last_decision
    assert decision is not None
    assert (decision.reason, decision.reference, decision.change) == ("none", 0.5, 0.0)
    assert decision.steps_since_eval == 10


def test_a_move_of_the_threshold_fires_either_way_and_becomes_the_reference() -> None:
    trigger = AdaptiveTrigger(0.25, alpha=1.0)
    values = [0.5, 0.625, 0.75, 0.75, 0.5, 0.375]
    assert reasons(trigger, values) == ["first", "none", "change", "none", "change", "none"]
    trigger.observe(60, 0.0)
    assert trigger.last_decision is not None
    assert (trigger.last_decision.reason, trigger.last_decision.change) == ("change", -0.5)


def test_smoothing_ignores_one_outlier_but_follows_a_lasting_move() -> None:
    trigger = AdaptiveTrigger(0.25, alpha=0.5)
    assert reasons(trigger, [0.0, 0.375, 0.0, 0.0]) == ["first", "none", "none", "none"]
    # A lasting move to 0.5: the average reaches 0.25, then 0.375 (the threshold)
    trigger = AdaptiveTrigger(0.375, alpha=0.5)
    assert reasons(trigger, [0.0, 0.5, 0.5, 0.5]) == ["first", "none", "change", "none"]
    assert trigger.last_decision is not None
    assert trigger.last_decision.smoothed == 0.4375


def test_the_step_window_fires_and_restarts_after_any_evaluation() -> None:
    trigger = AdaptiveTrigger(0.5, alpha=1.0, max_steps=30)
    flat = reasons(trigger, [0.0] * 7)
    assert flat == ["first", "none", "none", "window_steps", "none", "none", "window_steps"]
    trigger = AdaptiveTrigger(0.5, alpha=1.0, max_steps=30)
    moved = reasons(trigger, [0.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5])
    assert moved == ["first", "none", "change", "none", "none", "window_steps", "none"]


def test_without_a_value_only_the_windows_apply() -> None:
    trigger = AdaptiveTrigger(None, max_steps=20)
    assert reasons(trigger, [None, None, None, None]) == ["first", "none", "window_steps", "none"]


def test_the_time_window_uses_the_clock() -> None:
    clock = FakeClock(1000.0)
    trigger = AdaptiveTrigger(None, max_seconds=60.0, clock=clock)
    assert trigger.observe(0)
    clock.now += 59.0
    assert not trigger.observe(1)
    clock.now += 1.0
    assert trigger.observe(1)
    assert trigger.last_decision is not None
    assert (trigger.last_decision.reason, trigger.last_decision.seconds_since_eval) == (
        "window_time",
        60.0,
    )
    assert not trigger.observe(2)


def test_the_minimum_gap_in_steps_holds_a_change_until_it_has_passed() -> None:
    trigger = AdaptiveTrigger(0.5, alpha=1.0, min_gap_steps=30)
    assert reasons(trigger, [0.0, 1.0, 1.0, 1.0, 1.0]) == ["first", "gap", "gap", "change", "none"]
    # A spike that is gone before the gap has passed never fires
    trigger = AdaptiveTrigger(0.5, alpha=1.0, min_gap_steps=30)
    assert reasons(trigger, [0.0, 1.0, 0.0, 0.0, 0.0]) == ["first", "gap", "none", "none", "none"]


def test_the_minimum_gap_in_seconds_holds_a_change_until_it_has_passed() -> None:
    clock = FakeClock()
    trigger = AdaptiveTrigger(0.5, alpha=1.0, min_gap_seconds=300.0, clock=clock)
    trigger.observe(0, 0.0)
    clock.now = 299.0
    assert not trigger.observe(1, 1.0)
    clock.now = 300.0
    assert trigger.observe(2, 1.0)


def test_a_value_after_an_evaluation_without_one_becomes_the_reference() -> None:
    trigger = AdaptiveTrigger(0.25, alpha=1.0)
    assert reasons(trigger, [None, 0.5, 0.5, 0.75]) == ["first", "none", "none", "change"]


def test_a_value_that_is_not_finite_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    trigger = AdaptiveTrigger(0.25, alpha=0.5, max_steps=20)
    with caplog.at_level(logging.WARNING, logger="agent_eval.trigger.adaptive"):
        assert reasons(trigger, [0.5, math.nan, math.inf]) == ["first", "none", "window_steps"]
    assert "step 10: signal value nan is not finite" in caplog.text
    assert trigger.last_decision is not None
    assert trigger.last_decision.smoothed == 0.5


def test_a_step_before_the_last_evaluation_is_refused() -> None:
    trigger = AdaptiveTrigger(0.25)
    trigger.observe(100, 0.5)
    trigger.observe(100, 0.5)  # the same step again is fine
    with pytest.raises(TriggerError, match="step 90 is before the last evaluation at step 100"):
        trigger.observe(90, 0.5)


def noisy_signal(seed: int, n: int) -> list[float | None]:
    """A 50-item probe at 0.6 that steps to 0.8 halfway, with a few missing values."""
    rng = random.Random(seed)
    signal: list[float | None] = []
    for i in range(n):
        p = 0.6 if i < n // 2 else 0.8
        value = sum(rng.random() < p for _ in range(50)) / 50
        signal.append(None if i % 7 == 3 else value)
    return signal


def seconds_per_step(i: int) -> float:
    """Slow steps first, so the time window fires before the step window; fast ones after."""
    return 7.0 if i < 40 else 2.0


def test_a_saved_state_resumes_the_same_schedule_after_a_restart() -> None:
    def make(clock: FakeClock) -> AdaptiveTrigger:
        return AdaptiveTrigger(
            0.07, max_steps=200, max_seconds=100.0, min_gap_steps=60, clock=clock
        )

    signal = noisy_signal(seed=1, n=120)
    clock = FakeClock(5000.0)
    straight = make(clock)
    expected: list[Decision | None] = []
    for i, value in enumerate(signal):
        clock.now += seconds_per_step(i)
        straight.observe(i * 10, value)
        expected.append(straight.last_decision)
    seen = {d.reason for d in expected if d}
    assert seen >= {"first", "change", "gap", "window_steps", "window_time"}

    clock = FakeClock(5000.0)
    job = make(clock)
    resumed: list[Decision | None] = []
    for i, value in enumerate(signal):
        if i == 60:  # the job dies after step 590; a new process with its own clock resumes
            saved = json.loads(json.dumps(job.state_dict()))
            clock = FakeClock(-123.0)
            job = make(clock)
            job.load_state_dict(saved)
        clock.now += seconds_per_step(i)
        job.observe(i * 10, value)
        resumed.append(job.last_decision)
    assert resumed == expected


def test_time_while_the_job_is_down_does_not_count() -> None:
    clock = FakeClock(100.0)
    trigger = AdaptiveTrigger(None, max_seconds=60.0, clock=clock)
    trigger.observe(0)
    clock.now += 50.0
    state = trigger.state_dict()
    assert state["seconds_since_eval"] == 50.0
    later = FakeClock(10.0)  # a new process: its clock has nothing to do with the old one
    restarted = AdaptiveTrigger(None, max_seconds=60.0, clock=later)
    restarted.load_state_dict(state)
    later.now = 19.0
    assert not restarted.observe(1)
    later.now = 20.0  # ten seconds of training after the restart
    assert restarted.observe(1)


def test_a_fresh_state_loads_and_still_fires_first() -> None:
    state = AdaptiveTrigger(0.25).state_dict()
    assert state == {
        "version": 1,
        "eval_step": None,
        "seconds_since_eval": None,
        "smoothed": None,
        "reference": None,
    }
    trigger = AdaptiveTrigger(0.25)
    trigger.load_state_dict(state)
    assert trigger.observe(0, 0.5)


@pytest.mark.parametrize(
    "state",
    [
        {"eval_step": 10},
        {
            "version": 2,
            "eval_step": 10,
            "seconds_since_eval": 1.0,
            "smoothed": 0.5,
            "reference": 0.5,
        },
    ],
)
def test_a_state_from_elsewhere_is_refused(state: dict[str, object]) -> None:
    with pytest.raises(TriggerError, match=r"pass the dict that AdaptiveTrigger.state_dict\(\)"):
        AdaptiveTrigger(0.25).load_state_dict(state)


@pytest.mark.parametrize(
    ("kwargs", "hint"),
    [
        ({"threshold": -0.1}, "threshold must be a positive number, got -0.1"),
        ({"threshold": 0.0}, "threshold must be a positive number"),
        ({"threshold": math.nan}, "threshold must be a positive number"),
        ({"threshold": 0.1, "alpha": 0.0}, r"alpha must be in \(0, 1\], got 0.0"),
        ({"threshold": 0.1, "alpha": 1.5}, r"alpha must be in \(0, 1\]"),
        ({"threshold": None}, "pass a threshold, max_steps or max_seconds"),
        ({"threshold": 0.1, "max_steps": 0}, "max_steps must be at least 1"),
        ({"threshold": 0.1, "max_seconds": 0.0}, "max_seconds must be positive"),
        ({"threshold": 0.1, "min_gap_steps": -1}, "minimum gaps cannot be negative"),
        ({"threshold": 0.1, "min_gap_seconds": -1.0}, "minimum gaps cannot be negative"),
        (
            {"threshold": 0.1, "max_steps": 50, "min_gap_steps": 50},
            r"min_gap_steps \(50\) must be below max_steps \(50\)",
        ),
        (
            {"threshold": 0.1, "max_seconds": 60.0, "min_gap_seconds": 90.0},
            r"min_gap_seconds \(90.0\) must be below max_seconds \(60.0\)",
        ),
    ],
)
def test_bad_settings_say_what_to_pass(kwargs: dict[str, float | None], hint: str) -> None:
    with pytest.raises(ConfigError, match=hint):
        AdaptiveTrigger(**kwargs)  # type: ignore[arg-type]


def test_probe_threshold_scales_the_standard_error() -> None:
    # A standard error of sqrt(0.5 * 0.5 / 50) = 0.0707; a change compares two noisy values
    assert probe_threshold(0.5, 50, alpha=1.0, z=3.0) == pytest.approx(3 * 0.0707 * 2**0.5, 1e-3)
    smoothed = probe_threshold(0.5, 50, alpha=0.2, z=3.0)
    assert smoothed == pytest.approx(0.3 * math.sqrt(0.2 / 1.8))
    assert probe_threshold(0.9, 50) < probe_threshold(0.5, 50) < probe_threshold(0.5, 20)


@pytest.mark.parametrize(
    ("args", "kwargs", "hint"),
    [
        ((1.0, 50), {}, "pass the probe's expected accuracy, or 0.5"),
        ((0.5, 0), {}, "samples must be at least 1"),
        ((0.5, 50), {"alpha": 0.0}, r"alpha must be in \(0, 1\]"),
        ((0.5, 50), {"z": 0.0}, "z must be positive"),
    ],
)
def test_probe_threshold_refuses_bad_arguments(
    args: tuple[float, int], kwargs: dict[str, float], hint: str
) -> None:
    with pytest.raises(ConfigError, match=hint):
        probe_threshold(*args, **kwargs)


def test_a_probe_threshold_rides_out_noise_and_catches_a_real_change() -> None:
    threshold = probe_threshold(0.6, 50)  # 0.098 with the default alpha
    signal = noisy_signal(seed=7, n=400)
    trigger = AdaptiveTrigger(threshold, min_gap_steps=30)
    fired = [i for i, value in enumerate(signal) if trigger.observe(i * 10, value)]
    before, after = [i for i in fired if i < 200], [i for i in fired if i >= 200]
    assert before[0] == 0 and len(before) <= 2  # the first evaluation, at most one false alarm
    assert after and after[0] - 200 <= 10  # the +0.2 step caught within ten observations
