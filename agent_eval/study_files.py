"""A tune directory's files: the Optuna study, its recorded facts, the confirmation runs.

Written by `agent-eval tune`, read by it again on resume and by the report.

The study (Optuna's SQLite storage, so `optuna-dashboard sqlite:///DIR/study.db` opens it)
keeps in its user attributes the objectives (a list of `{"metric", "direction"}`), the search
space as space.yaml gave it, and the subset size; each trial keeps its run directory (relative
to the tune directory) and, when it failed, why. With one objective, a trial's intermediate
values are its running objective, Optuna's `step` being the percent of its attempts finished.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from agent_eval.errors import ConfigError

if TYPE_CHECKING:
    import optuna

STUDY_FILE = "study.db"
STUDY_NAME = "agent-eval-tune"
CONFIRM_FILE = "confirm.json"
"""`--confirm`'s figures: per confirmed config, each objective on the subset and in full."""
BEST_FILE = "best.yaml"
PARETO_FILE = "pareto-{index}.yaml"

OBJECTIVES = "objectives"
SPACE = "space"
SUBSET = "subset"
RUN_DIR = "run_dir"
FAILURE = "failure"


def optuna_module() -> ModuleType:
    """Optuna, imported; its absence says which extra to install."""
    try:
        return importlib.import_module("optuna")
    except ImportError:
        raise ConfigError(
            "tuning needs Optuna, which is not installed: pip install 'agent-eval[tune]'"
        ) from None


def storage_url(tune_dir: Path) -> str:
    """The SQLAlchemy URL of the study in `tune_dir`."""
    return f"sqlite:///{(tune_dir / STUDY_FILE).resolve()}"


def is_tune_directory(path: Path) -> bool:
    """Whether `path` is the output of `agent-eval tune`."""
    return (path / STUDY_FILE).is_file()


def load_study(tune_dir: Path) -> optuna.Study:
    """The study of `tune_dir`; a folder without one is a ConfigError."""
    optuna = optuna_module()
    if not is_tune_directory(tune_dir):
        raise ConfigError(f"{tune_dir} holds no {STUDY_FILE}: not a tune directory")
    return optuna.load_study(study_name=STUDY_NAME, storage=storage_url(tune_dir))


def objectives_of(study: optuna.Study) -> list[dict[str, Any]]:
    """The study's objectives as recorded: `[{"metric": ..., "direction": ...}]`."""
    recorded: list[dict[str, Any]] = study.user_attrs.get(OBJECTIVES, [])
    return recorded
