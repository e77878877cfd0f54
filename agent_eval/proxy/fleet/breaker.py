"""Circuit breaker: stop sending to a worker that keeps failing, then try it again carefully."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agent_eval.proxy.fleet.watched import Watched


class BreakerState(StrEnum):
    """Closed lets traffic through, open stops it, half-open lets one trial through."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass
class CircuitBreaker(Watched):
    """Counts failed requests in a row; opens at the threshold and half-opens after the cooldown."""

    WATCHED = frozenset({"state"})

    failure_threshold: int
    cooldown: float
    state: BreakerState = BreakerState.CLOSED
    consecutive_failures: int = 0
    opened_at: float = 0.0
    trial_in_flight: bool = False

    def allows(self, now: float) -> bool:
        """Whether a request may go to this worker now."""
        if self.state is BreakerState.CLOSED:
            return True
        if self.state is BreakerState.OPEN:
            if now - self.opened_at < self.cooldown:
                return False
            self.state = BreakerState.HALF_OPEN
            self.trial_in_flight = False
        return not self.trial_in_flight

    def begin(self) -> bool:
        """A request is being sent; True when it is the half-open state's one trial."""
        if self.state is BreakerState.HALF_OPEN:
            self.trial_in_flight = True
            return True
        return False

    def end_trial(self) -> None:
        """The trial ended without a verdict (its client left): let another trial through."""
        self.trial_in_flight = False

    def record_success(self) -> None:
        if self.state is BreakerState.CLOSED and not (
            self.consecutive_failures or self.trial_in_flight
        ):
            return  # the common case, each request: nothing to set, nothing for watchers
        self.consecutive_failures = 0
        self.trial_in_flight = False
        self.state = BreakerState.CLOSED

    def record_failure(self, now: float) -> None:
        self.consecutive_failures += 1
        self.trial_in_flight = False
        half_open = self.state is BreakerState.HALF_OPEN
        if half_open or self.consecutive_failures >= self.failure_threshold:
            self.state = BreakerState.OPEN
            self.opened_at = now

    def reset(self) -> None:
        """Forget past failures (the worker proved itself healthy again)."""
        self.record_success()
