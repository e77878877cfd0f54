"""When to run a full evaluation so that no real change waits longer than a fixed interval would.

Each checkpoint's probe plays samples drawn afresh and compares each outcome with the
one the last full evaluation had on the same sample: an anytime-valid paired test
(metrics.sequential), so the probe stops as soon as the difference is clear, and a clear
change fires a full evaluation at once. Before a change could have waited `max_delay_steps`,
a longer check either rules out a change of `delta` or more (the confidence sequence lies
within +-delta: "cleared", the wait starts again) or fires. So no change of `delta` waits
longer than `max_delay_steps`, but with probability alpha per check. The routine probes of one
such window share alpha between them, so a false alarm comes at most once per window in
1/alpha.

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
import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from agent_eval.errors import ConfigError
from agent_eval.metrics.sequential import Comparison, SequentialComparison
from agent_eval.trigger.adaptive import TriggerError

log = logging.getLogger(__name__)

BoundedReason = Literal["first", "change", "window", "cleared", "none"]
STATE_VERSION = 1


@dataclass(frozen=True)
class BoundedSettings:
    """`delta`: the smallest change worth a full evaluation; `max_delay_steps`: the longest a
    change may wait (the fixed interval this replaces); `probe_size`/`check_size`: the samples
    a probe and a check play at most; `alpha`: the error allowed each comparison."""

    delta: float = 0.1
    max_delay_steps: int = 100
    alpha: float = 0.05
    probe_size: int = 50
    check_size: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.delta < 1:
            raise ConfigError(f"delta {self.delta} is not between 0 and 1: give e.g. 0.1")
        if self.max_delay_steps < 1:
            raise ConfigError(f"max_delay_steps {self.max_delay_steps} must be at least 1")
        if not 0 < self.alpha < 1:
            raise ConfigError(f"alpha {self.alpha} is not between 0 and 1: give e.g. 0.05")
        if not 1 <= self.probe_size <= self.check_size:
            raise ConfigError(
                f"probe_size {self.probe_size} must be at least 1 and at most check_size "
                f"{self.check_size}: a check plays more samples than a routine probe"
            )


class Probe:
    """One checkpoint's probe: the samples to play, in order, and the comparisons they feed."""

    def __init__(
        self,
        step: int,
        order: list[str],
        check: bool,
        baselines: Mapping[str, Mapping[str, float]],
        settings: BoundedSettings,
        alpha: float,
    ) -> None:
        self.step = step
        self.order = order
        self.check = check
        self._settings = settings
        self._baselines = baselines
        self._tests = {name: SequentialComparison(alpha) for name in baselines}

    def add(self, sample_id: str, outcome: float) -> bool:
        """Take this checkpoint's outcome on one sample; True once the probe may stop."""
        for name, baseline in self._baselines.items():
            self._tests[name].add(outcome, baseline[sample_id])
        return self.finished

    @property
    def finished(self) -> bool:
        """Out of samples; a probe once the difference is known; a check once it has ruled a
        change of delta out, or has found one of more than delta / 2."""
        test = self._tests.get("reference")
        if test is None:
            return True
        state = test.state()
        if state.pairs >= len(self.order):
            return True
        if not self.check:
            return state.verdict != "not yet known"
        return self.cleared or self.moved

    @property
    def comparisons(self) -> dict[str, Comparison]:
        """This checkpoint against the last full evaluation ("reference") and the best one."""
        return {name: test.state() for name, test in self._tests.items()}

    @property
    def moved(self) -> bool:
        """The comparison with the reference shows a change of more than delta / 2."""
        state = self._tests["reference"].state() if "reference" in self._tests else None
        half = self._settings.delta / 2
        return state is not None and (state.low > half or state.high < -half)

    @property
    def cleared(self) -> bool:
        """The comparison with the reference rules out a change of delta or more."""
        state = self._tests["reference"].state() if "reference" in self._tests else None
        delta = self._settings.delta
        return state is not None and state.pairs > 0 and -delta < state.low and state.high < delta


@dataclass(frozen=True)
class BoundedDecision:
    """What `decide` made of a probe, with the evidence, for the caller's log."""

    step: int
    fired: bool
    reason: BoundedReason
    check: bool
    steps_waited: int | None  # since the last full evaluation or all-clear
    comparisons: dict[str, dict[str, Any]]


