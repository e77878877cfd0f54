"""The run directory: samples.jsonl appended per finished attempt, summary and config beside it."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from agent_eval.record import AttemptRecord

log = logging.getLogger(__name__)

SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
DECISIONS = "decisions.jsonl"
"""A watch directory's decision per checkpoint (`agent-eval watch`)."""
TRIGGER_STATE = "trigger.json"
"""A watch directory's trigger schedule, so a restarted watcher carries on."""
WORKERS = "workers.json"
"""The proxy's last GET /workers view, saved by the run before it stops the proxy."""


class RunDirectory:
    """One run's files; each append is flushed, so a crash loses only the attempts in flight."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.samples = path / SAMPLES

    def prepare(self) -> set[tuple[str, int]]:
        """Create the folder; return the (sample id, attempt) pairs already done, for resuming."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._drop_torn_last_line()
        return {(record.sample_id, record.attempt) for record in self.records()}

    def records(self, on_torn: Callable[[str], None] | None = None) -> Iterator[AttemptRecord]:
        """Every finished attempt, streamed from disk; a corrupt line is a ConfigError.

        A torn last line (a crash mid-write) is no finished attempt: it is skipped, and
        `on_torn` is told where it was.
        """
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
                yield AttemptRecord.from_line(line, where)

    async def append(self, record: AttemptRecord) -> None:
        await self.append_line(record.to_line())

    async def append_line(self, line: bytes) -> None:
        """Append one record already serialised as a JSON line."""
        write = asyncio.ensure_future(asyncio.to_thread(self._write, line))
        try:
            await asyncio.shield(write)
        except asyncio.CancelledError:
            # The thread writes on regardless: wait for it, so a resume that starts right
            # after a cancellation sees this attempt as done and does not play it again.
            await write
            raise

    def write_json(self, name: str, data: Any) -> Path:
        """Write a whole JSON file atomically: never half a summary on disk."""
        target = self.path / name
        partial = target.with_suffix(target.suffix + ".partial")
        partial.write_text(json.dumps(data, indent=2, sort_keys=True, allow_nan=False))
        os.replace(partial, target)
        return target

    def _write(self, line: bytes) -> None:
        with self.samples.open("ab") as handle:
            handle.write(line)
            handle.flush()

    def _drop_torn_last_line(self) -> None:
        """A crash mid-write can leave a partial last line; cut it so the file parses."""
        if not self.samples.exists():
            return
        data = self.samples.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            log.warning("dropping a torn last line from %s", self.samples)
            with self.samples.open("r+b") as handle:
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


def save_worker_snapshot(run_dir: Path, workers: list[dict[str, Any]]) -> None:
    """Save the proxy's GET /workers list as workers.json (atomically); it is gone once the
    proxy stops, and the attempts do not name their worker."""
    RunDirectory(run_dir).write_json(WORKERS, {"workers": workers})
