"""An agent program's own folder per attempt: its working directory (a copy of the sample's files),
the sample as JSON beside it, and the diff of what the program changed.

Call these off the event loop (`asyncio.to_thread`): they read and write files.
"""

from __future__ import annotations

import difflib
import json
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_eval.data import Sample

KEPT = "workdirs"
"""The folder of the run directory that holds the attempts' folders kept for debugging."""
DIFF_BYTES = 65536
"""The most of a diff a record keeps."""
_FILE_BYTES = 1 << 20
"""A file larger than this is named as changed, not diffed."""


@dataclass(frozen=True)
class AttemptSpace:
    """An attempt's folder: `work/` is the program's working directory; `sample.json` is outside
    it, so it never shows in the diff."""

    root: Path

    @property
    def workdir(self) -> Path:
        return self.root / "work"

    @property
    def sample_file(self) -> Path:
        return self.root / "sample.json"


def make_space(sample: Sample, session_id: str, kept_in: Path | None) -> AttemptSpace:
    """A fresh folder for one attempt, under `kept_in` (made if needed) or the system's temp."""
    if kept_in is None:
        root = Path(tempfile.mkdtemp(prefix="agent-eval-"))
    else:
        kept_in.mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix=f"{safe_name(session_id)}-", dir=kept_in))
    space = AttemptSpace(root)
    space.workdir.mkdir()
    for name, text in (sample.files or {}).items():
        path = inside(space.workdir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    space.sample_file.write_text(json.dumps(sample_json(sample)))
    return space


def remove_space(space: AttemptSpace) -> None:
    shutil.rmtree(space.root, ignore_errors=True)


def sample_json(sample: Sample) -> dict[str, Any]:
    """What the program is told of its sample: never the gold answer, nor the check."""
    return {
        "id": sample.id,
        "question": sample.question,
        "messages": sample.messages,
        "metadata": sample.metadata,
        "files": sorted(sample.files or {}),
    }


def safe_name(text: str) -> str:
    """`text` as one file name: anything but letters, digits, `.`, `_`, `-` becomes `_`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text).lstrip(".")[:100] or "attempt"


def inside(folder: Path, name: str) -> Path:
    """`folder / name`, refused when it would leave `folder` (rows.py checks it first)."""
    path = (folder / name).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise ValueError(f"the file name {name!r} leaves the working directory")
    return path


def workdir_diff(workdir: Path, initial: Mapping[str, str]) -> str:
    """The working directory's changes against `initial` as a unified diff, at most
    DIFF_BYTES; a binary or large file is named, not diffed."""
    now = {str(p.relative_to(workdir)): p for p in sorted(workdir.rglob("*")) if p.is_file()}
    diff = "".join(
        _change(name, initial.get(name), now.get(name)) for name in sorted({*now, *initial})
    )
    if len(diff) > DIFF_BYTES:
        return diff[:DIFF_BYTES] + f"\n[diff cut at {DIFF_BYTES} characters of {len(diff)}]\n"
    return diff


def _change(name: str, before: str | None, path: Path | None) -> str:
    """One file's change: a diff, a line naming a binary or large file, or nothing."""
    if path is None:
        return _unified(name, before, None)
    after = _text(path)
    if after is None:
        return f"Binary or large file {name} {'added' if before is None else 'changed'}\n"
    return "" if after == before else _unified(name, before, after)


def _text(path: Path) -> str | None:
    """The file's text; None for a binary or large one."""
    if path.stat().st_size > _FILE_BYTES:
        return None
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _unified(name: str, before: str | None, after: str | None) -> str:
    old = "/dev/null" if before is None else f"a/{name}"
    new = "/dev/null" if after is None else f"b/{name}"
    lines = difflib.unified_diff(
        (before or "").splitlines(keepends=True),
        (after or "").splitlines(keepends=True),
        old,
        new,
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
