"""A tune directory read back for its report: the objectives, the space, every trial, the
parameter importances and the confirmation runs; and the table the terminal prints of it.

Read-only: the study is opened as a read-only SQLite database. A missing or unreadable run
directory, summary or confirmation is a note; only a folder without a readable study is an error.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from agent_eval.metrics.objectives import Direction, Objective
from agent_eval.report.svg import Bar
from agent_eval.results.files import SUMMARY
from agent_eval.results.summary import read_summary, summary_json
from agent_eval.settings import value_at
from agent_eval.tune import study_files

if TYPE_CHECKING:
    import optuna

ACCURACY = "quality.accuracy"
COMPLETE, PRUNED = "complete", "pruned"


@dataclass(frozen=True)
class Interval:
    """A score and, when summary.json gave one, its 95% interval over n."""

    value: float
    low: float = math.nan
    high: float = math.nan
    n: int | None = None

    def bar(self) -> Bar:
        return Bar(self.value, self.low, self.high)


@dataclass(frozen=True)
class Trial:
    """One trial as the report shows it; `intermediate`: (% of attempts finished, running score)."""

    number: int
    state: str
    params: dict[str, Any]
    values: tuple[float, ...] | None
    intermediate: tuple[tuple[int, float], ...]
    seconds: float | None
    run_dir: str | None
    failure: str | None
    accuracy: Interval | None
    """quality.accuracy on the subset, with its interval, from the trial's summary.json."""


@dataclass(frozen=True)
class ConfirmedScore:
    """One objective of a confirmed config: on the subset, and on the whole dataset."""

    metric: str
    maximize: bool | None
    subset: Interval
    full: Interval


@dataclass(frozen=True)
class Confirmation:
    """`--confirm`'s run of one trial's settings on the whole dataset."""

    trial: int
    config: str
    run_dir: str
    scores: tuple[ConfirmedScore, ...]


@dataclass(frozen=True)
class Importance:
    """Each parameter's importance for one objective, or why there are none."""

    metric: str
    by_param: dict[str, float]
    why_not: str | None


@dataclass(frozen=True)
class Tuned:
    """Everything the report shows of a tune directory; `best` holds the trial numbers on the
    Pareto front (with one objective: the best trial, and any tied with it)."""

    path: Path
    objectives: tuple[Objective, ...]
    space: dict[str, Any]
    subset: int | None
    trials: tuple[Trial, ...]
    best: frozenset[int]
    importances: tuple[Importance, ...]
    confirmations: tuple[Confirmation, ...]
    notes: tuple[str, ...]

    def param_names(self) -> list[str]:
        """The space's keys, then any other parameter a trial has, in order of appearance."""
        return list(dict.fromkeys([*self.space, *(n for t in self.trials for n in t.params)]))


def load_tune(path: Path) -> Tuned:
    """Read a tune directory; a folder without a readable study is a ConfigError naming it."""
    optuna = study_files.optuna_module()
    study = study_files.load_study(path)
    notes: list[str] = []
    objectives = _objectives(study, notes)
    trials = tuple(_trial(path, frozen, notes) for frozen in study.get_trials(deepcopy=False))
    attrs = study.user_attrs
    space = attrs.get(study_files.SPACE)
    if not isinstance(space, dict):
        notes.append("the study records no search space: the parameters are the trials' own")
    subset = attrs.get(study_files.SUBSET)
    return Tuned(
        path=path,
        objectives=objectives,
        space=space if isinstance(space, dict) else {},
        subset=subset if isinstance(subset, int) else None,
        trials=trials,
        best=frozenset(trial.number for trial in study.best_trials),
        importances=_importances(optuna, study, objectives, trials),
        confirmations=_confirmations(path, objectives, trials, notes),
        notes=tuple(notes),
    )


