"""What a run's results depend on: the settings and dataset bytes a resume must share with it.

Where and how fast the model runs (backend, scheduler, concurrency, processes, proxy,
timeouts, output directory) is not part of it: changing those on a resume is fine.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from agent_eval.data import dataset_file
from agent_eval.results.files import RunDirectory
from agent_eval.run.config import RunConfig

log = logging.getLogger(__name__)

RUN_FACTS = "run.json"
"""What a run's results depend on that is not a setting: the digest of its dataset file."""
IDENTITY = (
    "model.path",
    "model.name",
    "dataset.name",
    "dataset.path",
    "dataset.limit",
    "dataset.subset",
    "dataset.perturb",
    "agent",
    "sampling",
    "reward.function",
    "eval.seed",
    "eval.n_samples",
)
"""The settings, or whole sections, that change a run's results."""
DIGEST = "dataset.sha256"


@dataclass(frozen=True)
class Difference:
    """One identity value the run was made with and the other a resume would use."""

    key: str
    saved: Any
    resumed: Any


def identity(config: RunConfig) -> dict[str, Any]:
    """The identity settings of a resolved config, by dotted key, as JSON values."""
    return {key: value for key, value in _settings(config) if _is_identity(key)}


def dataset_digest(config: RunConfig) -> str | None:
    """The SHA-256 of the dataset file's bytes; None when the dataset is no file of the user's."""
    path = dataset_file(config.dataset_name, config.dataset.path)
    if path is None:
        return None
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def save_run_facts(config: RunConfig) -> None:
    """Write run.json: the dataset digest a resume checks its file against."""
    RunDirectory(config.run_dir).write_json(RUN_FACTS, {DIGEST: dataset_digest(config)})


def saved_facts(run_dir: Path) -> dict[str, Any]:
    """A run's run.json; empty (nothing to check) for a run made before it was written."""
    path = run_dir / RUN_FACTS
    if not path.is_file():
        log.warning("%s has no %s: the dataset file is not checked on resume", run_dir, RUN_FACTS)
        return {}
    facts: dict[str, Any] = json.loads(path.read_text())
    return facts


def differences(saved: Mapping[str, Any], resumed: Mapping[str, Any]) -> list[Difference]:
    """The values recorded in `saved` that `resumed` does not share."""
    return [
        Difference(key, value, resumed.get(key))
        for key, value in saved.items()
        if resumed.get(key) != value
    ]


def describe(run_dir: Path, found: list[Difference], forced: bool = False) -> str:
    """What differs, in one sentence: `RUN was made with eval.seed=0; this resume would use
    eval.seed=5: results would mix two setups.`"""
    would, mix = ("uses", "mix") if forced else ("would use", "would mix")
    was = _listed(f"{d.key}={_shown(d.key, d.saved)}" for d in found)
    now = _listed(f"{d.key}={_shown(d.key, d.resumed)}" for d in found)
    edited = any(d.key == DIGEST for d in found)
    why = " (the dataset file changed since the run started)" if edited else ""
    return (
        f"{run_dir} was made with {was}; this resume {would} {now}{why}: results {mix} two setups."
    )


def _settings(model: BaseModel, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every setting of `model` by dotted key; a free-form mapping (options) is one value."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            yield from _settings(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", to_jsonable_python(value)


def _is_identity(key: str) -> bool:
    return any(key == part or key.startswith(f"{part}.") for part in IDENTITY)


def _shown(key: str, value: Any) -> str:
    # A digest's first 12 hex digits tell two files apart; all 64 would bury the message.
    return value[:12] if key == DIGEST and isinstance(value, str) else str(value)


def _listed(parts: Iterator[str]) -> str:
    items = list(parts)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
