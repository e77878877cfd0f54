"""Active health probes: each worker's health path every few seconds, and its model list.

In a group of proxy processes the leader probes; the others probe once at start (so no request
waits for the leader's first round), then copy the leader's findings, probing again themselves
only while they cannot read them. A process knows its workers' health (and may say it is
ready) once its first round is done and, in a group, once it has copied the leader's findings,
so that every process places the first requests among the same workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp
import orjson
from pydantic import SecretStr

from agent_eval.proxy.config import HealthConfig
from agent_eval.proxy.fleet.health_copy import COPY_INTERVAL, LeaderFindings, adopt
from agent_eval.proxy.fleet.pool import WorkerPool
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.routes import NATIVE_ROUTES
from agent_eval.proxy.upstream.headers import worker_auth
from agent_eval.proxy.upstream.http1 import UpstreamTooLarge, read_whole
from agent_eval.system.diagnostics import os_reason

log = logging.getLogger(__name__)

LEADER_START_POLL = 0.1
"""Seconds between two looks for the leading process's port while it starts."""
PROBE_BYTES = 1 << 20
"""Bytes of a probe's answer read at most: a health answer or a model list is far smaller."""


def parse_model_ids(body: bytes) -> tuple[str, ...]:
    """Model ids from an OpenAI `/v1/models` body; empty when the body is not one."""
    try:
        data = orjson.loads(body).get("data", [])
        return tuple(str(item["id"]) for item in data if isinstance(item, dict) and "id" in item)
    except (orjson.JSONDecodeError, AttributeError, TypeError):
        return ()


class HealthChecker:
    """Probes every worker on an interval; a newly added worker is probed at once."""

    def __init__(
        self,
        pool: WorkerPool,
        config: HealthConfig,
        session: aiohttp.ClientSession,
        worker_key: SecretStr | None,
        leader: LeaderFindings | None = None,
    ) -> None:
        self._pool = pool
        self._leader = leader
        self._config = config
        self._session = session
        self._worker_key = worker_key
        self._task: asyncio.Task[None] | None = None
        self.settled = False
        """Whether this process knows every worker's health: its first round is done and, in a
        group, the leader's findings copied (or the leader found unreachable)."""

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="agent-eval-health")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def probe_all(self) -> None:
        await asyncio.gather(*(self.probe(worker) for worker in self._pool))

    async def probe(self, worker: Worker) -> None:
        """Probe one worker, update its health, and refresh its model list while it is up."""
        ok, error = await self._get(worker, worker.health_path)
        if ok is not None:
            # Before the worker takes traffic, so its first request on each is routed right.
            await self._find_native_routes(worker)
        first = not worker.health.probed
        changed = worker.health.record(
            ok is not None, self._config.failure_threshold, self._config.success_threshold
        )
        if ok is None:
            worker.health.last_error = error
        else:
            await self._refresh_models(worker, ok)
        if changed and worker.health.healthy:
            log.info("worker %s is up", worker.url)
            worker.breaker.reset()
        elif changed or (first and ok is None):
            log.warning("worker %s is down: %s; probing it again", worker.url, error)

    async def _refresh_models(self, worker: Worker, probe_body: bytes) -> None:
        if worker.health_path.rstrip("/") == "/v1/models":
            body: bytes | None = probe_body
        else:
            body, _ = await self._get(worker, "/v1/models")
        if body is not None:
            worker.list_models(parse_model_ids(body) or worker.models)

    async def _find_native_routes(self, worker: Worker) -> None:
        """Ask the worker which of the translatable routes it serves, those not known yet."""
        for route in NATIVE_ROUTES:
            if (
                route not in worker.native
                and (serves := await self._serves(worker, route)) is not None
            ):
                worker.native[route] = serves

    async def _serves(self, worker: Worker, route: str) -> bool | None:
        """Whether the worker has POST `route`, asked without generating anything.

        A GET on a POST-only route answers 405; on a route that does not exist, 404.
        Anything else (a key required, an error) leaves it unknown: the first request tells.
        """
        status, _, _ = await self._fetch(worker, route)
        return {404: False, 405: True, 200: True}.get(status) if status is not None else None

    async def _get(self, worker: Worker, path: str) -> tuple[bytes | None, str | None]:
        """GET a worker path; (body, None) on 200, else (None, reason)."""
        status, body, error = await self._fetch(worker, path)
        if status == 200:
            return body, None
        return None, error or f"{path} answered {status}"

    async def _fetch(self, worker: Worker, path: str) -> tuple[int | None, bytes, str | None]:
        """GET a worker path: (status, body, None), or (None, b"", reason) when it failed.

        A redirect fails the probe: it is answered by whatever the worker points at, perhaps
        another host, not by the worker.
        """
        timeout = aiohttp.ClientTimeout(total=self._config.timeout)
        headers = worker_auth(self._worker_key, worker)
        try:
            async with self._session.get(
                worker.url + path, headers=headers, timeout=timeout, allow_redirects=False
            ) as resp:
                if 300 <= resp.status < 400:
                    where = resp.headers.get("Location", "nowhere")[:200]
                    return None, b"", f"{path} redirected ({resp.status}) to {where}"
                body = await read_whole(resp.content.readany, resp.content_length, PROBE_BYTES)
                return resp.status, body, None
        except aiohttp.ClientConnectorError as exc:
            return None, b"", f"cannot connect ({os_reason(exc.os_error)})"
        except UpstreamTooLarge as exc:
            return None, b"", f"{path} {exc}"
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return None, b"", f"{path} failed: {type(exc).__name__} {exc}".strip()

    async def _loop(self) -> None:
        await self.probe_all()
        self.settled = self._leader is None
        while True:
            if self._leader is None:
                await asyncio.sleep(self._config.interval)
                await self.probe_all()
            else:
                await asyncio.sleep(await self._follow(self._leader))

    async def _follow(self, leader: LeaderFindings) -> float:
        """Copy the leader's findings, or probe while they cannot be had; seconds to the next."""
        if (found := await leader.read()) is not None:
            adopt(self._pool, found)
            self.settled = True
            return min(self._config.interval, COPY_INTERVAL)
        if leader.unreachable:
            await self.probe_all()
            self.settled = True  # its own findings stand while the leader's cannot be had
            return self._config.interval
        return LEADER_START_POLL  # the leader has not published its port yet
