"""The Optuna study of a tune directory: made or taken up again, its sampler and pruner chosen.

Every storage call goes through one thread (`StudyThread`): SQLite writes block, and the
event loop must not.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fcntl
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeVar

from agent_eval.errors import ConfigError
from agent_eval.metrics.objectives import Objective
from agent_eval.tune.space import SearchSpace
from agent_eval.tune.study_files import (
    FAILURE,
    OBJECTIVES,
    SPACE,
    STUDY_NAME,
    SUBSET,
    is_tune_directory,
    load_study,
    optuna_module,
    storage_url,
)

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

R = TypeVar("R")
SamplerName = Literal["tpe", "random", "nsga2"]
PrunerName = Literal["median", "halving", "none"]
INTERRUPTED = "interrupted"
CONTINUES = "continues"
"""A trial that plays again an interrupted trial's settings (in its run directory): its number."""
LOCK_FILE = ".lock"
WARMUP_PERCENT = 20
"""Pruning waits until a fifth of a trial's attempts: earlier, its score is mostly noise."""


@dataclass(frozen=True)
class StudySetup:
    """What the study is of, and how it searches."""

    tune_dir: Path
    objectives: list[Objective]
    space: SearchSpace
    subset: int | None
    sampler: SamplerName
    pruner: PrunerName
    seed: int


class StudyThread:
    """Runs the study's storage calls one at a time on a thread of their own."""

    def __init__(self) -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="study")

    async def call(self, function: Callable[..., R], *args: Any, **kwargs: Any) -> R:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(function, *args, **kwargs))

    def close(self) -> None:
        self._pool.shutdown(wait=True)


def hold_tune_dir(tune_dir: Path) -> TextIO:
    """Lock the tune directory for this tune, as long as the file returned stays open.

    Two tunes on one study would each take the other's running trials for interrupted ones.
    """
    tune_dir.mkdir(parents=True, exist_ok=True)
    handle = (tune_dir / LOCK_FILE).open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise ConfigError(
            f"another agent-eval tune is running in {tune_dir}; wait for it, or give another -o"
        ) from None
    return handle


def open_study(setup: StudySetup) -> optuna.Study:
    """The study in the tune directory: made, or loaded when it is the same search again."""
    optuna = optuna_module()
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the tune prints its own rows
    sampler, pruner = _sampler(setup), _pruner(setup)
    if is_tune_directory(setup.tune_dir):
        study = load_study(setup.tune_dir, read_only=False, sampler=sampler, pruner=pruner)
        _check_same_search(study, setup)
        return study
    setup.tune_dir.mkdir(parents=True, exist_ok=True)
    directions = [objective.direction for objective in setup.objectives]
    study = optuna.create_study(
        storage=storage_url(setup.tune_dir),
        study_name=STUDY_NAME,
        directions=directions,
        sampler=sampler,
        pruner=pruner,
    )
    study.set_user_attr(OBJECTIVES, [objective.as_record() for objective in setup.objectives])
    study.set_user_attr(SPACE, setup.space.as_written())
    study.set_user_attr(SUBSET, setup.subset)
    return study


def take_up_interrupted(study: optuna.Study) -> int:
    """Queue again the settings of each trial an interruption stopped; how many."""
    state = optuna_module().trial.TrialState
    for trial in study.get_trials(deepcopy=False, states=(state.RUNNING,)):
        # A trial still marked running belongs to a tune that was killed outright.
        study.tell(trial.number, state=state.FAIL)
    trials = study.get_trials(deepcopy=False)
    continued = {trial.user_attrs.get(CONTINUES) for trial in trials}
    queued = 0
    for trial in trials:
        if interrupted(trial) and trial.number not in continued:
            study.enqueue_trial(trial.params, user_attrs={CONTINUES: trial.number})
            queued += 1
    return queued


def interrupted(trial: optuna.trial.FrozenTrial) -> bool:
    """Whether an interruption stopped `trial`: failed, and no failure of its own recorded."""
    failed = trial.state == optuna_module().trial.TrialState.FAIL
    return failed and trial.user_attrs.get(FAILURE, INTERRUPTED) == INTERRUPTED


def finished_trials(study: optuna.Study) -> int:
    """Trials that count towards --trials: complete, pruned, or failed for a reason of theirs."""
    state = optuna_module().trial.TrialState
    return sum(
        trial.state in (state.COMPLETE, state.PRUNED, state.FAIL) and not interrupted(trial)
        for trial in study.get_trials(deepcopy=False)
    )


def _check_same_search(study: optuna.Study, setup: StudySetup) -> None:
    """Refuse to mix two searches in one study: its history would mislead the sampler."""
    given = {
        OBJECTIVES: [objective.as_record() for objective in setup.objectives],
        SPACE: setup.space.as_written(),
        SUBSET: setup.subset,
    }
    differ = [name for name, value in given.items() if study.user_attrs.get(name) != value]
    if differ:
        was = "; ".join(f"{name}: {study.user_attrs.get(name)}" for name in differ)
        raise ConfigError(
            f"{setup.tune_dir} holds a study of another search ({was}); give the same "
            f"{' and '.join(differ)} to continue it, or another -o to start a new one"
        )


def _sampler(setup: StudySetup) -> optuna.samplers.BaseSampler:
    samplers = optuna_module().samplers
    if setup.sampler == "random":
        return samplers.RandomSampler(seed=setup.seed)
    if setup.sampler == "nsga2":
        return samplers.NSGAIISampler(seed=setup.seed)
    # TPE handles one objective and several (MOTPE), and learns from pruned trials too.
    return samplers.TPESampler(seed=setup.seed)


def _pruner(setup: StudySetup) -> optuna.pruners.BasePruner:
    pruners = optuna_module().pruners
    if setup.pruner == "none" or len(setup.objectives) > 1:
        return pruners.NopPruner()  # Optuna prunes on one objective only
    if setup.pruner == "halving":
        return pruners.SuccessiveHalvingPruner(min_resource=WARMUP_PERCENT, reduction_factor=3)
    return pruners.MedianPruner(n_startup_trials=4, n_warmup_steps=WARMUP_PERCENT)
