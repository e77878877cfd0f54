"""Workers' health as one process of a group probed it, for the others to copy.

In a proxy of several processes only the leading one probes the workers on an interval; the
others read its findings (one small request a second) instead of probing every worker
themselves, so the workers see one process's probes, not N times as many.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import aiohttp
from pydantic import BaseModel, ConfigDict, ValidationError

from agent_eval.proxy.fleet.pool import WorkerPool

log = logging.getLogger(__name__)

COPY_INTERVAL = 1.0
"""Seconds between two readings of the leader's findings, at most."""
HEALTH_PATH = "/workers/health"
COPY_TIMEOUT = aiohttp.ClientTimeout(total=5)


class WorkerHealth(BaseModel):
    """What the probes found about one worker."""

    model_config = ConfigDict(extra="forbid")

    url: str
    healthy: bool
    probed: bool
    last_error: str | None
    models: list[str]
    native: dict[str, bool]


class Findings(BaseModel):
    """GET /workers/health: every worker's."""

    workers: list[WorkerHealth]


def findings(pool: WorkerPool) -> list[dict[str, object]]:
    """The pool's health as the probes left it, JSON-ready."""
    return [
        WorkerHealth(
            url=w.url,
            healthy=w.health.healthy,
            probed=w.health.probed,
            last_error=w.health.last_error,
            models=list(w.models),
            native=dict(w.native),
        ).model_dump()
        for w in pool
    ]


def adopt(pool: WorkerPool, found: list[WorkerHealth]) -> None:
    """Take the leader's findings for the workers this process has too (and the leader probed)."""
    for view in found:
        worker = pool.get(view.url)
        if worker is None or not view.probed:
            continue
        health = worker.health
        came_up = view.healthy and not health.healthy
        health.healthy, health.probed, health.last_error = view.healthy, True, view.last_error
        if view.models:
            worker.list_models(tuple(view.models))
        worker.native.update(view.native)
        if came_up:
            worker.breaker.reset()  # as after this process's own probes: a fresh start


class LeaderFindings:
    """Reads the leading process's findings from its own port."""

    def __init__(
        self, session: aiohttp.ClientSession, origin: Callable[[], str | None], token: str
    ) -> None:
        self._session = session
        self._find_origin = origin
        self._origin: str | None = None
        self._headers = {"Authorization": f"Bearer {token}"}
        self._failing = False

    @property
    def unreachable(self) -> bool:
        """Whether the leader published its port but its last reading failed (it exited)."""
        return self._failing

    async def read(self) -> list[WorkerHealth] | None:
        """The leader's findings; None when it cannot be asked now (this process probes then)."""
        # The leader's port is the same for the group's life once it has published it.
        origin = self._origin = self._origin or self._find_origin()
        if origin is None:
            return None
        try:
            async with self._session.get(
                origin + HEALTH_PATH, headers=self._headers, timeout=COPY_TIMEOUT
            ) as answer:
                answer.raise_for_status()
                found = Findings.model_validate_json(await answer.read()).workers
        except (aiohttp.ClientError, TimeoutError, ValidationError) as exc:
            if not self._failing:
                log.warning("cannot read the leading process's health findings (%s); probing", exc)
            self._failing = True
            return None
        self._failing = False
        return found
