"""One GET /workers list from each process's: counts added up, the worst state of any shown."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_eval.proxy.fleet.breaker import BreakerState

SUMMED = (
    "in_flight",
    "served",
    "failures",
    "prompt_tokens",
    "rejected",
    "answered",
    "answer_seconds",
)
BREAKER_ORDER = [state.value for state in BreakerState]
"""Closed, half-open, open: the most open of the processes' breakers is shown."""


def merged(views: Iterable[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each worker once, in first-seen order, as the processes together see it."""
    by_url: dict[str, dict[str, Any]] = {}
    for view in views:
        for worker in view:
            seen = by_url.get(worker["url"])
            if seen is None:
                by_url[worker["url"]] = dict(worker)
            else:
                _add(seen, worker)
    for worker in by_url.values():
        cached, prompt = worker.get("cached_tokens"), worker.get("prompt_tokens")
        if "cache_hit_rate" in worker:
            worker["cache_hit_rate"] = cached / prompt if cached is not None and prompt else None
    return list(by_url.values())


def _add(seen: dict[str, Any], worker: dict[str, Any]) -> None:
    for name in SUMMED:
        seen[name] += worker[name]
    if worker["cached_tokens"] is not None:
        seen["cached_tokens"] = (seen["cached_tokens"] or 0) + worker["cached_tokens"]
    seen["healthy"] = seen["healthy"] and worker["healthy"]
    seen["breaker"] = max(seen["breaker"], worker["breaker"], key=BREAKER_ORDER.index)
    seen["last_error"] = seen["last_error"] or worker["last_error"]
