"""The run directory: samples.jsonl appended per finished attempt, summary and config beside it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from agent_eval.results.record import AttemptRecord
from agent_eval.system.diagnostics import writing

log = logging.getLogger(__name__)

SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
UNSCORED = "unscored.jsonl"
"""Unscored attempts `run --resume --replay-unscored` took out of samples.jsonl to replay."""
DECISIONS = "decisions.jsonl"
"""A watch directory's decision per checkpoint (`agent-eval watch`)."""
TRIGGER_STATE = "trigger.json"
"""A watch directory's trigger schedule, so a restarted watcher carries on."""
WORKERS = "workers.json"
"""The proxy's last GET /workers view, saved by the run before it stops the proxy."""


def is_watch_directory(path: Path) -> bool:
    """Whether `path` is the output of `agent-eval watch`."""
    return (path / DECISIONS).is_file()


class RunDirectory:
    """One run's files; each append is flushed, so a crash loses only the attempts in flight.

    A write the file system refuses (full, over quota, read-only, failing) is a StorageError
    that leaves every file as it was before it: no torn line, no `.partial` file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.samples = path / SAMPLES
        # One append at a time: a failed one is cut back to where it began, which must be the
        # end of the file, not the middle of another thread's line. Re-entrant: setting the
        # unscored aside holds it, and appends to unscored.jsonl.
        self._appending = threading.RLock()

    def prepare(self) -> None:
        """Create the folder, and cut a torn last line (a crash mid-write) before a resume."""
        self.create()
        self._drop_torn_last_line()

    def create(self) -> None:
        """Make the folder, and its parents, if they are not there yet."""
        with writing(self.path):
            self.path.mkdir(parents=True, exist_ok=True)

    def records(self, on_torn: Callable[[str], None] | None = None) -> Iterator[AttemptRecord]:
        """Every finished attempt, streamed from disk; a corrupt line is a ConfigError.

        A torn last line (a crash mid-write) is no finished attempt: it is skipped, and
        `on_torn` is told where it was.
        """
        for where, line in self._lines(on_torn):
            yield AttemptRecord.from_line(line, where)

    def set_aside_unscored(self) -> list[AttemptRecord]:
        """Move the attempts an infrastructure failure stopped to unscored.jsonl, each stamped
        with the time, so that a resume replays them; the records moved.

        Safe beside appends through this object (a running run's requeue): they wait for it.
        """
        partial = self.samples.with_suffix(".jsonl.partial")
        with self._appending, writing(self.samples):
            self._drop_torn_last_line()
            try:
                return self._split_unscored(partial)
            finally:
                partial.unlink(missing_ok=True)

    async def append(self, record: AttemptRecord) -> None:
        await self.append_line(record.to_line())

    async def append_line(self, line: bytes) -> None:
        """Append one record already serialised as a JSON line."""
        write = asyncio.ensure_future(asyncio.to_thread(self._append, self.samples, line))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            # The thread writes on regardless: wait for it, so a resume that starts right
            # after a cancellation sees this attempt as done and does not play it again.
            await write
            raise

    def write_json(self, name: str, data: Any) -> Path:
        """Write a whole JSON file atomically: never half a summary on disk."""
        return self.write_text(name, json.dumps(data, indent=2, sort_keys=True, allow_nan=False))

    def write_text(self, name: str, text: str) -> Path:
        """Write a whole file atomically: never half of it on disk, nor a `.partial` beside it."""
        return self.write_chunks(name, [text.encode()])

    def write_chunks(self, name: str, chunks: Iterable[bytes]) -> Path:
        """Write a file from chunks made as it is written, atomically: all of it, or nothing
        should making a chunk or writing it fail on the way, and no `.partial` beside it."""
        target = self.path / name
        partial = target.with_suffix(target.suffix + ".partial")
        with writing(target):
            try:
                with partial.open("wb") as handle:
                    handle.writelines(chunks)
                os.replace(partial, target)
            finally:
                partial.unlink(missing_ok=True)
        return target

    def _split_unscored(self, partial: Path) -> list[AttemptRecord]:
        """Keep the scored lines (written to `partial`, then put in place of samples.jsonl) and
        move the others to unscored.jsonl; the records moved."""
        unscored: list[tuple[bytes, AttemptRecord]] = []
        with partial.open("wb") as kept:
            for where, line in self._lines():
                record = AttemptRecord.from_line(line, where)
                if record.scored:
                    kept.write(line)
                else:
                    unscored.append((line, record))
            _sync(kept)
        if not unscored:
            return []
        stamp = datetime.now(UTC).isoformat(timespec="seconds")
        aside = b"".join(_stamped(line, stamp) for line, _ in unscored)
        self._append(self.path / UNSCORED, aside, sync=True)
        # Only once they are safe in unscored.jsonl do they leave samples.jsonl, in one step.
        os.replace(partial, self.samples)
        return [record for _, record in unscored]

    def _lines(self, on_torn: Callable[[str], None] | None = None) -> Iterator[tuple[str, bytes]]:
        """samples.jsonl's non-blank lines and where each is; a torn last line goes to `on_torn`."""
        if not self.samples.exists():
            return
        with self.samples.open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{self.samples} line {number}"
                if _torn(line):
                    if on_torn is not None:
                        on_torn(where)
                    continue
                yield where, line

    def _append(self, path: Path, data: bytes, sync: bool = False) -> None:
        """Append `data` whole, or not at all: a write the disk refuses is cut back at once.

        `sync`: on the disk itself before this returns, not only in the OS's cache.
        """
        with self._appending, writing(path), path.open("ab", buffering=0) as handle:
            end = handle.seek(0, os.SEEK_END)
            try:
                _write_all(handle, data)
                if sync:
                    os.fsync(handle.fileno())
            except OSError:
                handle.truncate(end)
                raise

    def _drop_torn_last_line(self) -> None:
        """A crash mid-write can leave a partial last line; cut it so the file parses."""
        if not self.samples.exists():
            return
        data = self.samples.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            log.warning("dropping a torn last line from %s", self.samples)
            with writing(self.samples), self.samples.open("r+b") as handle:
                handle.truncate(keep)


def _torn(line: bytes) -> bool:
    """Cut off mid-write: no newline (so the last line) and not whole JSON."""
    if line.endswith(b"\n"):
        return False
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError:
        return True
    return False


def _stamped(line: bytes, stamp: str) -> bytes:
    """A set-aside record's line, saying when it was set aside; readers of records skip the key."""
    return orjson.dumps(
        {"set_aside_at": stamp, **orjson.loads(line)}, option=orjson.OPT_APPEND_NEWLINE
    )


def _write_all(handle: BinaryIO, data: bytes) -> None:
    """Write all of `data` to an unbuffered file, however many writes the file system takes."""
    view = memoryview(data)
    while view:
        view = view[handle.write(view) :]


def _sync(handle: BinaryIO) -> None:
    """Flush `handle` to the disk: a file replaced or appended to must hold what it says."""
    handle.flush()
    os.fsync(handle.fileno())


def save_worker_snapshot(run_dir: Path, workers: list[dict[str, Any]]) -> None:
    """Save the proxy's GET /workers list as workers.json (atomically); it is gone once the
    proxy stops, and the attempts do not name their worker."""
    RunDirectory(run_dir).write_json(WORKERS, {"workers": workers})
