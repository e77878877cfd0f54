"""When a training loop should run a full evaluation: the signal moved, or a window has passed.

The trigger keeps a reference: the smoothed signal at the last full evaluation. An observation
fires when the smoothed signal has moved at least `threshold` away from it (and the minimum gap
since that evaluation has passed), or when `max_steps` or `max_seconds` have passed since it.
The first observation always fires: there is no evaluation to compare with yet.

    trigger = AdaptiveTrigger(probe_threshold(0.6, 50), max_steps=500, min_gap_steps=30)
    for step in training:
        if trigger.observe(step, probe_accuracy(step)):
            full_evaluation(step)
        checkpoint["eval_trigger"] = trigger.state_dict()
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from agent_eval.errors import AgentEvalError, ConfigError

log = logging.getLogger(__name__)

Reason = Literal["first", "change", "window_steps", "window_time", "gap", "none"]
DEFAULT_ALPHA = 0.2  # an average over about 9 observations: a 50-item probe's noise drops 3x
STATE_VERSION = 1
_STATE_KEYS = ("version", "eval_step", "seconds_since_eval", "smoothed", "reference")


class TriggerError(AgentEvalError):
    """The trigger was used out of order or given a state it cannot load."""


@dataclass(frozen=True)
class Decision:
    """What one `observe` decided and the numbers behind it, for the caller's logs.

    `reason` is "first", "change", "window_steps" or "window_time" when it fired; "gap" when the
    signal moved enough but the minimum gap had not passed; "none" otherwise.
    """

    step: int
    fired: bool
    reason: Reason
    smoothed: float | None
    reference: float | None
    change: float | None  # smoothed - reference, signed
    steps_since_eval: int | None  # None before the first evaluation
    seconds_since_eval: float | None


class AdaptiveTrigger:
    """Decides, one observation at a time, whether to run a full evaluation now.

    `threshold`: the move of the smoothed signal, in the signal's units, that calls for a full
    evaluation; None to fire on the windows only. Set it above the signal's noise (see
    `probe_threshold`) and below the smallest change worth catching. `alpha`: weight of the
    newest value in the exponential moving average; 1 takes each value as is, for a signal the
    loop already smooths. The minimum gaps hold back change triggers only; windows always fire.
    Windows are checked when `observe` is called: call it with value=None for a time check.

    Time comes from `clock` (monotonic by default) and counts only while this process runs: a
    restarted job resumes the count from `state_dict`, so time spent down is not time trained.

    Two costs of a noisy signal, counted as false triggers by bench/adaptive.py: the first
    reference is a single value, so the average can drift a threshold away from it early on;
    and the average lags a sudden change, so one change can fire twice (at the threshold, and
    again once the average has caught up with the rest of it).
    """

    def __init__(
        self,
        threshold: float | None,
        *,
        alpha: float = DEFAULT_ALPHA,
        max_steps: int | None = None,
        max_seconds: float | None = None,
        min_gap_steps: int = 0,
        min_gap_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _check_config(threshold, alpha, max_steps, max_seconds, min_gap_steps, min_gap_seconds)
        self.threshold = threshold
        self.alpha = alpha
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.min_gap_steps = min_gap_steps
        self.min_gap_seconds = min_gap_seconds
        self._clock = clock
        self.last_decision: Decision | None = None
        self._smoothed: float | None = None
        self._reference: float | None = None
        self._eval_step: int | None = None
        # Seconds since the last evaluation = _seconds_base + (clock() - _clock_base).
        self._seconds_base = 0.0
        self._clock_base = clock()

    def observe(self, step: int, value: float | None = None) -> bool:
        """Take the signal at `step` (None: check the windows only); True means evaluate now.

        A True answer counts as that evaluation: the windows restart and the reference becomes
        the current smoothed signal. Raises: TriggerError if `step` is before the last evaluation.
        """
        if self._eval_step is not None and step < self._eval_step:
            raise TriggerError(
                f"step {step} is before the last evaluation at step {self._eval_step}; after a "
                "restart, load the state_dict saved with the checkpoint the job resumes from"
            )
        self._smooth(step, value)
        decision = self._decide(step)
        if decision.fired:
            self._evaluated(step)
        self.last_decision = decision
        log.log(logging.INFO if decision.fired else logging.DEBUG, "trigger %s", decision)
        return decision.fired

    def state_dict(self) -> dict[str, Any]:
        """The schedule as plain JSON-able data, to save with each checkpoint."""
        started = self._eval_step is not None
        return {
            "version": STATE_VERSION,
            "eval_step": self._eval_step,
            "seconds_since_eval": self._seconds_since_eval() if started else None,
            "smoothed": self._smoothed,
            "reference": self._reference,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume the schedule `state_dict` saved; the time window counts on from the saved time.

        Raises: TriggerError if `state` is not what `state_dict` returns.
        """
        if sorted(state) != sorted(_STATE_KEYS) or state["version"] != STATE_VERSION:
            raise TriggerError(
                f"cannot load trigger state with keys {sorted(state)}: pass the dict that "
                f"AdaptiveTrigger.state_dict() returned (version {STATE_VERSION})"
            )
        self._eval_step = state["eval_step"]
        self._smoothed = state["smoothed"]
        self._reference = state["reference"]
        self._seconds_base = state["seconds_since_eval"] or 0.0
        self._clock_base = self._clock()
        self.last_decision = None

    def _smooth(self, step: int, value: float | None) -> None:
        if value is None:
            return
        if not math.isfinite(value):
            # A NaN reward must not end a training run, nor poison the average for good.
            log.warning("step %d: signal value %r is not finite; only windows apply", step, value)
            return
        if self._smoothed is None:
            self._smoothed = float(value)
        else:
            self._smoothed += self.alpha * (value - self._smoothed)
        if self._reference is None and self._eval_step is not None:
            # The last evaluation came before any value: the first value stands in for it.
            self._reference = self._smoothed

    def _decide(self, step: int) -> Decision:
        if self._eval_step is None:
            return self._decision(step, "first", None, None)
        steps = step - self._eval_step
        seconds = self._seconds_since_eval()
        change = self._change()
        moved = self.threshold is not None and change is not None and abs(change) >= self.threshold
        gap_passed = steps >= self.min_gap_steps and seconds >= self.min_gap_seconds
        if moved and gap_passed:
            reason: Reason = "change"
        elif self.max_steps is not None and steps >= self.max_steps:
            reason = "window_steps"
        elif self.max_seconds is not None and seconds >= self.max_seconds:
            reason = "window_time"
        else:
            reason = "gap" if moved else "none"
        return self._decision(step, reason, steps, seconds)

    def _decision(
        self, step: int, reason: Reason, steps: int | None, seconds: float | None
    ) -> Decision:
        fired = reason not in ("gap", "none")
        return Decision(
            step, fired, reason, self._smoothed, self._reference, self._change(), steps, seconds
        )

    def _change(self) -> float | None:
        if self._smoothed is None or self._reference is None:
            return None
        return self._smoothed - self._reference

    def _evaluated(self, step: int) -> None:
        self._eval_step = step
        self._reference = self._smoothed
        self._seconds_base = 0.0
        self._clock_base = self._clock()

    def _seconds_since_eval(self) -> float:
        return self._seconds_base + (self._clock() - self._clock_base)


