"""Running numbers of a run: accuracy with its interval, rates and ETA, and their text."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_eval.metrics.accuracy import accuracy
from agent_eval.metrics.base import Estimate
from agent_eval.metrics.performance import ATTEMPTS_PER_S, TOKENS_PER_S, Throughput

if TYPE_CHECKING:
    from agent_eval.engine import Progress


@dataclass(frozen=True)
class Snapshot:
    """The run at one moment; a rate is None until an attempt of this process is in."""

    done: int = 0
    total: int = 0
    accuracy: Estimate = field(default_factory=lambda: accuracy(0, 0))
    attempts_per_s: float | None = None
    tokens_per_s: float | None = None
    errors: Mapping[str, int] = field(default_factory=dict)
    unscored: Mapping[str, int] = field(default_factory=dict)
    """This process's attempts the infrastructure stopped, by kind: out of the accuracy."""

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current rate; None while the total or the rate is unknown."""
        if not self.total or not self.attempts_per_s:
            return None
        return max(self.total - self.done, 0) / self.attempts_per_s


@dataclass(frozen=True)
class _Counts:
    at: float
    done: int
    played: int
    total: int
    correct: int
    tokens: int
    errors: Mapping[str, int]
    unscored: Mapping[str, int]
    variants_judged: int


class RunStats:
    """Folds the engine's progress into snapshots; only this process's attempts count.

    Rates are `Throughput`'s: this process's attempts and tokens over the wall time from
    `start()` (the proxy is ready) to now, or to the last attempt's end once all are in.
    """

    def __init__(
        self, total: int = 0, done: int = 0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        self._total, self._done = total, done  # known before any attempt ends
        self._since = clock()
        self._latest: _Counts | None = None
        self._final: Throughput | None = None

    @property
    def started(self) -> bool:
        """Whether any attempt finished in this process."""
        return self._latest is not None

    def start(self) -> None:
        """The proxy is ready: the wall time of the rates starts now, with no attempt in."""
        self._since = self._clock()
        self._latest = self._final = None

    def update(self, progress: Progress) -> None:
        """Store the numbers; one assignment, so a render thread never sees half an update."""
        counts = _Counts(
            self._clock(),
            progress.done,
            progress.played,
            progress.total or self._total,
            progress.correct,
            progress.tokens,
            dict(progress.errors),
            dict(progress.unscored),
            progress.variants_judged,
        )
        self._latest = counts

    def finish(self, throughput: Throughput) -> None:
        """The summary's own rates: the last frame shows the very figures the summary prints."""
        self._final = throughput

    def snapshot(self) -> Snapshot:
        """The numbers now, with rates measured up to this moment."""
        latest = self._latest
        if latest is None:
            return Snapshot(done=self._done, total=self._total)
        # `done` counts what a resumed run found on disk; `played`, `correct` and `tokens`
        # only this process's attempts.
        attempts = latest.played
        attempts_per_s, tokens_per_s = self._rates(latest, attempts)
        return Snapshot(
            done=latest.done,
            total=latest.total,
            accuracy=accuracy(latest.correct, _judged_originals(latest)),
            attempts_per_s=attempts_per_s,
            tokens_per_s=tokens_per_s,
            errors=latest.errors,
            unscored=latest.unscored,
        )

    def _rates(self, latest: _Counts, attempts: int) -> tuple[float | None, float | None]:
        if (final := self._final) is not None:
            return final.attempts_per_s, final.tokens_per_s
        # Once every attempt is in, the clock stops, as the summary's wall time does.
        end = latest.at if latest.total and latest.done >= latest.total else self._clock()
        elapsed = end - self._since
        if elapsed <= 0:
            return None, None
        return attempts / elapsed, latest.tokens / elapsed


def stats_parts(snapshot: Snapshot) -> list[str]:
    """Accuracy, rates and errors as short phrases, shared by the live and the plain view."""
    shown = accuracy_text(snapshot.accuracy)
    if snapshot.unscored:
        # Said next to the accuracy, since it is what the accuracy leaves out.
        shown += f" over {snapshot.accuracy.n} scored; {unscored_text(snapshot.unscored)}"
    return [
        shown,
        ATTEMPTS_PER_S.text(snapshot.attempts_per_s),
        TOKENS_PER_S.text(snapshot.tokens_per_s),
        errors_text(snapshot.errors),
    ]


def accuracy_text(estimate: Estimate) -> str:
    """`acc 0.625 [0.47, 0.76]` (95% interval), or `acc -` before any attempt."""
    if estimate.n == 0 or math.isnan(estimate.value):
        return "acc -"
    return f"acc {estimate.value:.3f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def unscored_text(unscored: Mapping[str, int]) -> str:
    """`3 unscored (no_healthy_worker=2, timeout=1)`: attempts out of the accuracy, and why."""
    return f"{sum(unscored.values())} unscored ({_by_kind(unscored)})"


def errors_text(errors: Mapping[str, int]) -> str:
    """`errors timeout=2, max_turns=1`, most frequent first."""
    return f"errors {_by_kind(errors)}" if errors else "no errors"


def _by_kind(counts: Mapping[str, int]) -> str:
    kinds = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{kind}={count}" for kind, count in kinds)


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


def _judged_originals(counts: _Counts) -> int:
    """This process's scored attempts at original samples: what the live accuracy divides by."""
    return counts.played - sum(counts.unscored.values()) - counts.variants_judged
