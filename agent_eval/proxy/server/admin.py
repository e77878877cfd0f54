"""The worker admin API: list, add and remove workers while the proxy runs."""

from __future__ import annotations

import time
from typing import Any

import orjson
from aiohttp import web

from agent_eval.errors import ConfigError
from agent_eval.proxy.errors import error_response, invalid_json
from agent_eval.proxy.fleet.pool import UnknownWorkerError, WorkerExistsError
from agent_eval.proxy.server.keys import HEALTH, METRICS, POOL
from agent_eval.proxy.server.metrics import CacheTally


def add_routes(app: web.Application) -> None:
    app.router.add_get("/workers", list_workers)
    app.router.add_post("/workers", add_worker)
    app.router.add_delete("/workers", remove_worker)


async def list_workers(request: web.Request) -> web.Response:
    """GET /workers: each worker with its health, breaker state, load and prefix-cache hits."""
    now, tallies = time.monotonic(), request.app[METRICS].cache
    workers = [
        {**w.snapshot(now), **tallies.get(w.url, CacheTally()).snapshot()}
        for w in request.app[POOL]
    ]
    return web.json_response({"workers": workers})


async def add_worker(request: web.Request) -> web.Response:
    """POST /workers {"url", "health_path"?, "worker_key"?}: add a worker and probe it at once.

    The proxy's worker key goes to the new worker only when `worker_key` is true.
    """
    fields = await _json_fields(request)
    if isinstance(fields, web.Response):
        return fields
    url, health_path = fields.get("url"), fields.get("health_path")
    takes_key = fields.get("worker_key", False)
    if not (
        isinstance(url, str) and isinstance(health_path, str | None) and isinstance(takes_key, bool)
    ):
        return _bad_fields()
    try:
        worker = request.app[POOL].add(url, health_path, takes_key)
    except WorkerExistsError as exc:
        return error_response(409, "worker_exists", f"{exc}; remove it first to re-add it")
    except ConfigError as exc:
        return error_response(400, "invalid_worker_url", str(exc))
    await request.app[HEALTH].probe(worker)
    return web.json_response(worker.snapshot(time.monotonic()), status=201)


async def remove_worker(request: web.Request) -> web.Response:
    """DELETE /workers?url=... (or a JSON body {"url"}): take a worker out of the pool."""
    url = request.query.get("url")
    if url is None:
        fields = await _json_fields(request)
        if isinstance(fields, web.Response):
            return fields
        url = fields.get("url")
    if not isinstance(url, str):
        return _bad_fields()
    try:
        worker = request.app[POOL].remove(url)
    except UnknownWorkerError as exc:
        return error_response(404, "unknown_worker", str(exc))
    except ConfigError as exc:
        return error_response(400, "invalid_worker_url", str(exc))
    return web.json_response(worker.snapshot(time.monotonic()))


async def _json_fields(request: web.Request) -> dict[str, Any] | web.Response:
    try:
        data = orjson.loads(await request.read())
    except orjson.JSONDecodeError as exc:
        return invalid_json(str(exc))
    return data if isinstance(data, dict) else invalid_json(f"got a JSON {type(data).__name__}")


# The handlers that change the pool: they take the admin token.
CHANGES = frozenset({add_worker, remove_worker})


def _bad_fields() -> web.Response:
    return error_response(
        400,
        "invalid_worker",
        'send {"url": "http://HOST:PORT", "health_path": "/health", "worker_key": false}; '
        "health_path and worker_key (whether the proxy's worker key goes to it) are optional",
    )
