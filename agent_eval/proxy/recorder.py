"""Session capture: every exchange through the proxy appended to DIR/<session>.jsonl."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson

from agent_eval.system.names import safe_stem

log = logging.getLogger(__name__)

ANONYMOUS = "_no_session"


def session_file_name(session: str | None) -> str:
    """A safe file name for a session id: no separators, no leading dot, bounded length.

    When cleaning changed the id, a short hash of the original keeps distinct ids apart.
    """
    if not session:
        return f"{ANONYMOUS}.jsonl"
    return f"{safe_stem(session, 'session')}.jsonl"


class Recorder:
    """Queues records for one writer task, so the event loop never blocks on disk."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._queue: asyncio.Queue[tuple[str, bytes] | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await asyncio.to_thread(self.directory.mkdir, parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._write_loop(), name="agent-eval-recorder")

    def record(self, session: str | None, entry: dict[str, Any]) -> None:
        line = orjson.dumps(entry, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS)
        self._queue.put_nowait((session_file_name(session), line))

    async def close(self) -> None:
        """Write what is queued, then stop."""
        if self._task is None:
            return
        self._queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _write_loop(self) -> None:
        while True:
            item = await self._queue.get()
            batch = [item]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            lines: dict[str, list[bytes]] = defaultdict(list)
            for entry in batch:
                if entry is not None:
                    lines[entry[0]].append(entry[1])
            await asyncio.to_thread(self._append, lines)
            if None in batch:
                return

    def _append(self, lines: dict[str, list[bytes]]) -> None:
        for name, entries in lines.items():
            try:
                with open(self.directory / name, "ab") as handle:
                    handle.writelines(entries)
            except OSError as exc:
                log.error("could not record to %s: %s", self.directory / name, exc)
