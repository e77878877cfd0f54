"""The runs under the roots `agent-eval view` was given: where they are, what and how far along."""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval.errors import AgentEvalError
from agent_eval.results.files import DECISIONS, SAMPLES, SUMMARY
from agent_eval.results.summary import read_summary, summary_json
from agent_eval.run.config import CONFIG_FILE, load_run_config

STALE_S = 30.0
"""An unfinished run whose samples.jsonl has not changed for this long is taken as interrupted."""


@dataclass(frozen=True)
class RunDir:
    """One run or watch directory found under a root; `id` is its path from the root's parent."""

    id: str
    path: Path
    kind: str  # "run" or "watch"


@dataclass(frozen=True)
class Described:
    """What config.yaml says a run evaluates; None where there is no readable config."""

    agent: str | None = None
    model: str | None = None
    dataset: str | None = None


def find_runs(roots: list[Path]) -> dict[str, RunDir]:
    """Every run and watch directory under `roots`, by id; symlinks are never followed."""
    found: dict[str, RunDir] = {}
    for root in roots:
        base = root.resolve()
        for folder, _dirs, files in os.walk(base, followlinks=False):
            kind = _kind(set(files))
            path = Path(folder)
            if kind is None or not _inside(path, base):
                continue
            run_id = path.relative_to(base.parent).as_posix()
            found.setdefault(run_id, RunDir(run_id, path, kind))
    return found


def _kind(files: set[str]) -> str | None:
    if DECISIONS in files:
        return "watch"
    if SAMPLES in files or CONFIG_FILE in files:
        return "run"
    return None


def _inside(path: Path, base: Path) -> bool:
    """Whether the run's files, symlinks resolved, stay inside the root."""
    names = (SAMPLES, SUMMARY, CONFIG_FILE, DECISIONS)
    return all((path / name).resolve().is_relative_to(base) for name in names)


def status(run: RunDir, now: float | None = None) -> str:
    """'finished' (summary.json written), 'running' (written to lately), else 'interrupted'."""
    if (run.path / SUMMARY).is_file():
        return "finished"
    changed = _last_change(run)
    if changed is not None and (now or time.time()) - changed <= STALE_S:
        return "running"
    return "finished" if run.kind == "watch" else "interrupted"


def _last_change(run: RunDir) -> float | None:
    """When the run last wrote: a watch writes its step runs' samples between decisions."""
    if run.kind == "watch":
        written = [run.path / DECISIONS, *run.path.glob(f"step-*/*/{SAMPLES}")]
    else:
        written = [run.path / SAMPLES]
    stamps = [stamp for path in written if (stamp := _mtime(path)) is not None]
    return max(stamps, default=None) or _mtime(run.path / CONFIG_FILE)


def started(run: RunDir) -> str | None:
    """When the run began: config.yaml is written first; else when its samples were."""
    stamp = _mtime(run.path / CONFIG_FILE) or _mtime(run.path / SAMPLES)
    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")


def described(run: RunDir) -> Described:
    """The agent, model and dataset of the run's config.yaml, read again only when it changes."""
    path = run.path / CONFIG_FILE
    stamp = _mtime(path)
    return Described() if stamp is None else _described(path, stamp)


@functools.lru_cache(maxsize=256)
def _described(path: Path, stamp: float) -> Described:
    # `stamp` is part of the cache key: an edited config is read again.
    try:
        config = load_run_config(path, {}, [])
    except (AgentEvalError, ValueError):
        return Described()
    return Described(config.agent.name, config.model.name, config.dataset_name)


def written_summary(run: RunDir) -> dict[str, Any] | None:
    """summary.json read through its model, as this version writes it; None when absent or
    unreadable (being replaced, corrupt, newer)."""
    summary = read_summary(run.path / SUMMARY)
    return None if summary is None else summary_json(summary)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
