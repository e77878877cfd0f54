"""A finished run read back from its directory: attempts, config, wall time and worker load.

samples.jsonl is the one source of truth: the summary is rebuilt from it the way the engine
builds it. Only the wall time, which the attempts do not hold, comes from summary.json.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from agent_eval.config import CONFIG_FILE, EvalSection, RunConfig, load_run_config
from agent_eval.errors import ConfigError
from agent_eval.metrics import AttemptScore, Summary, summarize
from agent_eval.results.files import SAMPLES, SUMMARY, WORKERS, RunDirectory


@dataclass(frozen=True)
class WorkerLoad:
    """One worker's share of a run, as the proxy counted it."""

    url: str
    served: int
    failures: int
    healthy: bool
    breaker: str
    models: tuple[str, ...] = ()


@dataclass(frozen=True)
class Run:
    """Everything a report shows of one run; `notes` say what was left out and why."""

    path: Path
    config: RunConfig | None
    scores: list[AttemptScore]
    summary: Summary
    workers: list[WorkerLoad] | None
    notes: list[str]

    @property
    def title(self) -> str:
        """ "agent on dataset", or the folder's name for a run without config.yaml."""
        if self.config is None:
            return self.path.name
        return f"{self.config.agent.name} on {self.config.dataset_name}"


def load_run(path: Path) -> Run:
    """Read a run directory; one that is not a run, or holds a corrupt line, is a ConfigError."""
    samples = path / SAMPLES
    if not path.exists():
        raise ConfigError(f"{path} does not exist; pass a run directory (`agent-eval run` -o)")
    if not samples.is_file():
        raise ConfigError(
            f"{path} holds no {SAMPLES}: not a run directory; pass the folder "
            "`agent-eval run` wrote its results to (its --run-dir)"
        )
    notes: list[str] = []
    scores = _read_scores(path, notes)
    config = _read_config(path)
    ks = _k_values(config, scores, notes)
    try:
        summary = summarize(scores, _wall_time(path / SUMMARY, notes), ks)
    except ValueError as exc:  # a repeated (sample_id, attempt): the file was edited or merged
        raise ConfigError(f"{samples}: {exc}") from None
    if config is not None:
        summary = replace(summary, seed=config.seed_scope())
    return Run(path, config, scores, summary, read_workers(path / WORKERS, notes), notes)


def _read_scores(path: Path, notes: list[str]) -> list[AttemptScore]:
    """Every attempt's score; a torn last line (a crash mid-write) is left out, with a note."""
    run_dir = RunDirectory(path)

    def torn(where: str) -> None:
        notes.append(f"{where} was cut off mid-write and is left out")

    scores = [record.score() for record in run_dir.records(on_torn=torn)]
    if not scores:
        raise ConfigError(
            f"{run_dir.samples} holds no attempts yet; report on a run that has started"
        )
    return scores


def _read_config(run_dir: Path) -> RunConfig | None:
    path = run_dir / CONFIG_FILE
    return load_run_config(path, {}, []) if path.is_file() else None


def _k_values(config: RunConfig | None, scores: list[AttemptScore], notes: list[str]) -> list[int]:
    """The run's k values, less those above the fewest attempts a sample has (a stopped run)."""
    fewest = min(Counter(score.sample_id for score in scores).values())
    section = config.eval if config is not None else EvalSection(n_samples=fewest)
    dropped = [str(k) for k in section.k_values() if k > fewest]
    if dropped:
        notes.append(f"k = {', '.join(dropped)} left out: a sample has only {fewest} attempt(s)")
    return [k for k in section.k_values() if k <= fewest]


def _wall_time(path: Path, notes: list[str]) -> float:
    """The wall time summary.json recorded; NaN (rates left out) without one."""
    try:
        return float(json.loads(path.read_text())["efficiency"]["throughput"]["wall_time_s"])
    except FileNotFoundError:
        notes.append(f"no {SUMMARY} (the run did not finish): rates per second are left out")
    except (ValueError, KeyError, TypeError) as exc:
        notes.append(f"{SUMMARY} is unreadable ({exc!r}): rates per second are left out")
    return math.nan


def read_workers(path: Path, notes: list[str]) -> list[WorkerLoad] | None:
    if not path.is_file():
        return None
    try:
        return [_worker(entry) for entry in json.loads(path.read_text())["workers"]]
    except (ValueError, KeyError, TypeError) as exc:
        notes.append(f"{WORKERS} is unreadable ({exc!r}): per-worker load is left out")
        return None


def _worker(entry: dict[str, Any]) -> WorkerLoad:
    return WorkerLoad(
        url=str(entry["url"]),
        served=int(entry["served"]),
        failures=int(entry.get("failures", 0)),
        healthy=bool(entry.get("healthy", False)),
        breaker=str(entry.get("breaker", "unknown")),
        models=tuple(str(model) for model in entry.get("models", [])),
    )
