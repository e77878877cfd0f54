"""What a test reads of files a run left: which of them hold a given text."""

from __future__ import annotations

from pathlib import Path


def files_holding(folder: Path, text: str) -> list[Path]:
    """The files under `folder` whose content holds `text`."""
    return [p for p in folder.rglob("*") if p.is_file() and text in p.read_text("utf-8", "replace")]
