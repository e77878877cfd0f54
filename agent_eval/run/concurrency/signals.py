"""What the fleet shows the controller: the proxy's per-worker counters, read over its API."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import aiohttp

from agent_eval.proxy.admin_client import WorkerLoad, fetch_workers, proxy_root
from agent_eval.run.concurrency.controller import Window

log = logging.getLogger(__name__)

QUEUES_PATH = "/workers/queues"
READ_TIMEOUT = 5.0
"""Seconds one read of the proxy may take; a late read leaves the limit as it is."""


@dataclass(frozen=True)
class FleetCounts:
    """The proxy's counters over every worker at one moment, and the workers' queues."""

    answered: int
    answer_seconds: float
    rejected: int
    waiting: int | None
    """Requests waiting at the workers that say (SGLang's /get_load); None when none says."""


def fleet_counts(workers: WorkerLoad, queues: list[dict[str, Any]]) -> FleetCounts:
    """The sums of GET /workers and GET /workers/queues (a proxy without the new counters
    counts 0)."""
    known = [queue["waiting"] for queue in queues if isinstance(queue.get("waiting"), int)]
    return FleetCounts(
        answered=sum(int(worker.get("answered", 0)) for worker in workers),
        answer_seconds=sum(float(worker.get("answer_seconds", 0.0)) for worker in workers),
        rejected=sum(int(worker.get("rejected", 0)) for worker in workers),
        waiting=sum(known) if known else None,
    )


def window_between(
    before: FleetCounts, after: FleetCounts, seconds: float, in_use: int, waiting: float | None
) -> Window:
    """What happened between two reads, `seconds` apart, the engine using up to `in_use`
    attempts and the workers queueing `waiting` requests on average."""
    answered = after.answered - before.answered
    spent = after.answer_seconds - before.answer_seconds
    return Window(
        seconds=seconds,
        finished=answered,
        latency=spent / answered if answered > 0 else None,
        rejected=max(0, after.rejected - before.rejected),
        waiting=waiting,
        in_use=in_use,
    )


class FleetReader:
    """Reads the proxy's counters; None when the proxy does not answer (the limit then holds)."""

    def __init__(self, http: aiohttp.ClientSession, base_url: str, api_key: str | None) -> None:
        self._http, self._url, self._key = http, base_url, api_key
        self._warned = False

    async def read(self) -> FleetCounts | None:
        """The counters now, or None (logged once) when the proxy cannot be read."""
        timeout = aiohttp.ClientTimeout(total=READ_TIMEOUT)
        try:
            workers = await fetch_workers(self._http, self._url, self._key)
            async with self._http.get(
                proxy_root(self._url) + QUEUES_PATH, headers=self._headers(), timeout=timeout
            ) as response:
                queues = (await response.json())["workers"] if response.status == 200 else []
            return fleet_counts(workers, queues)
        except (aiohttp.ClientError, TimeoutError, ValueError, KeyError, TypeError) as exc:
            if not self._warned:
                log.warning("adaptive concurrency cannot read the proxy's workers (%s)", exc)
                self._warned = True
            return None

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"} if self._key else {}