def tune_table(tuned: Tuned) -> Table:
    """Trial, state, each parameter, each objective's value, seconds; the best marked."""
    mark = "best" if len(tuned.objectives) == 1 else "Pareto front"
    table = Table(title="trials", title_justify="left", caption=f"*: {mark}")
    table.add_column("trial", justify="right")
    table.add_column("state")
    for name in tuned.param_names():
        table.add_column(Text(name), justify="right")
    for objective in tuned.objectives:
        table.add_column(Text(f"{objective.metric} ({objective.direction})"), justify="right")
    table.add_column("seconds", justify="right")
    for trial in tuned.trials:
        best = trial.number in tuned.best
        table.add_row(
            f"{trial.number}{' *' if best else ''}",
            Text(state_text(trial)),
            *[Text(param_text(trial.params.get(name))) for name in tuned.param_names()],
            *[value_text(trial, index) for index in range(len(tuned.objectives))],
            seconds_text(trial.seconds),
            style="bold green" if best else None,
        )
    return table


def state_text(trial: Trial) -> str:
    """The trial's state, and why it failed when it did."""
    return f"{trial.state} ({trial.failure})" if trial.failure else trial.state


def param_text(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def value_text(trial: Trial, index: int) -> str:
    """The objective's value; for a pruned trial, its last running score, marked as such."""
    if trial.values is not None and index < len(trial.values):
        return f"{trial.values[index]:.4g}"
    if trial.state == PRUNED and trial.intermediate:
        step, value = trial.intermediate[-1]
        return f"{value:.4g} (pruned at {step}%)"
    return "-"


def seconds_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:,.0f}" if seconds >= 100 else f"{seconds:.1f}"


def running_value(trial: Trial) -> float | None:
    """The last score a trial reported while it ran, if any."""
    return trial.intermediate[-1][1] if trial.intermediate else None


def metric_of(summary: dict[str, Any], metric: str) -> Interval | None:
    """The metric at a dotted path of summary.json: an estimate with its interval, or a number."""
    found = value_at(summary, metric)
    if isinstance(found, dict) and "value" in found:
        n = found.get("n")
        return Interval(
            _float(found["value"]),
            _float(found.get("low")),
            _float(found.get("high")),
            n if isinstance(n, int) else None,
        )
    if isinstance(found, int | float) and not isinstance(found, bool):
        return Interval(float(found))
    return None


def _objectives(study: optuna.Study, notes: list[str]) -> tuple[Objective, ...]:
    """The recorded objectives, in the directions Optuna optimised them."""
    directions = [direction.name.lower() for direction in study.directions]
    recorded = study_files.objectives_of(study)
    names = [entry.get("metric") for entry in recorded if isinstance(entry, dict)]
    if len(names) != len(directions) or not all(isinstance(name, str) for name in names):
        notes.append(
            f"the study records no objectives matching its {len(directions)} direction(s): "
            "they are shown as objective 1, 2, ..."
        )
        names = [f"objective {index + 1}" for index in range(len(directions))]
    return tuple(Objective(str(n), _direction(d)) for n, d in zip(names, directions, strict=True))


def _direction(name: str) -> Direction:
    return "maximize" if name == "maximize" else "minimize"


def _trial(path: Path, frozen: optuna.trial.FrozenTrial, notes: list[str]) -> Trial:
    attrs = frozen.user_attrs
    run_dir = attrs.get(study_files.RUN_DIR)
    failure = attrs.get(study_files.FAILURE)
    summary = _summary(path / str(run_dir), notes) if run_dir else None
    return Trial(
        number=frozen.number,
        state=frozen.state.name.lower(),
        params=dict(frozen.params),
        values=tuple(frozen.values) if frozen.values is not None else None,
        intermediate=tuple(sorted(frozen.intermediate_values.items())),
        seconds=frozen.duration.total_seconds() if frozen.duration is not None else None,
        run_dir=str(run_dir) if run_dir else None,
        failure=str(failure) if failure else None,
        accuracy=metric_of(summary, ACCURACY) if summary else None,
    )


