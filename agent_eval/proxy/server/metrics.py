"""Prometheus metrics of the proxy, in a registry of its own (no global state)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Sized
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from agent_eval.proxy.fleet.breaker import BreakerState
from agent_eval.proxy.fleet.pool import WorkerPool
from agent_eval.proxy.server.metrics_shared import SharedFigures, shared_dir
from agent_eval.usage import reported_tokens

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
BREAKER_CODES = {BreakerState.CLOSED: 0, BreakerState.HALF_OPEN: 1, BreakerState.OPEN: 2}


class _WorkerCollector(Collector):
    """Reads per-worker gauges from the pool at scrape time, off the request path."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = time.monotonic()
        in_flight = GaugeMetricFamily(
            "agent_eval_proxy_worker_in_flight", "Requests in flight per worker", labels=["worker"]
        )
        healthy = GaugeMetricFamily(
            "agent_eval_proxy_worker_healthy",
            "1 when the worker passes its probes",
            labels=["worker"],
        )
        breaker = GaugeMetricFamily(
            "agent_eval_proxy_worker_breaker_state",
            "Circuit breaker per worker: 0 closed, 1 half-open, 2 open",
            labels=["worker"],
        )
        for worker in self._pool:
            worker.breaker.allows(now)
            in_flight.add_metric([worker.url], worker.in_flight)
            healthy.add_metric([worker.url], int(worker.health.healthy))
            breaker.add_metric([worker.url], BREAKER_CODES[worker.breaker.state])
        yield from (in_flight, healthy, breaker)


@dataclass
class CacheTally:
    """Prompt tokens a worker's answers reported, and how many of them it served from cache."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    reported: bool = False
    """Whether any answer reported cached tokens: SGLang and vLLM do only when asked to."""

    def add(self, prompt_tokens: int, cached_tokens: int | None) -> None:
        self.prompt_tokens += prompt_tokens
        if cached_tokens is not None:
            self.cached_tokens += cached_tokens
            self.reported = True

    def snapshot(self) -> dict[str, Any]:
        """For GET /workers: the totals and the hit rate, None when the worker reports none."""
        rate = self.cached_tokens / self.prompt_tokens if self.prompt_tokens else None
        return {
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens if self.reported else None,
            "cache_hit_rate": rate if self.reported else None,
        }


class _CacheCollector(Collector):
    """Exposes the per-worker token tallies as counters at scrape time."""

    def __init__(self, tallies: dict[str, CacheTally]) -> None:
        self._tallies = tallies

    def collect(self) -> Iterator[CounterMetricFamily]:
        prompt = CounterMetricFamily(
            "agent_eval_proxy_prompt_tokens",
            "Prompt tokens of the answers that reported usage, per worker",
            labels=["worker"],
        )
        cached = CounterMetricFamily(
            "agent_eval_proxy_cached_tokens",
            "Prompt tokens the worker reported served from its prefix cache, per worker",
            labels=["worker"],
        )
        for url, tally in self._tallies.items():
            prompt.add_metric([url], tally.prompt_tokens)
            if tally.reported:
                cached.add_metric([url], tally.cached_tokens)
        yield from (prompt, cached)


class _AttemptsCollector(Collector):
    """Counts the attempts whose keys are open at scrape time."""

    def __init__(self, attempts: Sized) -> None:
        self._attempts = attempts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(
            "agent_eval_proxy_attempts_open",
            "Attempt keys opened and not yet ended or expired: a count that stays up after "
            "a run names attempts whose records were never taken",
            value=len(self._attempts),
        )


class ProxyMetrics:
    """Counters and histograms the request path updates."""

    def __init__(self, pool: WorkerPool, attempts: Sized) -> None:
        """`attempts`: the open attempt keys, counted at scrape time."""
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "agent_eval_proxy_requests",
            "Client requests by route, status and the worker that answered",
            ["route", "status", "worker"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "agent_eval_proxy_request_seconds",
            "Time from request to the last byte of the answer",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.first_byte = Histogram(
            "agent_eval_proxy_stream_first_byte_seconds",
            "Time from request to the first byte of a streamed answer",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.retries = Counter(
            "agent_eval_proxy_retries",
            "Attempts sent again to another worker, by the reason the last one failed",
            ["route", "reason"],
            registry=self.registry,
        )
        self.cache: dict[str, CacheTally] = {}
        """Per worker URL; plain integers on the request path, counters only when scraped."""
        collectors: tuple[Collector, ...] = (
            _WorkerCollector(pool),
            _CacheCollector(self.cache),
            _AttemptsCollector(attempts),
        )
        for collector in collectors:
            self.registry.register(collector)
        self.shared = SharedFigures(collectors) if shared_dir() is not None else None
        """With the proxy on several processes: what adds up every process's metrics."""

    def count_usage(self, worker: str, answer: dict[str, Any] | None) -> None:
        """Add the tokens `answer`'s usage reports to `worker`'s tally."""
        if answer is None or (tokens := reported_tokens(answer.get("usage"))) is None:
            return
        tally = self.cache.get(worker)
        if tally is None:
            tally = self.cache[worker] = CacheTally()
        tally.add(*tokens)

    def render(self) -> bytes:
        """This process's metrics: the proxy's own when it runs on one process."""
        return generate_latest(self.registry)

    async def render_shared(self, shared: SharedFigures) -> bytes:
        """Every process's metrics added up, this one's figures written first."""
        shared.sync()
        return await asyncio.to_thread(shared.render)