class BoundedTrigger:
    """Decides, one probed checkpoint at a time, whether to run a full evaluation now."""

    def __init__(self, settings: BoundedSettings | None = None) -> None:
        self.settings = settings or BoundedSettings()
        self.last_decision: BoundedDecision | None = None
        self._reference: dict[str, float] = {}
        self._best: dict[str, float] = {}
        self._waiting_since: int | None = None  # the last full evaluation or all-clear
        self._last_step: int | None = None
        self._ids: list[str] = []

    def probe(self, step: int) -> Probe:
        """The probe to play on the checkpoint of `step`: a check when the wait is nearly up."""
        if self._last_step is not None and step <= self._last_step:
            raise TriggerError(
                f"step {step} is not after the last one probed ({self._last_step}); after a "
                "restart, load the state_dict saved with the checkpoint the job resumes from"
            )
        if self._waiting_since is None:
            return Probe(step, [], False, {}, self.settings, self.settings.alpha)
        gap = step - (self._last_step if self._last_step is not None else self._waiting_since)
        check = step - self._waiting_since + gap > self.settings.max_delay_steps
        share = min(1.0, gap / self.settings.max_delay_steps)
        alpha = self.settings.alpha * (1.0 if check else share)
        size = min(self.settings.check_size if check else self.settings.probe_size, len(self._ids))
        baselines = {"reference": self._reference}
        if self._best is not self._reference:
            baselines["best"] = self._best
        # A fresh draw of samples each time: one fixed subset would carry the reference's luck
        # on it into every probe, and the same bias would be tested again and again.
        order = random.Random(f"{self.settings.seed}/{step}").sample(self._ids, size)
        return Probe(step, order, check, baselines, self.settings, alpha)

    def decide(self, probe: Probe) -> BoundedDecision:
        """Fire on a clear change, or on a check that cannot rule one out; else wait on."""
        reason = self._reason(probe)
        waited = None if self._waiting_since is None else probe.step - self._waiting_since
        comparisons = {name: c.to_dict() for name, c in probe.comparisons.items()}
        decision = BoundedDecision(
            probe.step, reason in ("first", "change", "window"), reason, probe.check, waited,
            comparisons,
        )  # fmt: skip
        if reason == "cleared":
            self._waiting_since = probe.step
        self._last_step = probe.step
        self.last_decision = decision
        log.log(logging.INFO if decision.fired else logging.DEBUG, "trigger %s", decision)
        return decision

    def evaluated(self, step: int, outcomes: Mapping[str, float]) -> None:
        """A full evaluation ran at `step`: its outcomes per sample are the new reference."""
        if not outcomes:
            raise TriggerError(f"the full evaluation at step {step} gave no sample outcomes")
        self._reference = dict(outcomes)
        if not self._best or _mean(self._reference) >= _mean(self._best):
            self._best = self._reference
        self._waiting_since = step
        self._ids = sorted(self._reference)

    def state_dict(self) -> dict[str, Any]:
        """The schedule as plain JSON-able data, to save with each checkpoint."""
        best_is_reference = self._best is self._reference
        return {
            "version": STATE_VERSION,
            "settings": asdict(self.settings),
            "reference": self._reference,
            "best": None if best_is_reference else self._best,
            "waiting_since": self._waiting_since,
            "last_step": self._last_step,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume the schedule `state_dict` saved."""
        if state.get("version") != STATE_VERSION or "reference" not in state:
            raise TriggerError(
                f"cannot load bounded trigger state with keys {sorted(state)}: pass the dict "
                f"BoundedTrigger.state_dict() returned (version {STATE_VERSION})"
            )
        if state["reference"]:
            self.evaluated(state["waiting_since"], state["reference"])
        self._best = state["best"] or self._reference
        self._waiting_since = state["waiting_since"]
        self._last_step = state["last_step"]

    def _reason(self, probe: Probe) -> BoundedReason:
        if self._waiting_since is None:
            return "first"
        if probe.check:
            return "cleared" if probe.cleared else "change" if probe.moved else "window"
        return "none" if probe.comparisons["reference"].verdict == "not yet known" else "change"


def _mean(outcomes: Mapping[str, float]) -> float:
    return sum(outcomes.values()) / len(outcomes)
