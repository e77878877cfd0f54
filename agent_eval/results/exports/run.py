"""A run exported: its samples.jsonl streamed, each output file written whole or not at all.

ATIF is one file per attempt, as Harbor writes one trajectory.json per trial: an ATIF document
is one JSON object, and the RFC defines no file of many. SFT and RL are one JSONL file each, as
trainers read them, of the scored attempts a Selection takes; a run that gives no line is an
error, never an empty file.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from agent_eval.errors import ConfigError
from agent_eval.results.exports.atif import record_attempt, to_atif
from agent_eval.results.exports.lines import Converted, Selection
from agent_eval.results.exports.rl import rl_lines
from agent_eval.results.exports.sft import sft_line
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
    """Where a run went (a folder of files, or one JSONL file), how many files or lines, the
    tally of notes on attempts (left out and why, split), the torn line left out (a crash
    mid-write)."""

    path: Path
    unit: str
    written: int = 0
    notes: Counter[str] = field(default_factory=Counter)
    torn: list[str] = field(default_factory=list)


Document = Callable[[AttemptRecord, PlayedBy], str]
"""An attempt as one file's text."""
Lines = Callable[[AttemptRecord, PlayedBy], Converted]
"""An attempt as JSONL lines, or why it gives none."""


def _atif(record: AttemptRecord, played_by: PlayedBy) -> str:
    document = to_atif(record_attempt(record, played_by.runner, played_by.model))
    return json.dumps(document.to_json(), indent=2, ensure_ascii=False)


DOCUMENTS: dict[str, Document] = {"atif": _atif}
LINES: dict[str, Lines] = {
    "sft": lambda record, by: sft_line(record, by.runner, by.model),
    "rl": lambda record, by: rl_lines(record, by.runner, by.model),
}
FORMATS = (*DOCUMENTS, *LINES)


def export_run(
    run_dir: Path,
    kind: str,
    out: Path | None,
    played_by: PlayedBy,
    selection: Selection | None = None,
) -> Exported:
    """Write the run in `run_dir` in the format `kind` to `out`: for atif a folder (default
    RUN_DIR/atif/) of SAMPLE.ATTEMPT.json; for sft and rl a file (default RUN_DIR/KIND.jsonl,
    KIND.jsonl inside `out` when it is a folder) of the attempts `selection` takes (by default
    every scored one). A missing run, an unknown format, a selection given to atif or a run
    that gives no line is a ConfigError."""
    selection = _checked(kind, selection)
    _check_run(run_dir)
    if kind in DOCUMENTS:
        return _documents(run_dir, DOCUMENTS[kind], out or run_dir / kind, played_by)
    exported = Exported(_jsonl(out or run_dir, kind), "lines")
    folder = RunDirectory(exported.path.parent)
    folder.create()
    made = _lines(run_dir, LINES[kind], played_by, selection, exported)
    folder.write_chunks(exported.path.name, made)
    return exported


def _jsonl(out: Path, kind: str) -> Path:
    """The file to write: `out`, or KIND.jsonl in it when it is a folder."""
    return out / f"{kind}.jsonl" if out.is_dir() else out


def _checked(kind: str, selection: Selection | None) -> Selection:
    if kind not in FORMATS:
        raise ConfigError(f"unknown export format {kind!r}; the known ones: {', '.join(FORMATS)}")
    selection = selection or Selection()
    if kind in DOCUMENTS and selection.chooses:
        raise ConfigError(
            f"--min-reward and --correct-only choose the attempts of {', '.join(LINES)}; "
            f"{kind} exports every attempt: leave them out"
        )
    return selection


def _documents(run_dir: Path, writer: Document, path: Path, played_by: PlayedBy) -> Exported:
    exported = Exported(path, "files")
    folder = RunDirectory(path)
    folder.create()
    for record in _records(run_dir, exported.torn.append):
        folder.write_text(file_name(record), writer(record, played_by))
        exported.written += 1
    return exported


def _lines(
    run_dir: Path, convert: Lines, played_by: PlayedBy, selection: Selection, exported: Exported
) -> Iterator[bytes]:
    """Each taken attempt's lines as JSON, tallied into `exported`; a ConfigError after the
    last attempt when none gave a line."""
    for record in _records(run_dir, exported.torn.append):
        why_not = selection.why_not(record)
        converted = Converted.left_out(why_not) if why_not else convert(record, played_by)
        exported.notes.update(converted.notes)
        for line in converted.lines:
            exported.written += 1
            yield orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)
    if not exported.written:
        raise ConfigError(
            f"no attempt of {run_dir} gave a line, so no file was written: {tally(exported)}"
        )


def tally(exported: Exported) -> str:
    """The notes on attempts in words: "6 attempts unscored (...); 1 attempt split ..."."""
    if not exported.notes:
        return "the run has no finished attempt"
    return "; ".join(
        f"{count} attempt{'s' if count != 1 else ''} {note}"
        for note, count in exported.notes.most_common()
    )


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
