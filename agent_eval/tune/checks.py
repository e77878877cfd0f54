"""Checks before a tune launches anything: every searched value is one a run takes."""

from __future__ import annotations

from agent_eval.errors import AgentEvalError, ConfigError
from agent_eval.run.evaluation import plan
from agent_eval.tune.search import Tune
from agent_eval.tune.trials import trial_config


def check_space(job: Tune) -> None:
    """Plan the base run, then each searched setting at its ends and choices, one at a time.

    A value a run would refuse (a negative temperature, an unknown agent option, a backend
    this machine cannot launch) stops the tune here, not in trial 30.
    """
    where = job.tune_dir / "trial-check"  # planned, never made: planning writes nothing
    plan(trial_config(job.base, {}, where, job.setup.subset))
    space = job.setup.space
    for corner in space.corners():
        ((key, value),) = corner.items()
        try:
            plan(trial_config(job.base, corner, where, job.setup.subset))
        except AgentEvalError as exc:
            raise ConfigError(f"{space.source}: {key}={value!r} would be refused: {exc}") from None
