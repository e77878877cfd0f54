"""A run exported: its samples.jsonl streamed, one file per attempt written whole or not at all.

One file per attempt, as Harbor writes one trajectory.json per trial: an ATIF document is one
JSON object, and the RFC defines no file of many.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agent_eval.errors import ConfigError
from agent_eval.results.exports.atif import record_attempt, to_atif
from agent_eval.results.files import SAMPLES, RunDirectory
from agent_eval.results.record import AttemptRecord
from agent_eval.system.diagnostics import os_reason
from agent_eval.system.names import safe_stem


@dataclass(frozen=True)
class PlayedBy:
    """Who played a run's attempts: the runner's name and the model it asked for."""

    runner: str
    model: str | None


@dataclass
class Exported:
    """Where a run went: the folder, how many files, the torn line left out (a crash mid-write)."""

    folder: Path
    files: int = 0
    torn: list[str] = field(default_factory=list)


Writer = Callable[[AttemptRecord, PlayedBy], str]


def _atif(record: AttemptRecord, played_by: PlayedBy) -> str:
    document = to_atif(record_attempt(record, played_by.runner, played_by.model))
    return json.dumps(document.to_json(), indent=2, ensure_ascii=False)


FORMATS: dict[str, Writer] = {"atif": _atif}


def export_run(run_dir: Path, kind: str, out: Path | None, played_by: PlayedBy) -> Exported:
    """Write each attempt of the run in `run_dir` in the format `kind` to `out` (default
    RUN_DIR/KIND/), as SAMPLE.ATTEMPT.json; a missing run or an unknown format is a
    ConfigError."""
    writer = FORMATS.get(kind)
    if writer is None:
        raise ConfigError(f"unknown export format {kind!r}; the known ones: {', '.join(FORMATS)}")
    _check_run(run_dir)
    exported = Exported(out or run_dir / kind)
    folder = RunDirectory(exported.folder)
    folder.create()
    for record in _records(run_dir, exported.torn.append):
        folder.write_text(file_name(record), writer(record, played_by))
        exported.files += 1
    return exported


def file_name(record: AttemptRecord) -> str:
    """An attempt's file: its sample id made safe for a file name, then its attempt number."""
    return f"{safe_stem(record.sample_id, 'sample')}.{record.attempt}.json"


def _records(run_dir: Path, on_torn: Callable[[str], None]) -> Iterator[AttemptRecord]:
    """The run's attempts one at a time, so memory stays flat however long the run."""
    try:
        yield from RunDirectory(run_dir).records(on_torn=on_torn)
    except OSError as exc:
        raise ConfigError(
            f"cannot read {run_dir / SAMPLES}: {os_reason(exc)}; check its permissions"
        ) from None


def _check_run(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise ConfigError(f"{run_dir} is not a folder; pass a run directory (`agent-eval run` -o)")
    if not (run_dir / SAMPLES).is_file():
        raise ConfigError(
            f"{run_dir} holds no {SAMPLES}: not a run directory; pass the folder "
            "`agent-eval run` wrote its results to"
        )
