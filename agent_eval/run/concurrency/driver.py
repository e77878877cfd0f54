"""The loop of adaptive concurrency: read the fleet, let the controller decide, resize the gate."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from agent_eval.run.concurrency.controller import AdaptiveLimit, Decision, Settings, Window
from agent_eval.run.concurrency.signals import FleetCounts, FleetReader, window_between
from agent_eval.run.gate import Gate

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


@dataclass
class Samples:
    """What the reads of a window saw: attempts in flight, requests queued at the workers."""

    since: float = field(default_factory=time.monotonic)
    in_use: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)

    def add(self, in_use: int, counts: FleetCounts) -> None:
        self.in_use.append(in_use)
        if counts.waiting is not None:
            self.waiting.append(counts.waiting)

    def window(self, before: FleetCounts, after: FleetCounts) -> Window:
        """The window since `before`, with the most attempts in flight at a read and the mean
        queue: one read of a queue says little, it moves with every request."""
        waiting = sum(self.waiting) / len(self.waiting) if self.waiting else None
        seconds = time.monotonic() - self.since
        return window_between(before, after, seconds, max(self.in_use, default=0), waiting)


class Adapting:
    """Runs until cancelled, resizing `gate` to the controller's limit; stops adapting once
    someone else sets the limit (`agent-eval ctl RUN concurrency N`)."""

    def __init__(
        self, controller: AdaptiveLimit, reader: FleetReader, gate: Gate, trace: Path | None
    ) -> None:
        self.controller, self.reader, self.gate, self.trace = controller, reader, gate, trace
        self._began = time.monotonic()

    async def run(self) -> None:
        """Read, decide and resize every INTERVAL seconds."""
        self.gate.resize(round(self.controller.limit))  # already so, unless a test starts here
        await self._note(Decision(self.gate.limit, "start"), None)
        set_to, last, samples = self.gate.limit, await self.reader.read(), Samples()
        while self.gate.limit == set_to:
            await asyncio.sleep(INTERVAL)
            now = await self.reader.read()
            if now is None or last is None:
                last, samples = now, Samples()
                continue
            samples.add(self.gate.state.in_flight, now)
            window = samples.window(last, now)
            if closes(window) and self.gate.limit == set_to:
                set_to = await self._decide(window)
                last, samples = now, Samples()
        log.info("concurrency set to %d from outside: it adapts no more", self.gate.limit)
        await self._note(Decision(self.gate.limit, "set from outside"), None)

    async def _decide(self, window: Window) -> int:
        """Resize the gate as the controller says; the limit set."""
        decision = self.controller.update(window)
        if decision.limit != self.gate.limit:
            log.info("concurrency %d -> %d: %s", self.gate.limit, decision.limit, decision.reason)
            self.gate.resize(decision.limit)
            await self._note(decision, window)
        return self.gate.limit

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
            line |= _figures(window, self.controller.latency_floor)
        try:
            await asyncio.to_thread(_append, self.trace, orjson.dumps(line) + b"\n")
        except OSError as exc:  # a shard on a node without the run directory, a full disk
            log.warning("adaptive concurrency writes no %s: %s", self.trace, exc)
            self.trace = None


def _figures(window: Window, floor: float | None) -> dict[str, Any]:
    """A window's figures as the trace keeps them."""
    latency, waiting = window.latency, window.waiting
    return {
        "answered": window.finished,
        "latency_s": None if latency is None else round(latency, 4),
        "latency_floor_s": None if floor is None else round(floor, 4),
        "rejected": window.rejected,
        "waiting": None if waiting is None else round(waiting, 2),
        "in_use": window.in_use,
    }


def _append(path: Path, line: bytes) -> None:
    """One line, written whole: engine processes of one run append to the same file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def start_adapting(
    gate: Gate, base_url: str, api_key: str | None, ceiling: int, trace: Path | None
) -> asyncio.Task[None]:
    """Resize `gate` to the start now, before any attempt takes a slot, then from the fleet
    behind the proxy at `base_url` until the task is cancelled."""
    controller = AdaptiveLimit(Settings(ceiling=ceiling))
    gate.resize(round(controller.limit))
    return asyncio.create_task(_adapt(controller, gate, base_url, api_key, trace))


async def _adapt(
    controller: AdaptiveLimit, gate: Gate, base_url: str, api_key: str | None, trace: Path | None
) -> None:
    try:
        async with aiohttp.ClientSession() as http:
            await Adapting(controller, FleetReader(http, base_url, api_key), gate, trace).run()
    except Exception:  # a bug here must not stop the run: the limit stays where it is
        log.exception("adaptive concurrency stopped; the limit stays at %d", gate.limit)