def probe_threshold(
    accuracy: float, samples: int, *, alpha: float = DEFAULT_ALPHA, z: float = 3.0
) -> float:
    """A threshold `z` noise standard deviations wide for an `alpha`-smoothed pass/fail probe.

    The probe's standard error is sqrt(p(1-p)/n); an exponential moving average keeps
    alpha/(2-alpha) of its variance, and the change compares two such averages (now and at the
    last evaluation), which doubles it. Pass accuracy=0.5 for the widest, safest threshold.
    `z` holds for one observation; over the many between two evaluations, noise crosses it
    more often (z=3 on a steady probe: about one false trigger per 400 observations).
    """
    if not 0 < accuracy < 1:
        raise ConfigError(
            f"accuracy must be between 0 and 1 exclusive, got {accuracy}; "
            "pass the probe's expected accuracy, or 0.5 for the widest threshold"
        )
    if samples < 1:
        raise ConfigError(f"samples must be at least 1 (the probe's size), got {samples}")
    _check_alpha(alpha)
    if not z > 0:
        raise ConfigError(f"z must be positive (noise standard deviations, e.g. 3), got {z}")
    stderr = math.sqrt(accuracy * (1 - accuracy) / samples)
    return z * stderr * math.sqrt(2 * alpha / (2 - alpha))


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha <= 1:
        raise ConfigError(
            f"alpha must be in (0, 1], got {alpha}: the weight of the newest value in the moving "
            "average (1 for no smoothing, 0.1-0.3 for a noisy probe)"
        )


def _check_config(
    threshold: float | None,
    alpha: float,
    max_steps: int | None,
    max_seconds: float | None,
    min_gap_steps: int,
    min_gap_seconds: float,
) -> None:
    if threshold is not None and not (threshold > 0 and math.isfinite(threshold)):
        raise ConfigError(
            f"threshold must be a positive number, got {threshold}: the smallest move of the "
            "signal worth a full evaluation (or None to evaluate on max_steps/max_seconds only)"
        )
    _check_alpha(alpha)
    if threshold is None and max_steps is None and max_seconds is None:
        raise ConfigError(
            "nothing would trigger after the first evaluation: pass a threshold, "
            "max_steps or max_seconds"
        )
    if max_steps is not None and max_steps < 1:
        raise ConfigError(
            f"max_steps must be at least 1 (or None for no step window), got {max_steps}"
        )
    if max_seconds is not None and not max_seconds > 0:
        raise ConfigError(
            f"max_seconds must be positive (or None for no time window), got {max_seconds}"
        )
    if min_gap_steps < 0 or min_gap_seconds < 0:
        raise ConfigError(
            f"minimum gaps cannot be negative, got min_gap_steps={min_gap_steps}, "
            f"min_gap_seconds={min_gap_seconds}; pass 0 for no gap"
        )
    if max_steps is not None and min_gap_steps >= max_steps:
        raise ConfigError(
            f"min_gap_steps ({min_gap_steps}) must be below max_steps ({max_steps}), "
            "or a change could never trigger before the window does"
        )
    if max_seconds is not None and min_gap_seconds >= max_seconds:
        raise ConfigError(
            f"min_gap_seconds ({min_gap_seconds}) must be below max_seconds ({max_seconds}), "
            "or a change could never trigger before the window does"
        )
