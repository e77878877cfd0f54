"""The tune: trials one after another, each a real evaluation on the subset, until enough finish.

A trial's settings come from the study's sampler; its run lands in `trial-N` under the tune
directory; its score goes back to the study, or the pruner stops it on the way. Ctrl-C
leaves the trial in flight marked interrupted: the same command again plays it first,
resuming its run directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_eval.errors import AgentEvalError, ConfigError, mistakes_only
from agent_eval.metrics import Summary
from agent_eval.metrics.objectives import Objective
from agent_eval.metrics.performance import Throughput
from agent_eval.results.files import RunDirectory
from agent_eval.results.summary import build_summary, write_summary
from agent_eval.run.config import RunConfig
from agent_eval.run.evaluation import Plan, RunObserver, plan, play_served
from agent_eval.run.serving import keep_worker_load, worker_load
from agent_eval.tune.pruning import TrialWatch
from agent_eval.tune.server import TrialServer
from agent_eval.tune.study import (
    CONTINUES,
    INTERRUPTED,
    StudySetup,
    StudyThread,
    finished_trials,
    hold_tune_dir,
    open_study,
    take_up_interrupted,
)
from agent_eval.tune.study_files import FAILURE, RUN_DIR, optuna_module
from agent_eval.tune.trials import settings_text, trial_config

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

FAILURES_IN_A_ROW = 3
"""Trials failing one after another this many times stop the tune: something is broken."""


@dataclass(frozen=True)
class TrialOutcome:
    """One trial as the terminal shows it when it ends."""

    number: int
    params: dict[str, Any]
    state: str
    """complete, pruned or failed."""
    values: list[float | None]
    pruned_at: int | None = None
    """The percent of its attempts at which the pruner stopped the trial."""
    failure: str | None = None
    seconds: float = 0.0


class TuneObserver(Protocol):
    """What the tune tells the terminal: a live view for each run, and each trial's end."""

    def run_view(
        self, title: str, total: int
    ) -> contextlib.AbstractAsyncContextManager[RunObserver]: ...

    def trial_done(self, outcome: TrialOutcome) -> None: ...


@dataclass(frozen=True)
class Tune:
    """Everything `agent-eval tune` was asked."""

    base: RunConfig
    setup: StudySetup
    trials: int

    @property
    def tune_dir(self) -> Path:
        return self.setup.tune_dir

    @property
    def objectives(self) -> list[Objective]:
        return self.setup.objectives


