"""A trial's running score told to Optuna as attempts finish; the trial stopped when it is pruned.

Steps are percents of the trial's attempts, so trials of different sizes (a searched
eval.n_samples) are compared at the same share of their work.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from agent_eval.metrics import Summary
from agent_eval.metrics.objectives import Objective
from agent_eval.metrics.performance import Throughput
from agent_eval.proxy.admin_client import WorkerLoad
from agent_eval.results.files import RunDirectory
from agent_eval.results.summary import build_summary, measured_rates
from agent_eval.run.engine import Progress
from agent_eval.run.evaluation import RunObserver
from agent_eval.tune.study import StudyThread

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

STEP_PERCENT = 5
"""The running score is reported at every 5% of the trial's attempts."""


class TrialWatch:
    """The live view's observer, passing everything on, and reporting the running score."""

    def __init__(
        self,
        view: RunObserver,
        trial: optuna.Trial | None,
        objective: Objective,
        run_dir: RunDirectory,
        ks: tuple[int, ...],
        study: StudyThread,
    ) -> None:
        """`trial` None: nothing to report (several objectives, which Optuna does not prune)."""
        self.view, self.trial, self.objective = view, trial, objective
        self.run_dir, self.ks, self.study = run_dir, ks, study
        self.pruned_at: int | None = None
        """The percent of attempts at which the pruner stopped the trial."""
        self._reported = 0
        self._checking: asyncio.Task[None] | None = None
        self._playing: asyncio.Task[Summary] | None = None
        self._started = time.monotonic()
        self._progress = Progress()

    def waiting(self, reason: str) -> None:
        self.view.waiting(reason)

    def set_proxy(
        self, base_url: str | None, api_key: str | None = None, since: WorkerLoad | None = None
    ) -> None:
        self.view.set_proxy(base_url, api_key, since)

    def on_progress(self, progress: Progress) -> None:
        self.view.on_progress(progress)
        self._progress = progress
        if self.trial is None or not progress.total or self._checking is not None:
            return
        percent = progress.done * 100 // progress.total
        step = percent - percent % STEP_PERCENT
        if step > self._reported and step < 100:
            self._reported = step
            self._checking = asyncio.create_task(self._check(step))

    @property
    def elapsed(self) -> float:
        """Seconds since the run began."""
        return time.monotonic() - self._started

    def rates(self) -> Throughput:
        """The trial's rates so far: the attempts it played, over the seconds since it began."""
        return measured_rates(self._progress.played, self.elapsed)

    async def play(self, playing: asyncio.Task[Summary]) -> Summary:
        """Await the trial's play; a prune cancels it (`pruned_at` set), Ctrl-C too (not set)."""
        self._playing = playing
        try:
            summary = await playing
            self.pruned_at = None  # it finished before the prune reached it: a whole trial
            return summary
        finally:
            if self._checking is not None:
                self._checking.cancel()
                await asyncio.gather(self._checking, return_exceptions=True)

    async def _check(self, step: int) -> None:
        trial = self.trial
        assert trial is not None, "checks run only for a trial to report"
        try:
            value = await asyncio.to_thread(self._running_value)
            if value is not None:
                await self.study.call(trial.report, value, step)
                if await self.study.call(trial.should_prune):
                    self.pruned_at = step
                    if self._playing is not None:
                        self._playing.cancel()
        finally:
            self._checking = None

    def _running_value(self) -> float | None:
        """The objective over the attempts finished so far."""
        scores = (record.score() for record in self.run_dir.records())
        summary = build_summary(scores, self.ks, self.rates())
        return self.objective.value(summary.to_dict())
