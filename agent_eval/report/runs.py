"""A finished run read back from its directory: attempts, config, wall time and worker load.

samples.jsonl is the one source of truth: the summary is rebuilt from it by the engine's own
builder. Only what the attempts do not hold comes from summary.json: the rates the run measured
and whether it stopped early.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.metrics import AttemptScore, Summary
from agent_eval.report.programs import Programs
from agent_eval.results.files import SAMPLES, SUMMARY, WORKERS, RunDirectory
from agent_eval.results.summary import UNMEASURED, build_summary, read_summary
from agent_eval.run.config import CONFIG_FILE, EvalSection, RunConfig, load_run_config


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
    programs: Programs = field(default_factory=Programs)
    """The attempts that ran a program (the command runner's), and those to show."""

    @property
    def title(self) -> str:
        """ "agent on dataset", or the folder's name for a run without config.yaml."""
        if self.config is None:
            return self.path.name
        return f"{self.config.agent.name} on {self.config.dataset_name}"


def load_run(path: Path, as_written: bool = False) -> Run:
    """Read a run directory; one that is not a run, or holds a corrupt line, is a ConfigError.
    `as_written`: the summary summary.json holds, when readable, not one rebuilt from the
    scores (half the time of reading a big run)."""
    samples = path / SAMPLES
    if not path.exists():
        raise ConfigError(f"{path} does not exist; pass a run directory (`agent-eval run` -o)")
    if not samples.is_file():
        raise ConfigError(
            f"{path} holds no {SAMPLES}: not a run directory; pass the folder "
            "`agent-eval run` wrote its results to (its --run-dir)"
        )
    notes: list[str] = []
    programs = Programs()
    scores = _read_scores(path, notes, programs)
    config = _read_config(path)
    ks = _k_values(config, scores, notes)
    stored = _stored(path / SUMMARY, notes)
    rates, complete = (UNMEASURED, True) if stored is None else (stored.throughput, stored.complete)
    seed = None if config is None else config.seed_scope()
    try:
        summary = (
            stored
            if as_written and stored is not None
            else build_summary(scores, ks, rates, complete, seed)
        )
    except ValueError as exc:  # a repeated (sample_id, attempt): the file was edited or merged
        raise ConfigError(f"{samples}: {exc}") from None
    workers = read_workers(path / WORKERS, notes)
    return Run(path, config, scores, summary, workers, notes, programs)


def _read_scores(path: Path, notes: list[str], programs: Programs) -> list[AttemptScore]:
    """Every attempt's score, its program counted in `programs`; a torn last line (a crash
    mid-write) is left out, with a note."""
    run_dir = RunDirectory(path)

    def torn(where: str) -> None:
        notes.append(f"{where} was cut off mid-write and is left out")

    scores = []
    for record in run_dir.records(on_torn=torn):
        programs.add(record)
        scores.append(record.score())
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


def _stored(path: Path, notes: list[str]) -> Summary | None:
    """The summary the run wrote; None, noted, when there is none to read."""
    stored = read_summary(path)
    if stored is None and path.is_file():
        notes.append(f"{SUMMARY} is unreadable: rates per second are left out")
    elif stored is None:
        notes.append(f"no {SUMMARY} (the run did not finish): rates per second are left out")
    return stored


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
