"""One /metrics for a proxy of several processes: prometheus_client's multiprocess mode.

Counters and histograms of the request path write to memory-mapped files under
PROMETHEUS_MULTIPROC_DIR when it is set (prometheus_client reads it at import). The figures
read from live state at scrape time (in flight, health, breakers, token tallies, open attempts)
are copied into such files once a second and at each scrape, so a scrape of any process adds
up every process, the others' figures at most a second old.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, multiprocess
from prometheus_client.registry import Collector

MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
SYNC_INTERVAL = 1.0
GAUGE_MODES: dict[str, Literal["livemin", "livemax"]] = {
    "agent_eval_proxy_worker_healthy": "livemin",  # healthy only if every process sees it so
    "agent_eval_proxy_worker_breaker_state": "livemax",  # the most open breaker of any process
}
"""How a gauge adds up over the living processes; the others are summed."""


def shared_dir() -> Path | None:
    """Where this process's group keeps its metrics files; None for a proxy on its own."""
    value = os.environ.get(MULTIPROC_DIR)
    return Path(value) if value else None


class SharedFigures:
    """Copies what collectors read at scrape time into the group's files."""

    def __init__(self, collectors: Iterable[Collector]) -> None:
        self._collectors = list(collectors)
        self._gauges: dict[str, Gauge] = {}
        self._counters: dict[str, Counter] = {}
        self._counted: dict[tuple[str, tuple[str, ...]], float] = {}

    def sync(self) -> None:
        """Write every collector's figures now."""
        for collector in self._collectors:
            for family in collector.collect():
                for sample in family.samples:
                    labels = tuple(sample.labels.values())
                    names = list(sample.labels)
                    if family.type == "counter":
                        self._count(family.name, family.documentation, names, labels, sample.value)
                    else:
                        gauge = self._gauge(family.name, family.documentation, names)
                        (gauge.labels(*labels) if labels else gauge).set(sample.value)

    def render(self) -> bytes:
        """Every process's metrics, added up."""
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)

    def _gauge(self, name: str, documentation: str, labels: list[str]) -> Gauge:
        if name not in self._gauges:
            self._gauges[name] = Gauge(
                name,
                documentation,
                labels,
                registry=None,
                multiprocess_mode=GAUGE_MODES.get(name, "livesum"),
            )
        return self._gauges[name]

    def _count(
        self, name: str, documentation: str, names: list[str], labels: tuple[str, ...], value: float
    ) -> None:
        if name not in self._counters:
            self._counters[name] = Counter(name, documentation, names, registry=None)
        before = self._counted.get((name, labels), 0.0)
        self._counted[name, labels] = value
        counter = self._counters[name]
        (counter.labels(*labels) if labels else counter).inc(value - before)


@contextlib.asynccontextmanager
async def syncing(figures: SharedFigures) -> AsyncIterator[None]:
    """Sync `figures` every SYNC_INTERVAL inside the block; at its end this process's live
    gauges leave the sums."""
    task = asyncio.create_task(_sync_forever(figures))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        multiprocess.mark_process_dead(os.getpid())


async def _sync_forever(figures: SharedFigures) -> None:
    while True:
        figures.sync()
        await asyncio.sleep(SYNC_INTERVAL)
