"""What a tune leaves: the best settings as run configs, and their confirmation on all the data.

One objective: best.yaml. Several: pareto-1.yaml, pareto-2.yaml, ... one per trial on the
Pareto front, in order of the first objective. `--confirm` plays each on the whole dataset:
a winner picked on a subset scores higher there than it will elsewhere (the winner's curse),
and confirm.json says by how much.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_eval.metrics import Summary
from agent_eval.metrics.objectives import Objective
from agent_eval.results.files import SUMMARY, RunDirectory
from agent_eval.results.summary import read_summary
from agent_eval.tune.search import Tune, Tuner, objective_value
from agent_eval.tune.study_files import BEST_FILE, CONFIRM_FILE, PARETO_FILE, RUN_DIR
from agent_eval.tune.trials import final_config, write_config

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Chosen:
    """A trial whose settings the tune recommends, and the file they were written to."""

    trial: optuna.trial.FrozenTrial
    path: Path


@dataclass(frozen=True)
class Confirmation:
    """A chosen trial's figures on the subset and on the whole dataset."""

    chosen: Chosen
    run_dir: Path
    subset: Summary | None
    full: Summary


def choose(tuner: Tuner) -> list[Chosen]:
    """Write the best trial's (or the Pareto front's) settings as run configs; which, where."""
    study, job = tuner.study, tuner.job
    for stale in job.tune_dir.glob(PARETO_FILE.format(index="*")):
        stale.unlink()  # an earlier front of this study; the front now is written below
    if len(job.objectives) == 1:
        complete = [trial for trial in study.trials if trial.values is not None]
        trials = [study.best_trial] if complete else []
        names = [BEST_FILE]
    else:
        trials = sorted(study.best_trials, key=lambda trial: _sort_key(trial, job.objectives[0]))
        names = [PARETO_FILE.format(index=index) for index in range(1, len(trials) + 1)]
    chosen = [Chosen(trial, job.tune_dir / name) for trial, name in zip(trials, names, strict=True)]
    for choice in chosen:
        write_config(
            final_config(job.base, choice.trial.params),
            choice.path,
            _header(choice.trial, job.objectives, job.setup.subset, len(study.trials)),
        )
    return chosen


async def confirm(tuner: Tuner, chosen: list[Chosen]) -> list[Confirmation]:
    """Play each chosen config on the whole dataset; write confirm.json."""
    confirmations = []
    for choice in chosen:
        number = choice.trial.number
        config = final_config(tuner.job.base, choice.trial.params)
        config.output.dir = tuner.job.tune_dir / f"confirm-{number}"
        full = await tuner.evaluate(config, f"confirming trial {number} on the whole dataset")
        subset = _trial_summary(tuner.job.tune_dir, choice.trial)
        confirmations.append(Confirmation(choice, config.run_dir, subset, full))
    _write_confirmations(tuner.job.tune_dir, tuner.job.objectives, confirmations)
    return confirmations


def _write_confirmations(
    tune_dir: Path, objectives: list[Objective], confirmations: list[Confirmation]
) -> None:
    entries = [
        {
            "trial": confirmation.chosen.trial.number,
            "config": confirmation.chosen.path.name,
            "run_dir": confirmation.run_dir.name,
            "objectives": {
                objective.metric: {
                    "subset": value,
                    "full": objective_value(objective, confirmation.full),
                }
                for objective, value in zip(
                    objectives, confirmation.chosen.trial.values, strict=True
                )
            },
        }
        for confirmation in confirmations
    ]
    RunDirectory(tune_dir).write_json(CONFIRM_FILE, {"confirmations": entries})


def _trial_summary(tune_dir: Path, trial: optuna.trial.FrozenTrial) -> Summary | None:
    """The summary of a trial's subset run, for its interval; None when it cannot be read."""
    return read_summary(tune_dir / str(trial.user_attrs.get(RUN_DIR, "")) / SUMMARY)


def _sort_key(trial: optuna.trial.FrozenTrial, first: Objective) -> float:
    value = trial.values[0]
    return -value if first.direction == "maximize" else value


def _header(
    trial: optuna.trial.FrozenTrial, objectives: list[Objective], subset: int | None, trials: int
) -> str:
    scores = ", ".join(
        f"{objective.metric} {value:.4g}"
        for objective, value in zip(objectives, trial.values, strict=True)
    )
    played = f"a {subset}-sample subset" if subset is not None else "the whole dataset"
    settings = ", ".join(f"{key}={value!r}" for key, value in trial.params.items())
    return (
        f"agent-eval tune: trial {trial.number} of {trials}, {scores} on {played}.\n"
        f"Its settings: {settings}.\n"
        "Play it on the whole dataset: agent-eval run --config THIS_FILE"
    )


def confirmation_line(confirmation: Confirmation, job: Tune) -> str:
    """The full-dataset accuracy and its interval beside the subset's."""
    number, full, subset = confirmation.chosen.trial.number, confirmation.full, confirmation.subset
    line = f"trial {number} on the whole dataset: accuracy {_estimate(full)}"
    if subset is None or job.setup.subset is None:
        return line
    return f"{line}; on the {job.setup.subset}-sample subset {_estimate(subset)}"


def _estimate(summary: Summary) -> str:
    estimate = summary.accuracy
    return f"{estimate.value:.3f} [{estimate.low:.3f}, {estimate.high:.3f}] (n={estimate.n:,})"