def _summary(run_dir: Path, notes: list[str]) -> dict[str, Any] | None:
    """A run directory's summary.json, as the current version writes it; None when there is
    none yet (a trial still running)."""
    path = run_dir / SUMMARY
    summary = read_summary(path)
    if summary is None:
        if path.exists():
            notes.append(f"{path} is unreadable: its intervals are left out")
        return None
    return summary_json(summary)


def _importances(
    optuna: Any, study: optuna.Study, objectives: tuple[Objective, ...], trials: tuple[Trial, ...]
) -> tuple[Importance, ...]:
    """Per objective, the importance of each parameter that took more than one value."""
    complete = [trial for trial in trials if trial.state == COMPLETE]
    names = dict.fromkeys(name for trial in complete for name in trial.params)
    varied = [n for n in names if len({repr(t.params.get(n)) for t in complete}) > 1]
    why_not = None
    if len(complete) < 2:
        why_not = (
            f"Parameter importances need two complete trials or more; there are {len(complete)}."
        )
    elif not varied:
        why_not = (
            "No parameter took more than one value in the complete trials, so none can explain "
            "a difference between them: no importances."
        )
    if why_not is not None:
        return tuple(Importance(objective.metric, {}, why_not) for objective in objectives)
    return tuple(
        _importance(optuna, study, varied, index, objective)
        for index, objective in enumerate(objectives)
    )


def _importance(
    optuna: Any, study: optuna.Study, params: list[str], index: int, objective: Objective
) -> Importance:
    """PED-ANOVA (Optuna's default) for one objective; it counts low targets as good."""
    sign = -1.0 if objective.maximize else 1.0
    with warnings.catch_warnings():
        # It warns that low targets count as good, which the sign above takes care of.
        warnings.simplefilter("ignore")
        try:
            found = optuna.importance.get_param_importances(
                study, params=params, target=lambda trial: sign * trial.values[index]
            )
        except (ValueError, RuntimeError) as exc:
            return Importance(objective.metric, {}, f"Optuna could not compute them: {exc}")
    return Importance(objective.metric, dict(found), None)


def _confirmations(
    path: Path, objectives: tuple[Objective, ...], trials: tuple[Trial, ...], notes: list[str]
) -> tuple[Confirmation, ...]:
    confirm = path / study_files.CONFIRM_FILE
    if not confirm.is_file():
        return ()
    run_dirs = {trial.number: trial.run_dir for trial in trials}
    directions = {objective.metric: objective.maximize for objective in objectives}
    try:
        entries = json.loads(confirm.read_text())["confirmations"]
        return tuple(_confirmation(path, entry, run_dirs, directions, notes) for entry in entries)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        notes.append(f"{confirm} is unreadable ({exc!r}): the confirmation is left out")
        return ()


def _confirmation(
    path: Path,
    entry: dict[str, Any],
    run_dirs: dict[int, str | None],
    directions: dict[str, bool],
    notes: list[str],
) -> Confirmation:
    """One confirmed config; the intervals come from the two runs' summary.json files."""
    trial, run_dir = int(entry["trial"]), str(entry["run_dir"])
    subset_dir = run_dirs.get(trial)
    subset_summary = _summary(path / subset_dir, notes) if subset_dir else None
    full_summary = _summary(path / run_dir, notes)
    if full_summary is None:
        notes.append(f"{path / run_dir / SUMMARY} is missing: the full run's interval is left out")
    scores = tuple(
        ConfirmedScore(
            metric=metric,
            maximize=directions.get(metric),
            subset=_measured(figures["subset"], subset_summary, metric),
            full=_measured(figures["full"], full_summary, metric),
        )
        for metric, figures in entry["objectives"].items()
    )
    return Confirmation(trial, str(entry.get("config", "")), run_dir, scores)


def _measured(value: float, summary: dict[str, Any] | None, metric: str) -> Interval:
    """`value` as confirm.json recorded it, with the interval its run's summary gives."""
    found = metric_of(summary, metric) if summary else None
    if found is None:
        return Interval(float(value))
    return Interval(float(value), found.low, found.high, found.n)


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)
