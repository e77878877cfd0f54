"""Which run `agent-eval report` shows: the one named, or the latest of several or of runs/.

A shell glob such as `runs/math_calculator-*` names every run of an agent; the user wants the
newest of them, never a comparison of the first two. Comparing takes `--compare A B`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_eval.errors import ConfigError
from agent_eval.results.files import DECISIONS, SAMPLES, is_watch_directory
from agent_eval.tune.study_files import STUDY_FILE, is_tune_directory

RUNS = Path("runs")
"""Where `agent-eval run` puts its run directories by default."""


@dataclass(frozen=True)
class Chosen:
    """The run directory to report, and notes saying how it was chosen."""

    path: Path
    notes: list[str]


def choose_run(paths: Sequence[Path], root: Path = RUNS) -> Chosen:
    """One path as it is; of several, or of every run under `root` when none, the latest."""
    if len(paths) == 1:
        return Chosen(paths[0], [])
    candidates = list(paths) if paths else _children(root)
    runs = [path for path in candidates if _last_written(path) is not None]
    if not runs:
        raise ConfigError(_nothing_to_report(paths, root))
    latest = max(runs, key=lambda path: (_last_written(path), str(path)))
    how = f"{len(runs)} runs named" if paths else f"no run named, {len(runs)} under {root}"
    notes = [f"{how}: reporting the latest, {latest}; compare two with --compare A B"]
    left_out = [str(path) for path in candidates if path not in runs]
    if left_out and paths:
        notes.append(f"not run directories, left out: {', '.join(left_out)}")
    return Chosen(latest, notes)


def _children(root: Path) -> list[Path]:
    return sorted(path for path in root.iterdir() if path.is_dir()) if root.is_dir() else []


def _last_written(path: Path) -> float | None:
    """When the run last recorded an attempt (a watch a decision, a tune a trial's score);
    None if it is no run."""
    # samples.jsonl changes only while the run plays; the folder's own time changes when a
    # report is written into it, which must not make an old run the latest.
    record = path / SAMPLES
    if is_watch_directory(path):
        record = path / DECISIONS
    elif is_tune_directory(path):
        record = path / STUDY_FILE  # written as each trial reports and ends
    try:
        return record.stat().st_mtime
    except OSError:
        return None


def _nothing_to_report(paths: Sequence[Path], root: Path) -> str:
    if paths:
        named = ", ".join(str(path) for path in paths)
        return f"none of {named} is a run directory (one holding {SAMPLES})"
    return (
        f"no run directory named and {root}/ holds no run; pass one, "
        "`agent-eval report RUN_DIR` (the folder `agent-eval run` wrote to)"
    )
