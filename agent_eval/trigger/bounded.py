"""When to run a full evaluation so that no real change waits longer than a fixed interval would.

Each checkpoint's probe plays samples drawn afresh and compares each outcome with the
one the last full evaluation had on the same sample: an anytime-valid paired test
(metrics.sequential), so the probe stops as soon as the difference is clear, and a clear
change fires a full evaluation at once. Before a change could have waited `max_delay_steps`,
a longer check either rules out a change of `delta` or more (the confidence sequence lies
within +-delta: "cleared", the wait starts again) or fires. So no change of `delta` waits
longer than `max_delay_steps`, but with probability alpha per check. The routine probes of one
such window share alpha between them: the chance of a false alarm in a window is at most
alpha. Where the learning-curve forecast (trigger/forecast) says a change may come before the
window is up, the check comes early.

    trigger = BoundedTrigger(BoundedSettings(delta=0.1, max_delay_steps=100))
    for step in training:
        probe = trigger.probe(step)
        for sample_id in probe.order:
            if probe.add(sample_id, outcome_of(step, sample_id)):
                break
        if trigger.decide(probe).fired:
            trigger.evaluated(step, full_evaluation(step))  # {sample id: outcome in [0, 1]}
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agent_eval.errors import ConfigError
from agent_eval.trigger.adaptive import TriggerError
from agent_eval.trigger.forecast import MIN_POINTS, Forecast, Point, forecast
from agent_eval.trigger.probe import Probe

log = logging.getLogger(__name__)

BoundedReason = Literal["first", "change", "window", "cleared", "none"]
STATE_VERSION = 1


@dataclass(frozen=True)
class BoundedSettings:
    """`delta`: the smallest change worth a full evaluation; `max_delay_steps`: the longest a
    change may wait (the fixed interval this replaces); `probe_size`/`check_size`: the samples
    a probe and a check play at most; `alpha`: the error allowed each comparison; `jitter`:
    how far one checkpoint's accuracy strays from the learning curve's trend (a standard
    deviation), which a check keeps in hand when it rules a change out ahead."""

    delta: float = 0.1
    max_delay_steps: int = 100
    alpha: float = 0.05
    probe_size: int = 50
    check_size: int = 1000
    jitter: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.delta < 1:
            raise ConfigError(f"delta {self.delta} is not between 0 and 1: give e.g. 0.1")
        if self.max_delay_steps < 1:
            raise ConfigError(f"max_delay_steps {self.max_delay_steps} must be at least 1")
        if not 0 < self.alpha < 1:
            raise ConfigError(f"alpha {self.alpha} is not between 0 and 1: give e.g. 0.05")
        if not 0 <= self.jitter < self.delta:
            raise ConfigError(
                f"jitter {self.jitter} must be at least 0 and less than delta {self.delta}: give "
                "e.g. 0.01"
            )
        if not 1 <= self.probe_size <= self.check_size:
            raise ConfigError(
                f"probe_size {self.probe_size} must be at least 1 and at most check_size "
                f"{self.check_size}: a check plays more samples than a routine probe"
            )


@dataclass(frozen=True)
class BoundedDecision:
    """What `decide` made of a probe, with the evidence, for the caller's log.

    `forecast_due`: the step by which the learning-curve forecast says a change of delta may
    have come (a check is played before it), None while it foresees none; `reference_offset`:
    how far a check took the last full evaluation's score to stand off the curve."""

    step: int
    fired: bool
    reason: BoundedReason
    check: bool
    steps_waited: int | None  # since the last full evaluation or all-clear
    comparisons: dict[str, dict[str, Any]]
    forecast_due: int | None
    reference_offset: float = 0.0


