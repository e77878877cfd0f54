"""Short evidence for error messages: the end of a log, the cause of an OS error, free space.

Used from the proxy up to the CLI, so it imports nothing from agent_eval but its errors.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from rich.filesize import decimal

from agent_eval.errors import StorageError

LOG_TAIL_LINES = 50


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a log file, or a note that there is none."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or f"(the log {path} is empty)"


def last_line(path: Path, width: int = 100) -> str | None:
    """The last line of a log that says something, cut to `width` characters; None for none.

    A line without a letter or digit says nothing: llama.cpp draws its loading bar in dots.
    """
    try:
        with path.open("rb") as handle:
            handle.seek(max(path.stat().st_size - 4096, 0))
            lines = handle.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    said = next((line.strip() for line in reversed(lines) if _says_something(line)), None)
    if said is None or len(said) <= width:
        return said
    return said[: width - 3] + "..."


def _says_something(line: str) -> bool:
    return any(character.isalnum() for character in line)


def os_reason(exc: OSError) -> str:
    """A short cause such as 'Connection refused', without the address noise asyncio adds."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    return os.strerror(exc.errno) if exc.errno else str(exc)


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Inside, an OS error (a full disk, a quota, a read-only file system) is a StorageError
    naming `path` and the room left where it is."""
    try:
        yield
    except OSError as exc:
        raise StorageError(
            f"cannot write {path}: {os_reason(exc)} ({free_space(path)} on its file system)"
        ) from exc


def free_space(path: Path) -> str:
    """The room left on the file system that holds `path` (or would hold it), in words."""
    try:
        existing = next((folder for folder in (path, *path.parents) if folder.exists()), path)
        return f"{decimal(shutil.disk_usage(existing).free)} free"
    except OSError:
        return "free space unknown"


def open_to_append(path: Path) -> BinaryIO:
    """`path` opened to append to (a child process's log); a StorageError if it cannot be."""
    with writing(path):
        return path.open("ab")
