"""Running numbers of a run: accuracy with its interval, rates and ETA, and their text."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_eval.metrics.accuracy import accuracy
from agent_eval.metrics.base import Estimate

if TYPE_CHECKING:
    from agent_eval.engine import Progress


@dataclass(frozen=True)
class Snapshot:
    """The run at one moment; a rate is None until two attempts of this process are in."""

    done: int = 0
    total: int = 0
    accuracy: Estimate = field(default_factory=lambda: accuracy(0, 0))
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    errors: Mapping[str, int] = field(default_factory=dict)

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate; None while the total or the rate is unknown."""
        if not self.total or not self.samples_per_s:
            return None
        return max(self.total - self.done, 0) / self.samples_per_s


@dataclass(frozen=True)
class _Counts:
    at: float
    done: int
    total: int
    correct: int
    tokens: int
    errors: Mapping[str, int]


class RunStats:
    """Folds the engine's progress into snapshots; only this process's attempts count."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._first: _Counts | None = None
        self._latest: _Counts | None = None

    @property
    def started(self) -> bool:
        """Whether any attempt finished in this process."""
        return self._latest is not None

    def update(self, progress: Progress) -> None:
        """Store the numbers; one assignment, so a render thread never sees half an update."""
        counts = _Counts(
            self._clock(),
            progress.done,
            progress.total,
            progress.correct,
            progress.tokens,
            dict(progress.errors),
        )
        if self._first is None:
            self._first = counts
        self._latest = counts

    def snapshot(self) -> Snapshot:
        """The numbers now, with rates measured up to this moment."""
        first, latest = self._first, self._latest
        if first is None or latest is None:
            return Snapshot()
        # The engine calls back once per attempt, so the first call follows exactly one attempt
        # of this process; the rest of its `done` was on disk when the run resumed. `correct`
        # and `tokens` start from zero in every process.
        attempts = latest.done - first.done + 1
        # Rates run from the first attempt's end: the time before it (start-up, the first
        # attempt itself) would drag them down, and it is not known anyway.
        elapsed = self._clock() - first.at
        measured = latest.done > first.done and elapsed > 0
        return Snapshot(
            done=latest.done,
            total=latest.total,
            accuracy=accuracy(latest.correct, attempts),
            samples_per_s=(latest.done - first.done) / elapsed if measured else None,
            tokens_per_s=(latest.tokens - first.tokens) / elapsed if measured else None,
            errors=latest.errors,
        )


def stats_parts(snapshot: Snapshot) -> list[str]:
    """Accuracy, rates and errors as short phrases, shared by the live and the plain view."""
    return [
        accuracy_text(snapshot.accuracy),
        rate_text(snapshot.samples_per_s, "samples/s", ".2f" if _slow(snapshot) else ".1f"),
        rate_text(snapshot.tokens_per_s, "tok/s", ".0f"),
        errors_text(snapshot.errors),
    ]


def _slow(snapshot: Snapshot) -> bool:
    # A CPU model can take minutes per sample: 0.04/s must not print as 0.0/s.
    return snapshot.samples_per_s is not None and snapshot.samples_per_s < 1


def accuracy_text(estimate: Estimate) -> str:
    """`acc 0.625 [0.47, 0.76]` (95% interval), or `acc -` before any attempt."""
    if estimate.n == 0 or math.isnan(estimate.value):
        return "acc -"
    return f"acc {estimate.value:.3f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def rate_text(rate: float | None, unit: str, spec: str) -> str:
    """`1,240 tok/s`, or `- tok/s` while the rate is not measured yet."""
    return f"- {unit}" if rate is None else f"{rate:,{spec}} {unit}"


def errors_text(errors: Mapping[str, int]) -> str:
    """`errors timeout=2, max_turns=1`, most frequent first."""
    if not errors:
        return "no errors"
    kinds = sorted(errors.items(), key=lambda item: (-item[1], item[0]))
    return "errors " + ", ".join(f"{kind}={count}" for kind, count in kinds)


def duration_text(seconds: float | None) -> str:
    """`19s`, `3m05s`, `2h04m`; `-` when unknown."""
    if seconds is None:
        return "-"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"
