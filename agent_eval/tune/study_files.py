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
from urllib.parse import quote

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


def storage_url(tune_dir: Path, read_only: bool = False) -> str:
    """The SQLAlchemy URL of the study in `tune_dir`; read-only cannot write (nor make tables).

    A file URI, quoted: a folder named with `?` or `#` stays one path.
    """
    from sqlalchemy.engine import URL  # Optuna's own dependency: there whenever Optuna is

    database = f"file:{quote(str((tune_dir / STUDY_FILE).resolve()))}"
    query = {"mode": "ro" if read_only else "rwc", "uri": "true"}
    return URL.create("sqlite", database=database, query=query).render_as_string()


def display_url(tune_dir: Path) -> str:
    """The study's address as `optuna-dashboard` takes it on a command line."""
    return f"sqlite:///{(tune_dir / STUDY_FILE).resolve()}"


def is_tune_directory(path: Path) -> bool:
    """Whether `path` is the output of `agent-eval tune`."""
    return (path / STUDY_FILE).is_file()


def load_study(tune_dir: Path, read_only: bool = True, **how: Any) -> optuna.Study:
    """The study of `tune_dir` (read-only unless told, with `how`'s sampler and pruner); what
    is not one is a ConfigError naming it."""
    from sqlalchemy.exc import SQLAlchemyError

    optuna = optuna_module()
    study_db = tune_dir / STUDY_FILE
    if not study_db.is_file():
        raise ConfigError(
            f"{tune_dir} holds no {STUDY_FILE}: not a tune directory; pass the folder "
            "`agent-eval tune` wrote to (its -o)"
        )
    try:
        storage = storage_url(tune_dir, read_only)
        return optuna.load_study(study_name=STUDY_NAME, storage=storage, **how)
    except KeyError:
        raise ConfigError(
            f"{study_db} holds no study named {STUDY_NAME}: not written by `agent-eval tune`"
        ) from None
    except (SQLAlchemyError, RuntimeError) as exc:
        reason = str(exc).splitlines()[0]
        raise ConfigError(
            f"{study_db} cannot be read as an Optuna study ({reason}); pass the folder "
            "`agent-eval tune` wrote to"
        ) from None


def objectives_of(study: optuna.Study) -> list[dict[str, Any]]:
    """The study's objectives as recorded: `[{"metric": ..., "direction": ...}]`."""
    recorded: list[dict[str, Any]] = study.user_attrs.get(OBJECTIVES, [])
    return recorded