class BoundedTrigger:
    """Decides, one probed checkpoint at a time, whether to run a full evaluation now."""

    def __init__(self, settings: BoundedSettings | None = None) -> None:
        self.settings = settings or BoundedSettings()
        self.last_decision: BoundedDecision | None = None
        self._reference: dict[str, float] = {}
        self._best: dict[str, float] = {}
        self._baseline: dict[str, float] = {}  # the first full evaluation
        self._ids: list[str] = []
        self._waiting_since: int | None = None  # the last full evaluation or all-clear
        self._reference_step = 0  # the last full evaluation's
        self._last_step: int | None = None
        self._gap: int | None = None  # steps between the last two checkpoints
        self._points: list[Point] = []  # full evaluations and checks: the curve so far
        self._due: int | None = None

    def probe(self, step: int) -> Probe:
        """The probe to play on the checkpoint of `step`: a check when a change could otherwise
        wait too long, or when the forecast says one may come by the next checkpoint."""
        if self._last_step is not None and step <= self._last_step:
            raise TriggerError(
                f"step {step} is not after the last one probed ({self._last_step}); after a "
                "restart, load the state_dict saved with the checkpoint the job resumes from"
            )
        settings = self.settings
        if self._waiting_since is None:
            return Probe(step, [], False, {}, settings.delta, settings.alpha)
        gap = step - (self._last_step if self._last_step is not None else self._waiting_since)
        check = step - self._waiting_since + gap > settings.max_delay_steps
        check |= self._due is not None and step + gap >= self._due
        alpha = settings.alpha if check else settings.alpha * min(1, gap / settings.max_delay_steps)
        size = min(settings.check_size if check else settings.probe_size, len(self._ids))
        baselines = {"reference": self._reference}
        for name, other in (("baseline", self._baseline), ("best", self._best)):
            if other is not self._reference:
                baselines[name] = other
        # A fresh draw of samples each time: one fixed subset would carry the reference's luck
        # on it into every probe, and the same bias would be tested again and again.
        order = random.Random(f"{settings.seed}/{step}").sample(self._ids, size)
        drift, offset = self._check_bounds(step, gap) if check else ([], 0.0)
        return Probe(step, order, check, baselines, settings.delta, alpha, drift, offset)

    def decide(self, probe: Probe) -> BoundedDecision:
        """Fire on a clear change, or on a check that cannot rule one out; else wait on."""
        if self._last_step is not None:
            self._gap = probe.step - self._last_step
        self._last_step = probe.step
        reason = self._reason(probe)
        waited = None if self._waiting_since is None else probe.step - self._waiting_since
        if probe.check:
            self._points.append(Point(probe.step, probe.score, probe.played))
        if reason == "cleared":
            self._waiting_since = probe.step
            self._due = _earliest(self._foreseen(probe.step), probe.due)
        comparisons = {name: c.to_dict() for name, c in probe.comparisons.items()}
        decision = BoundedDecision(
            probe.step, reason in ("first", "change", "window"), reason, probe.check, waited,
            comparisons, self._due, probe.reference_offset,
        )  # fmt: skip
        self.last_decision = decision
        log.log(logging.INFO if decision.fired else logging.DEBUG, "trigger %s", decision)
        return decision

    def evaluated(self, step: int, outcomes: Mapping[str, float]) -> None:
        """A full evaluation ran at `step`: its outcomes per sample are the new reference."""
        if not outcomes:
            raise TriggerError(
                f"the full evaluation at step {step} gave no scored attempt (every one failed "
                "for the infrastructure: see its run's samples.jsonl); start the watch again once "
                "the workers answer, and it carries on from its saved schedule"
            )
        self._reference = dict(outcomes)
        if not self._best or _mean(self._reference) >= _mean(self._best):
            self._best = self._reference
        self._baseline = self._baseline or self._reference
        self._waiting_since = step
        self._reference_step = step
        self._ids = sorted(self._reference)
        self._points = [p for p in self._points if p.step != step]
        self._points.append(Point(step, _mean(self._reference), len(self._reference)))
        self._due = self._foreseen(step)

    def forecast(self, steps: list[int]) -> Forecast | None:
        """The learning curve's forecast at `steps`, from evaluations and checks so far (None
        before there are MIN_POINTS)."""
        return forecast(self._points, steps) if len(self._points) >= MIN_POINTS else None

    def state_dict(self) -> dict[str, Any]:
        """The schedule as plain JSON-able data, to save with each checkpoint."""

        def unless_reference(outcomes: dict[str, float]) -> dict[str, float] | None:
            return None if outcomes is self._reference else outcomes

        return {
            "version": STATE_VERSION,
            "settings": asdict(self.settings),
            "reference": self._reference,
            "best": unless_reference(self._best),
            "baseline": unless_reference(self._baseline),
            "waiting_since": self._waiting_since,
            "reference_step": self._reference_step,
            "last_step": self._last_step,
            "gap": self._gap,
            "points": [asdict(p) for p in self._points],
            "due": self._due,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume the schedule `state_dict` saved."""
        if state.get("version") != STATE_VERSION or "reference" not in state:
            raise TriggerError(
                f"cannot load bounded trigger state with keys {sorted(state)}: pass the dict "
                f"BoundedTrigger.state_dict() returned (version {STATE_VERSION})"
            )
        self._reference = dict(state["reference"])
        self._best = state["best"] or self._reference
        self._baseline = state["baseline"] or self._reference
        self._ids = sorted(self._reference)
        self._waiting_since = state["waiting_since"]
        # Saved before the key existed: the last point of a full evaluation's size is its own.
        self._reference_step = state.get("reference_step", _evaluated_at(state))
        self._last_step = state["last_step"]
        self._gap = state["gap"]
        self._points = [Point(**p) for p in state["points"]]
        self._due = state["due"]

    def _reason(self, probe: Probe) -> BoundedReason:
        if self._waiting_since is None:
            return "first"
        if probe.check:
            # Cleared when a change of delta is ruled out at least until the next checkpoint;
            # the next check comes before the forecast's drift could bring one.
            due = probe.due
            if due is None or due > probe.step + (self._gap or self.settings.max_delay_steps):
                return "cleared"
            return "change" if probe.moved else "window"
        return "none" if probe.comparisons["reference"].verdict == "not yet known" else "change"

    def _check_bounds(self, step: int, gap: int) -> tuple[list[tuple[int, float, float]], float]:
        """What a check at `step` keeps in hand, from one forecast: the checkpoints it covers
        and how far the curve may move from here by each (the forecast's drift, give or take a
        checkpoint's jitter; the jitter alone while there is no forecast), and the reference's
        offset from the curve."""
        steps = list(range(step, step + self.settings.max_delay_steps + 1, gap))
        ahead = self.forecast([self._reference_step, *steps])
        means = [0.0] * len(steps) if ahead is None else ahead.mean[1:]
        offset = 0.0 if ahead is None else self._reference_offset(ahead.mean[0])
        jitter = self.settings.jitter
        moves = [m - means[0] for m in means[1:]]
        drift = [(s, m - jitter, m + jitter) for s, m in zip(steps[1:], moves, strict=True)]
        return drift, offset

    def _reference_offset(self, fitted: float) -> float:
        """How far the last full evaluation's score stands from the learning curve fitted
        through it and the checks around it (`fitted` there): at most two of its standard
        deviations (its sampling and a checkpoint's jitter), so one lucky evaluation does not
        set the baseline for hundreds of steps, and one poor fit does not undo a check."""
        score, jitter = _mean(self._reference), self.settings.jitter
        bound = 2 * math.sqrt(jitter**2 + score * (1 - score) / len(self._reference))
        return max(-bound, min(bound, score - fitted))

    def _foreseen(self, now: int) -> int | None:
        """The first step within max_delay_steps where the forecast's band reaches a change of
        delta from the reference: where the curve is least sure to have stayed put."""
        gap = self._gap or self.settings.max_delay_steps
        steps = list(range(now + gap, now + self.settings.max_delay_steps + 1, gap))
        ahead = self.forecast(steps)
        if ahead is None:
            return None
        reference, delta = _mean(self._reference), self.settings.delta
        for step, low, high in zip(ahead.steps, ahead.low, ahead.high, strict=True):
            if high >= reference + delta or low <= reference - delta:
                return step
        return None


def _evaluated_at(state: Mapping[str, Any]) -> int:
    size = len(state["reference"])
    return max((p["step"] for p in state["points"] if p["samples"] == size), default=0)


def _earliest(*steps: int | None) -> int | None:
    return min((s for s in steps if s is not None), default=None)


def _mean(outcomes: Mapping[str, float]) -> float:
    return sum(outcomes.values()) / len(outcomes)
