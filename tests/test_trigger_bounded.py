"""The delay-bounded trigger on scripted checkpoints: a clear change fires at once, a check
either clears or fires before a change could wait too long, and the state survives a restart."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from agent_eval.errors import ConfigError
from agent_eval.run.config import load_run_config
from agent_eval.trigger import TriggerError
from agent_eval.trigger.bounded import BoundedDecision, BoundedSettings, BoundedTrigger
from agent_eval.trigger.probe import Probe

ITEMS = 1000
SETTINGS = BoundedSettings(delta=0.1, max_delay_steps=100, probe_size=50, check_size=1000)


class Model:
    """A checkpoint that answers each item right with its own fixed chance: items with chance
    0 or 1 agree across checkpoints, as easy and hard items do."""

    def __init__(self, accuracy: float, seed: int = 0) -> None:
        rng = random.Random(seed)
        self.right = {str(i): rng.random() < accuracy for i in range(ITEMS)}

    def outcomes(self) -> dict[str, float]:
        return {item: float(right) for item, right in self.right.items()}


def step_through(trigger: BoundedTrigger, step: int, model: Model) -> BoundedDecision:
    """Probe the checkpoint of `step`; run its full evaluation if the trigger fires."""
    probe = trigger.probe(step)
    for item in probe.order:
        if probe.add(item, float(model.right[item])):
            break
    decision = trigger.decide(probe)
    if decision.fired:
        trigger.evaluated(step, model.outcomes())
    return decision


def test_the_first_checkpoint_is_evaluated_without_a_probe() -> None:
    trigger = BoundedTrigger(SETTINGS)
    probe = trigger.probe(0)
    assert probe.order == [] and probe.finished
    assert trigger.decide(probe).reason == "first"


def test_a_clear_change_fires_at_once_and_says_which_way() -> None:
    trigger = BoundedTrigger(SETTINGS)
    step_through(trigger, 0, Model(0.3))
    decision = step_through(trigger, 10, Model(0.9, seed=1))
    assert (decision.fired, decision.reason, decision.check) == (True, "change", False)
    evidence = decision.comparisons["reference"]
    assert evidence["verdict"] == "better" and evidence["pairs"] <= SETTINGS.probe_size
    assert evidence["low"] > 0 and evidence["evidence"] >= 1 / evidence["alpha"]


def test_no_change_is_cleared_at_the_check_and_the_wait_starts_again() -> None:
    trigger, model = BoundedTrigger(SETTINGS), Model(0.6)
    reasons = [step_through(trigger, step, model).reason for step in range(0, 310, 10)]
    # The same answers: probes find nothing, each check before 100 steps clears.
    assert reasons[0] == "first"
    assert [i * 10 for i, r in enumerate(reasons) if r == "cleared"] == [100, 200, 300]
    assert set(reasons[1:]) == {"none", "cleared"}


def test_a_check_that_cannot_rule_a_change_out_fires() -> None:
    trigger = BoundedTrigger(SETTINGS)
    step_through(trigger, 0, Model(0.5))
    # 0.57 against 0.5, other answers on a quarter of the items: no probe of 50 is sure of it,
    # and the check cannot say it is below 0.1 either.
    drifted = Model(0.5)
    rng = random.Random(3)
    for item in rng.sample(sorted(drifted.right), 250):
        drifted.right[item] = rng.random() < 0.78
    reasons = [step_through(trigger, step, drifted).reason for step in range(10, 110, 10)]
    assert reasons[-1] in ("window", "change") and set(reasons[:-1]) <= {"none", "change"}
    assert step_through(trigger, 110, drifted).steps_waited == 10


def probed(drift: list[tuple[int, float, float]]) -> Probe:
    """A check at step 100 whose 1,000 pairs put it 0.05 above the reference (0.6 against 0.55,
    other answers on a tenth of the items)."""
    reference = {str(i): float(i % 20 < 11) for i in range(ITEMS)}
    probe = Probe(100, sorted(reference), True, {"reference": reference}, 0.1, 0.05, drift)
    for item in probe.order:
        probe.add(item, float(int(item) % 20 < 12))
    return probe


def test_a_check_rules_a_change_out_only_as_far_ahead_as_the_drift_allows() -> None:
    still = probed([(step, 0.0, 0.0) for step in range(110, 210, 10)])
    state = still.comparisons["reference"]
    assert state.low > 0 and state.high < 0.1  # 0.05 now, a change of 0.1 ruled out
    assert still.cleared and still.due is None
    # The forecast climbs 0.01 every 10 steps: the comparison's upper bound moved by the climb
    # reaches delta a few checkpoints ahead; that is when the next check is due.
    climbing = probed([(step, 0.0, (step - 100) / 1000) for step in range(110, 210, 10)])
    expected = next(s for s in range(110, 210, 10) if state.high + (s - 100) / 1000 >= 0.1)
    assert not climbing.cleared and climbing.due == expected < 200
    # A fall (0.02 every 10 steps) is checked against the lower bound.
    falling = probed([(step, -(step - 100) / 500, 0.0) for step in range(110, 210, 10)])
    assert falling.due == next(
        s for s in range(110, 210, 10) if state.low - (s - 100) / 500 <= -0.1
    )


@pytest.mark.parametrize(("jitter", "reason"), [(0.0, "cleared"), (0.045, "window")])
def test_a_check_keeps_a_checkpoints_jitter_in_hand(jitter: float, reason: str) -> None:
    """0.05 above the evaluation (other answers on a twentieth of the items): a change of 0.1
    ruled out when checkpoints hold to the curve, not when one may stray 0.045 from it."""
    trigger = BoundedTrigger(BoundedSettings(delta=0.1, max_delay_steps=100, jitter=jitter))
    evaluated, now = Model(0.6), Model(0.6)
    evaluated.right = {str(i): i % 20 < 11 for i in range(ITEMS)}
    now.right = {str(i): i % 20 < 12 for i in range(ITEMS)}
    step_through(trigger, 0, evaluated)
    decisions = [step_through(trigger, step, now) for step in range(10, 110, 10)]
    check = decisions[-1]
    assert {d.reason for d in decisions[:-1]} == {"none"}
    assert check.check and check.reason == reason
    assert check.comparisons["reference"]["high"] + 0.045 >= 0.1


@pytest.mark.parametrize(("before", "reason"), [(0.54, "cleared"), (0.49, "window")])
def test_a_check_allows_for_an_evaluation_off_the_curve(before: float, reason: str) -> None:
    """The evaluation at 300 scored 0.54; checks every 10 steps around it scored `before`. On
    their curve, a checkpoint 0.06 above the evaluation is cleared; 0.05 above the curve, the
    evaluation was lucky (its offset, at most two standard deviations, is kept in hand) and
    the checkpoint may be delta above the curve: it fires."""
    trigger = BoundedTrigger(SETTINGS)
    evaluated, now = Model(0.6), Model(0.6)
    evaluated.right = {str(i): i % 50 < 27 for i in range(ITEMS)}
    now.right = {str(i): i % 50 < 30 for i in range(ITEMS)}
    step_through(trigger, 300, evaluated)
    state = trigger.state_dict()
    around = [*range(0, 300, 10), 350]
    state["points"] = [{"step": s, "score": before, "samples": ITEMS} for s in around]
    state["points"] += [{"step": 300, "score": 0.54, "samples": ITEMS}]
    trigger.load_state_dict(state)
    decisions = [step_through(trigger, step, now) for step in range(310, 410, 10)]
    check = decisions[-1]
    assert check.check and check.reason == reason
    bound = 2 * (SETTINGS.jitter**2 + 0.54 * 0.46 / ITEMS) ** 0.5
    assert -1e-9 <= check.reference_offset <= bound
    assert check.reference_offset > 0.02 if before < 0.54 else check.reference_offset < 0.001


def test_the_first_and_the_best_evaluations_are_compared_too() -> None:
    """Every checkpoint a check (max_delay_steps 10), so each plays on until it clears."""
    trigger = BoundedTrigger(dataclasses.replace(SETTINGS, max_delay_steps=10))
    step_through(trigger, 0, Model(0.5))
    step_through(trigger, 10, Model(0.9, seed=1))  # better, evaluated: the best so far
    step_through(trigger, 20, Model(0.2, seed=2))  # a collapse, evaluated: the new reference
    decision = step_through(trigger, 30, Model(0.2, seed=2))
    assert decision.comparisons["reference"]["verdict"] == "not yet known"
    assert decision.comparisons["best"]["verdict"] == "worse"
    assert decision.comparisons["baseline"]["verdict"] == "worse"
    assert (
        decision.comparisons["baseline"]["difference"] > decision.comparisons["best"]["difference"]
    )


def test_the_schedule_survives_a_restart() -> None:
    trigger, model = BoundedTrigger(SETTINGS), Model(0.6)
    for step in range(0, 60, 10):
        step_through(trigger, step, model)
    saved = json.loads(json.dumps(trigger.state_dict()))
    again = BoundedTrigger(SETTINGS)
    again.load_state_dict(saved)
    assert again.state_dict() == saved
    # The check still comes 100 steps after the evaluation at 0, not after the restart.
    assert [step_through(again, s, model).check for s in (60, 70, 80, 90, 100)] == [
        False, False, False, False, True,
    ]  # fmt: skip
    with pytest.raises(TriggerError, match="not after the last one probed"):
        again.probe(100)
    with pytest.raises(TriggerError, match="state_dict"):
        BoundedTrigger(SETTINGS).load_state_dict({"version": 0})


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"delta": 0}, "delta 0 is not between 0 and 1"),
        ({"max_delay_steps": 0}, "max_delay_steps 0 must be at least 1"),
        ({"alpha": 1.0}, "alpha 1.0 is not between 0 and 1"),
        ({"probe_size": 600, "check_size": 500}, "at most check_size 500"),
    ],
)
def test_settings_out_of_range_are_refused(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BoundedSettings(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (["watch.threshold=0.1"], "watch.threshold only applies with watch.trigger=threshold"),
        (
            ["watch.trigger=threshold", "watch.delta=0.2", "watch.check_size=9"],
            "watch.check_size, watch.delta only applies with watch.trigger=bounded",
        ),
        (["watch.jitter=0.2"], r"watch.jitter 0.2 must be less than watch.delta 0.1: give e"),
    ],
)
def test_a_setting_of_the_other_trigger_is_refused(settings: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_run_config(None, {}, settings)