class Tuner:
    """`async with Tuner(job, observer) as tuner: await tuner.search()`; workers stay up inside."""

    def __init__(self, job: Tune, observer: TuneObserver) -> None:
        self.job, self.observer = job, observer
        self.thread = StudyThread()
        self.server = TrialServer(job.tune_dir, lambda reason: None)
        self._study: optuna.Study | None = None

    async def __aenter__(self) -> Tuner:
        self._lock = hold_tune_dir(self.job.tune_dir)
        try:
            self._study = await self.thread.call(open_study, self.job.setup)
        except BaseException:
            self._lock.close()
            self.thread.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.server.__aexit__(*exc)
        finally:
            self.thread.close()
            self._lock.close()

    @property
    def study(self) -> optuna.Study:
        assert self._study is not None, "the study opens on entering the tuner"
        return self._study

    async def search(self) -> None:
        """Play trials until `job.trials` have finished (those of an earlier tune count)."""
        queued = await self.thread.call(take_up_interrupted, self.study)
        if queued:
            log.info("playing again %d trial(s) an interruption stopped", queued)
        failed_in_a_row = 0
        while await self.thread.call(finished_trials, self.study) < self.job.trials:
            outcome = await self._trial(await self.thread.call(self.study.ask))
            self.observer.trial_done(outcome)
            failed_in_a_row = failed_in_a_row + 1 if outcome.state == "failed" else 0
            if failed_in_a_row == FAILURES_IN_A_ROW:
                raise ConfigError(
                    f"{FAILURES_IN_A_ROW} trials in a row failed, the last because "
                    f"{outcome.failure}; their runs are in {self.job.tune_dir}"
                )

    async def evaluate(self, config: RunConfig, title: str) -> Summary:
        """One run of `config` on the tune's workers (restarted if its serving settings differ)."""
        return (await self._watched(None, config, title))[1]

    async def _trial(self, trial: optuna.Trial) -> TrialOutcome:
        """One trial played and told to the study, whatever its end."""
        params = await self.thread.call(self.job.setup.space.suggest, trial)
        continues = trial.user_attrs.get(CONTINUES)
        name = f"trial-{trial.number if continues is None else continues}"
        await self.thread.call(trial.set_user_attr, RUN_DIR, name)
        started = time.monotonic()
        try:
            config = trial_config(
                self.job.base, params, self.job.tune_dir / name, self.job.setup.subset
            )
            watch, summary = await self._watched(trial, config, _title(trial.number, params))
        except asyncio.CancelledError:
            # Ctrl-C: told at once, so that the same command again takes the trial up.
            trial.set_user_attr(FAILURE, INTERRUPTED)
            self.study.tell(trial, state=optuna_module().trial.TrialState.FAIL)
            raise
        except AgentEvalError as exc:
            return await self._failed(trial, params, str(exc))
        except BaseExceptionGroup as group:
            # The engine's concurrent work reports a mistake (a bad row, a reward) in a group.
            if (message := mistakes_only(group)) is None:
                raise
            return await self._failed(trial, params, message)
        outcome = TrialOutcome(
            trial.number, params, "complete", self._values(summary), watch.pruned_at,
            seconds=time.monotonic() - started,
        )  # fmt: skip
        return await self._told(trial, outcome, summary)

    async def _told(
        self, trial: optuna.Trial, outcome: TrialOutcome, summary: Summary
    ) -> TrialOutcome:
        """Tell the study how a played trial ended: pruned, its values, or why it has none."""
        state = optuna_module().trial.TrialState
        if outcome.pruned_at is not None:
            await self.thread.call(self.study.tell, trial, state=state.PRUNED)
            return dataclasses.replace(outcome, state="pruned")
        if (why := _no_values(summary, self.job.objectives, outcome.values)) is not None:
            return await self._failed(trial, outcome.params, why)
        values = [value for value in outcome.values if value is not None]
        await self.thread.call(self.study.tell, trial, values)
        return outcome

    async def _watched(
        self, trial: optuna.Trial | None, config: RunConfig, title: str
    ) -> tuple[TrialWatch, Summary]:
        """A run, its running score told to `trial` as it goes: pruning stops it early."""
        checked: Plan = await asyncio.to_thread(plan, config)
        total = checked.total * config.eval.n_samples
        async with self.observer.run_view(title, total) as view:
            reported = trial if len(self.job.objectives) == 1 else None  # Optuna prunes one only
            run_dir = RunDirectory(config.run_dir)
            ks = config.eval.k_values()
            watch = TrialWatch(view, reported, self.job.objectives[0], run_dir, ks, self.thread)
            return watch, await self._play(checked, watch)

    async def _play(self, checked: Plan, watch: TrialWatch) -> Summary:
        """Serve the run's model, play it, keep the workers' load in its run directory."""
        config = checked.config
        served = await self.server.serve(config)
        scorer = await self.server.scorer(config)
        # The proxy may have served earlier trials: this run's load is what it adds.
        before = await worker_load(served.base_url, served.api_key)
        playing = asyncio.create_task(play_served(checked, served, scorer, watch, before))
        try:
            summary = await watch.play(playing)
        except asyncio.CancelledError:
            if watch.pruned_at is None or _from_outside():
                raise
            summary = await asyncio.to_thread(_pruned_summary, config, watch.rates())
        await keep_worker_load(served.base_url, served.api_key, config.run_dir, before)
        return summary

    async def _failed(self, trial: optuna.Trial, params: dict[str, Any], why: str) -> TrialOutcome:
        log.warning("trial %d failed: %s", trial.number, why)
        await self.thread.call(trial.set_user_attr, FAILURE, why)
        await self.thread.call(self.study.tell, trial, state=optuna_module().trial.TrialState.FAIL)
        return TrialOutcome(trial.number, params, "failed", [], failure=why)

    def _values(self, summary: Summary) -> list[float | None]:
        return [objective_value(objective, summary) for objective in self.job.objectives]


def objective_value(objective: Objective, summary: Summary) -> float | None:
    """The objective's figure in a summary; None for one the run lacks."""
    return objective.value(summary.to_dict())


def _no_values(
    summary: Summary, objectives: list[Objective], values: list[float | None]
) -> str | None:
    """Why a finished trial has nothing to tell the study, if so."""
    if not summary.complete:
        return (
            f"{summary.unscored} of {summary.attempts} attempts ended unscored (infrastructure), "
            "more than eval.max_unscored allows"
        )
    missing = [o.metric for o, value in zip(objectives, values, strict=True) if value is None]
    return f"the run has no figure for {', '.join(missing)}" if missing else None


def _from_outside() -> bool:
    """Whether this task itself is being cancelled (Ctrl-C), not only the play it awaited."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _pruned_summary(config: RunConfig, rates: Throughput) -> Summary:
    """A pruned trial's summary over the attempts it finished, written beside them; incomplete."""
    run_dir = RunDirectory(config.run_dir)
    scores = (record.score() for record in run_dir.records())
    ks, seed = config.eval.k_values(), config.seed_scope()
    summary = build_summary(scores, ks, rates, complete=False, seed=seed)
    write_summary(run_dir, summary)
    return summary


def _title(number: int, params: dict[str, Any]) -> str:
    return f"trial {number}: {settings_text(params)}"
