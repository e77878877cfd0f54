"""One inference worker as the proxy sees it: health, breaker and load."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_eval.proxy.fleet.breaker import CircuitBreaker
from agent_eval.proxy.fleet.watched import Watched
from agent_eval.proxy.routes import MESSAGES_ROUTE, RESPONSES_ROUTE
from agent_eval.proxy.upstream.http1 import Origin


@dataclass
class HealthRecord(Watched):
    """Active-probe outcome with hysteresis: thresholds of failures and successes in a row."""

    WATCHED = frozenset({"healthy"})

    healthy: bool = False
    probed: bool = False
    successes_in_row: int = 0
    failures_in_row: int = 0
    last_error: str | None = None

    def record(self, ok: bool, failure_threshold: int, success_threshold: int) -> bool:
        """Count one probe; return True when the healthy flag changed."""
        before = self.healthy
        if ok:
            self.successes_in_row += 1
            self.failures_in_row = 0
            self.last_error = None
            # The first probe decides at once: waiting for a threshold would delay start-up.
            if not self.probed or self.successes_in_row >= success_threshold:
                self.healthy = True
        else:
            self.failures_in_row += 1
            self.successes_in_row = 0
            if not self.probed or self.failures_in_row >= failure_threshold:
                self.healthy = False
        self.probed = True
        return self.healthy != before

    def mark_down(self, reason: str) -> None:
        """Passive marking: a refused connection means down until probes say otherwise."""
        self.healthy = False
        self.successes_in_row = 0
        self.last_error = reason


@dataclass(eq=False)
class Worker:
    """A worker's address and everything the proxy tracks about it."""

    url: str
    health_path: str
    breaker: CircuitBreaker
    health: HealthRecord = field(default_factory=HealthRecord)
    models: tuple[str, ...] = ()
    """Set by `list_models`, which tells the pool (a plain attribute: its load changes per
    request, and watching every attribute set cost each request more than the pool saves)."""
    earlier_models: frozenset[str] = frozenset()
    """Names the worker listed before: SGLang renames its model to the weights' path on a swap
    yet answers to any name, so requests keep naming the model as it was launched."""
    native: dict[str, bool] = field(default_factory=dict)
    """Whether the worker serves each of the translatable routes itself (routes.NATIVE_ROUTES);
    a route is absent until a probe or an answer tells."""
    takes_key: bool = True
    """Whether the proxy's worker key goes to this worker: the operator said so when adding it."""
    origin: Origin = field(init=False)
    in_flight: int = 0
    served: int = 0
    failures: int = 0
    rejected: int = 0
    """429 and 503 answers: backpressure, which adaptive concurrency backs off on."""
    answered: int = 0
    answer_seconds: float = 0.0
    """Seconds of the `answered` requests, from receipt to their last byte: their mean latency."""
    changed: Callable[[], None] | None = field(default=None, repr=False)
    """Called when the model list changes; the pool watches health and breaker directly."""

    def __post_init__(self) -> None:
        self.origin = Origin.parse(self.url)

    def record_failure(self) -> None:
        """Count a failure that was the worker's fault, in its tally and in its breaker."""
        self.failures += 1
        self.breaker.record_failure(time.monotonic())

    def list_models(self, models: tuple[str, ...]) -> None:
        """Take the names the worker lists now, remembering those it listed before."""
        self.earlier_models = self.earlier_models.union(self.models).difference(models)
        before, self.models = self.models, models
        if models != before and self.changed is not None:
            self.changed()

    def answers_to(self, model: str) -> bool:
        """Whether the worker serves `model` now or served it before a weight swap."""
        return model in self.models or model in self.earlier_models

    def kind_of(self, route: str) -> str:
        """How the worker gets requests on `route`: native, translated, or unknown yet."""
        return {True: "native", False: "translated", None: "unknown"}[self.native.get(route)]

    def available(self, now: float) -> bool:
        """Healthy and the breaker lets a request through."""
        return self.health.healthy and self.breaker.allows(now)

    def snapshot(self, now: float) -> dict[str, Any]:
        """A JSON-ready view for /workers and the live panel."""
        self.breaker.allows(now)  # let an expired cooldown show as half-open
        return {
            "url": self.url,
            "healthy": self.health.healthy,
            "breaker": self.breaker.state.value,
            "in_flight": self.in_flight,
            "served": self.served,
            "failures": self.failures,
            "rejected": self.rejected,
            "answered": self.answered,
            "answer_seconds": self.answer_seconds,
            "models": list(self.models),
            "health_path": self.health_path,
            "takes_key": self.takes_key,
            "responses_api": self.kind_of(RESPONSES_ROUTE),
            "messages_api": self.kind_of(MESSAGES_ROUTE),
            "last_error": self.health.last_error,
        }
