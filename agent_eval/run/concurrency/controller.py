"""From what the fleet showed over a window, the next concurrency limit: pure, no I/O.

Additive increase, multiplicative decrease on the hard signals (429/503 answers, requests queued
at the workers), a gradient on latency (Netflix concurrency-limits' Gradient2: cut in proportion
to how far latency rose above its floor), slow start until the first sign of a full fleet, and a
hold while more concurrency stopped raising throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

START = 4
"""Attempts in flight at the start (or the ceiling, if lower)."""
QUEUE_SHARE = 0.4
"""Requests queued at the workers, as a share of the limit, before the limit is cut."""
GROWTH = 0.1
"""The limit's additive step after slow start, as a share of it (at least one attempt)."""


@dataclass(frozen=True)
class Window:
    """What the fleet showed over one stretch of the run."""

    seconds: float
    finished: int
    """Requests the workers answered."""
    latency: float | None
    """Their mean seconds, from the proxy's receipt to the last byte; None when none finished."""
    rejected: int
    """429 and 503 answers of the workers: backpressure."""
    waiting: float | None
    """Requests queued at the workers, not yet running (SGLang's /get_load), on average over
    the window; None: unknown."""
    in_use: int
    """The most attempts of this engine in flight at once during the window."""


@dataclass(frozen=True)
class Settings:
    """The bounds and the gains of the controller."""

    ceiling: int
    """eval.concurrency: the limit never goes above it."""
    least: int = 1
    near: float = 1.25
    """Latency up to this many times its floor counts as near it: the limit may grow."""
    tolerance: float = 2.0
    """Latency past this many times its floor cuts the limit (Gradient2's default); between
    `near` and it, the limit holds."""
    backoff: float = 0.7
    """The limit's factor on 429/503."""
    floor_drift: float = 0.005
    """How far the latency floor rises per window, so a workload that gets slower is followed."""
    plateau_gain: float = 0.05
    """Throughput must rise by this share over a growth of half the limit, or growth holds."""
    hold_windows: int = 10
    """Windows of a hold before growth is tried again."""


@dataclass(frozen=True)
class Pressure:
    """What the fleet asks of the limit: a factor (1: keep it), why, whether it may grow."""

    factor: float
    reason: str
    may_grow: bool = False


@dataclass(frozen=True)
class Decision:
    """The new limit and why it moved (empty when it did not)."""

    limit: int
    reason: str


class AdaptiveLimit:
    """The controller's state across windows; `update` gives each next limit."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.limit = float(min(settings.ceiling, max(settings.least, START)))
        self.latency_floor: float | None = None
        self.slow_start = True
        self._cooling = 0
        self._base: tuple[float, float] | None = None  # (limit, throughput) where growth began
        self._held = 0

    def update(self, window: Window) -> Decision:
        """The limit for the next window, from what the last one showed."""
        pressure = self._pressure(window)
        reason = self._grow(window) if pressure.may_grow else self._cut(pressure)
        self.limit = min(float(self.settings.ceiling), max(float(self.settings.least), self.limit))
        return Decision(round(self.limit), reason)

    def _cut(self, pressure: Pressure) -> str:
        """Back off by the pressure's factor, once per cooling window; the reason, or ""."""
        self.slow_start, self._base, self._held = False, None, 0
        if pressure.factor >= 1.0:
            return ""
        if self._cooling:  # requests sent before the last cut are still being answered
            self._cooling -= 1
            return ""
        self._cooling = 1
        self.limit *= pressure.factor
        return pressure.reason

    def _pressure(self, window: Window) -> Pressure:
        """What the fleet's state asks of the limit."""
        settings = self.settings
        if window.rejected:
            reason = f"{window.rejected} answers 429/503 from the workers"
            return Pressure(settings.backoff, reason)
        # A short queue keeps the workers' batches full while attempts are between calls.
        allowance = max(2.0, QUEUE_SHARE * self.limit)
        waiting = window.waiting
        if waiting is not None and waiting > allowance:
            # Vegas: take the excess queue off the limit (at most down to the backoff).
            share = 1.0 - (waiting - allowance) / self.limit
            reason = f"{waiting:.1f} requests queued at the workers"
            return Pressure(max(settings.backoff, share), reason)
        ratio = self._latency_ratio(window)
        if ratio > settings.tolerance:
            share = max(0.5, settings.tolerance / ratio)
            return Pressure(share, f"latency {ratio:.1f}x its floor")
        self._cooling = 0
        # A queue within the allowance is let be, but says the workers are full: no growth;
        # nor without an answer to show that latency is near its floor.
        room = waiting is None or waiting < 1
        seen = window.latency is not None
        return Pressure(1.0, "", may_grow=room and seen and ratio <= settings.near)

    def _latency_ratio(self, window: Window) -> float:
        """Latency over its floor, the floor taken from this window too; 1 when unknown."""
        if window.latency is None or window.latency <= 0:
            return 1.0
        floor = self.latency_floor
        if floor is None or window.latency < floor:
            self.latency_floor = window.latency
            return 1.0
        self.latency_floor = floor * (1 + self.settings.floor_drift)
        return window.latency / floor

    def _grow(self, window: Window) -> str:
        """Grow while the limit is used and throughput rises; the reason, or ""."""
        if window.in_use < self.limit - 1 or window.seconds <= 0:
            return ""  # the engine does not use what it has: more would change nothing
        throughput = window.finished / window.seconds
        if self._flat(throughput):
            return ""
        if window.waiting:  # the workers are full, if only just: no more doubling
            self.slow_start = False
        before = self.limit
        self.limit = before * 2 if self.slow_start else before + max(1.0, GROWTH * before)
        return "slow start" if self.slow_start else "latency near its floor"

    def _flat(self, throughput: float) -> bool:
        """Whether growth holds: half as much again did not raise throughput."""
        if self._held:
            self._held -= 1
            return True
        if self._base is None:
            self._base = (self.limit, throughput)
            return False
        limit, rate = self._base
        if self.limit < 1.5 * limit:
            return False
        if throughput < rate * (1 + self.settings.plateau_gain):
            self._held, self._base = self.settings.hold_windows, None
            return True
        self._base = (self.limit, throughput)
        return False
