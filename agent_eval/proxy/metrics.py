"""Prometheus metrics of the proxy, in a registry of its own (no global state)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from agent_eval.proxy.breaker import BreakerState
from agent_eval.proxy.pool import WorkerPool

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


class ProxyMetrics:
    """Counters and histograms the request path updates."""

    def __init__(self, pool: WorkerPool) -> None:
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
        self.registry.register(_WorkerCollector(pool))

    def render(self) -> bytes:
        return generate_latest(self.registry)
