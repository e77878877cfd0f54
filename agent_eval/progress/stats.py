"""Running numbers of a run: accuracy with its interval, rates and ETA, and their text."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent_eval.metrics.accuracy import accuracy
from agent_eval.metrics.base import Estimate
from agent_eval.metrics.performance import (
    ATTEMPTS_PER_S,
    COMPLETION_TOKENS_PER_S,
    PROMPT_TOKENS_PER_S,
    Throughput,
)
from agent_eval.metrics.tally import AttemptCounts

if TYPE_CHECKING:
    from agent_eval.run.engine import Progress


@dataclass(frozen=True)
class Snapshot:
    """The run at one moment: every attempt of the run counts, kept and played, as in the
    summary; a rate is None until an attempt of this process is in, the ETA until it means
    something."""

    done: int = 0
    total: int = 0
    accuracy: Estimate = field(default_factory=lambda: accuracy(0, 0))
    attempts_per_s: float | None = None
    completion_tokens_per_s: float | None = None
    prompt_tokens_per_s: float | None = None
    eta_s: float | None = None
    """Seconds left at the current rate."""
    errors: Mapping[str, int] = field(default_factory=dict)
    unscored: Mapping[str, int] = field(default_factory=dict)
    """Attempts the infrastructure stopped, by kind: out of the accuracy."""


_Rates = tuple[float, float, float]
"""Attempts, completion tokens and prompt tokens per second."""


@dataclass(frozen=True)
class _Counts:
    """The engine's progress at one moment, copied so later attempts leave it as it was."""

    at: float
    total: int
    run: AttemptCounts
    """Every attempt of the run, kept ones included."""
    played: AttemptCounts
    """The attempts of this process: what the rates count."""

    @classmethod
    def of(cls, progress: Progress, at: float, total: int) -> _Counts:
        return cls(at, progress.total or total, progress.run.copy(), progress.played.copy())

    @classmethod
    def kept(cls, kept: AttemptCounts, at: float, total: int) -> _Counts:
        """What a resumed run found on disk, before it plays an attempt."""
        return cls(at, total, kept, AttemptCounts())


class RunStats:
    """Folds the engine's progress into snapshots: counts of the whole run, rates of this process.

    Rates are `Throughput`'s: this process's attempts and tokens over the wall time from
    `start()` (the proxy is ready) to now, or to the last attempt's end once all are in.
    `kept`: what a resumed run found on disk; `at_once`: the attempts played at once.
    """

    def __init__(
        self,
        total: int = 0,
        kept: AttemptCounts | None = None,
        at_once: int = 1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock, self._total, self._at_once = clock, total, at_once
        self._since = clock()
        self._kept = _Counts.kept(kept, self._since, total) if kept and kept.attempts else None
        self._latest = self._kept
        self._final: Throughput | None = None

    @property
    def started(self) -> bool:
        """Whether the run has a finished attempt, kept or played here."""
        return self._latest is not None

    def start(self) -> None:
        """The proxy is ready: the wall time of the rates starts now, no attempt played yet."""
        self._since = self._clock()
        self._latest, self._final = self._kept, None

    def update(self, progress: Progress) -> None:
        """Store the numbers in one assignment, so a frame never shows half an update."""
        self._latest = _Counts.of(progress, self._clock(), self._total)

    def finish(self, throughput: Throughput) -> None:
        """The summary's own rates: the last frame shows the very figures the summary prints."""
        self._final = throughput

    def snapshot(self) -> Snapshot:
        """The numbers now, with rates measured up to this moment."""
        latest = self._latest
        if latest is None:
            return Snapshot(total=self._total)
        attempts, completion, prompt = self._rates(latest) or (None, None, None)
        run = latest.run
        return Snapshot(
            done=run.attempts,
            total=latest.total,
            accuracy=accuracy(run.correct, run.original_scored),
            attempts_per_s=attempts,
            completion_tokens_per_s=completion,
            prompt_tokens_per_s=prompt,
            eta_s=self._eta(latest, attempts),
            errors=run.errors,
            unscored=run.unscored,
        )

    def _rates(self, latest: _Counts) -> _Rates | None:
        if (final := self._final) is not None:
            return final.attempts_per_s, final.completion_tokens_per_s, final.prompt_tokens_per_s
        # Once every attempt is in, the clock stops, as the summary's wall time does.
        done = latest.run.attempts
        end = latest.at if latest.total and done >= latest.total else self._clock()
        elapsed, played = end - self._since, latest.played
        if not played.attempts or elapsed <= 0:
            return None
        return (
            played.attempts / elapsed,
            played.completion_tokens / elapsed,
            played.prompt_tokens / elapsed,
        )

    def _eta(self, latest: _Counts, attempts_per_s: float | None) -> float | None:
        """Seconds left at the current rate, once as many attempts as run at once have ended.

        The first attempts end together: one of them over its seconds would put the rate,
        and the ETA, off by the number played at once.
        """
        if not latest.total or not attempts_per_s:
            return None
        left = max(latest.total - latest.run.attempts, 0)
        played = latest.played.attempts
        if played < min(self._at_once, played + left):
            return None
        return left / attempts_per_s


def stats_parts(snapshot: Snapshot) -> list[str]:
    """Accuracy, rates and errors as short phrases, shared by the live and the plain view."""
    shown = accuracy_text(snapshot.accuracy)
    if snapshot.unscored:
        # Said next to the accuracy, since it is what the accuracy leaves out.
        shown += f" over {snapshot.accuracy.n} scored; {unscored_text(snapshot.unscored)}"
    return [
        shown,
        ATTEMPTS_PER_S.text(snapshot.attempts_per_s),
        COMPLETION_TOKENS_PER_S.text(snapshot.completion_tokens_per_s),
        PROMPT_TOKENS_PER_S.text(snapshot.prompt_tokens_per_s),
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
