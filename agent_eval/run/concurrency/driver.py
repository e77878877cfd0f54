"""The loop of adaptive concurrency: read the fleet, let the controller decide, resize the slots."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from agent_eval.run.concurrency.controller import AdaptiveLimit, Decision, Settings, Window
from agent_eval.run.concurrency.signals import FleetReader, window_between
from agent_eval.run.concurrency.slots import Slots

log = logging.getLogger(__name__)

TRACE_FILE = "concurrency.jsonl"
"""In the run directory: one line per change of the limit, with what caused it."""
INTERVAL = 0.5
"""Seconds between reads of the proxy."""
MIN_ANSWERED = 8
"""Requests answered before a window closes, so one slow answer does not read as congestion."""
MAX_WINDOW = 10.0
"""Seconds after which a window closes however few requests it saw."""


def closes(window: Window) -> bool:
    """Whether a window has seen enough to decide on: backpressure acts at once."""
    enough = window.finished >= MIN_ANSWERED or window.seconds >= MAX_WINDOW
    return bool(window.rejected) or enough


class Adapting:
    """Runs until cancelled, resizing `slots` to the controller's limit."""

    def __init__(
        self, controller: AdaptiveLimit, reader: FleetReader, slots: Slots, trace: Path | None
    ) -> None:
        self.controller, self.reader, self.slots, self.trace = controller, reader, slots, trace
        self._began = time.monotonic()

    async def run(self) -> None:
        """Read, decide and resize every INTERVAL seconds."""
        self.slots.resize(round(self.controller.limit))
        await self._note(Decision(self.slots.limit, "start"), None)
        last, since = await self.reader.read(), time.monotonic()
        while True:
            await asyncio.sleep(INTERVAL)
            now = await self.reader.read()
            if now is None or last is None:
                last, since = now, time.monotonic()
                continue
            window = window_between(last, now, time.monotonic() - since, self.slots.peak)
            if closes(window):
                await self._decide(window)
                last, since = now, time.monotonic()

    async def _decide(self, window: Window) -> None:
        self.slots.take_peak()
        decision = self.controller.update(window)
        if decision.limit != self.slots.limit:
            log.info("concurrency %d -> %d: %s", self.slots.limit, decision.limit, decision.reason)
            self.slots.resize(decision.limit)
            await self._note(decision, window)

    async def _note(self, decision: Decision, window: Window | None) -> None:
        if self.trace is None:
            return
        line: dict[str, Any] = {
            "seconds": round(time.monotonic() - self._began, 3),
            "limit": decision.limit,
            "reason": decision.reason,
            "pid": os.getpid(),
        }
        if window is not None:
            floor = self.controller.latency_floor
            latency = window.latency
            line |= {
                "answered": window.finished,
                "latency_s": None if latency is None else round(latency, 4),
                "latency_floor_s": None if floor is None else round(floor, 4),
                "rejected": window.rejected,
                "waiting": window.waiting,
                "in_use": window.in_use,
            }
        await asyncio.to_thread(_append, self.trace, orjson.dumps(line) + b"\n")


def _append(path: Path, line: bytes) -> None:
    """One line, written whole: engine processes of one run append to the same file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


async def adapt(
    slots: Slots, base_url: str, api_key: str | None, ceiling: int, trace: Path | None
) -> None:
    """Resize `slots` from the fleet behind the proxy at `base_url` until cancelled."""
    controller = AdaptiveLimit(Settings(ceiling=ceiling))
    async with aiohttp.ClientSession() as http:
        await Adapting(controller, FleetReader(http, base_url, api_key), slots, trace).run()
