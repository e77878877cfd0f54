"""What the scale bench reads off a running router: open files, worker health, load.

Open files come from Linux /proc; health from the proxy's GET /workers; requests in flight per
worker from its /metrics, parsed by a pure function.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from bench.parts.fleet import BenchError, Proc

IN_FLIGHT = re.compile(r'^agent_eval_proxy_worker_in_flight\{worker="([^"]+)"\} (\S+)$', re.M)


def open_files(proc: Proc) -> int:
    """File descriptors the process holds (sockets included)."""
    return len(os.listdir(Path("/proc") / str(proc.pid) / "fd"))


def in_flight(metrics: str) -> dict[str, float]:
    """Requests in flight per worker, from the proxy's Prometheus text."""
    return {url: float(value) for url, value in IN_FLIGHT.findall(metrics)}


async def workers(http: aiohttp.ClientSession, root: str) -> list[dict[str, object]]:
    """The proxy's GET /workers list."""
    async with http.get(root + "/workers") as got:
        got.raise_for_status()
        return list((await got.json())["workers"])


async def all_healthy(http: aiohttp.ClientSession, root: str, count: int, timeout: float) -> float:
    """Seconds until the proxy counts `count` healthy workers. Raises: BenchError past `timeout`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        healthy = sum(bool(w["healthy"]) for w in await workers(http, root))
        if healthy >= count:
            return time.monotonic() - started
        await asyncio.sleep(0.2)
    raise BenchError(
        f"the proxy at {root} had fewer than {count} healthy workers after {timeout} s"
    )


async def until_down(
    http: aiohttp.ClientSession, root: str, url: str, since: float, timeout: float
) -> float | None:
    """Seconds from `since` until the proxy marks worker `url` down; None if it never does."""
    while time.monotonic() - since < timeout:
        found = [w for w in await workers(http, root) if w["url"] == url]
        if found and not found[0]["healthy"]:
            return time.monotonic() - since
        await asyncio.sleep(0.1)
    return None


@dataclass
class LoadSamples:
    """Sampled while the load runs: the router's open files; with the proxy's /metrics, requests
    in flight per worker and how long each scrape took."""

    open_files: int = 0
    max_in_flight: float = 0.0
    mean_in_flight: list[float] = field(default_factory=list)
    scrape_ms: list[float] = field(default_factory=list)
    scrape_bytes: int = 0

    async def sample(self, proc: Proc, metrics: str | None, every: float) -> None:
        """Sample every `every` s until cancelled; /metrics at `metrics`, a URL, if given."""
        async with aiohttp.ClientSession() as http:
            while True:
                self.open_files = max(self.open_files, open_files(proc))
                if metrics is not None:
                    await self._scrape(http, metrics)
                await asyncio.sleep(every)

    async def _scrape(self, http: aiohttp.ClientSession, url: str) -> None:
        started = time.perf_counter()
        async with http.get(url) as got:
            text = await got.text()
        self.scrape_ms.append((time.perf_counter() - started) * 1000)
        self.scrape_bytes = len(text)
        if loads := in_flight(text):
            self.max_in_flight = max(self.max_in_flight, *loads.values())
            self.mean_in_flight.append(sum(loads.values()) / len(loads))

    def figures(self) -> dict[str, float]:
        """The proxy's figures: in flight per worker at most and on average, a scrape's cost."""
        scrapes, means = sorted(self.scrape_ms), self.mean_in_flight
        return {
            "max_per_worker": self.max_in_flight,
            "mean_per_worker": sum(means) / len(means) if means else math.nan,
            "scrape_ms_median": scrapes[len(scrapes) // 2] if scrapes else math.nan,
            "scrape_bytes": self.scrape_bytes,
        }
