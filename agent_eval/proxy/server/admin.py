"""The worker admin API: list, add and remove workers while the proxy runs.

In a proxy of several processes, the process a change reaches applies it and passes it on to
the others, and a listing adds up every process's view.
"""

from __future__ import annotations

import time
from typing import Any

import orjson
from aiohttp import web

from agent_eval.errors import ConfigError
from agent_eval.proxy.errors import error_response, invalid_json
from agent_eval.proxy.fleet.health_copy import HEALTH_PATH, findings
from agent_eval.proxy.fleet.pool import UnknownWorkerError, WorkerExistsError
from agent_eval.proxy.fleet.queues import worker_queues
from agent_eval.proxy.server.keys import CONFIG, HEALTH, METRICS, POOL, QUEUES, SESSION
from agent_eval.proxy.server.metrics import CacheTally
from agent_eval.proxy.server.siblings import SiblingAnswer, ask_siblings, relayed
from agent_eval.proxy.server.worker_views import merged

QUEUES_PATH = "/workers/queues"


def add_routes(app: web.Application) -> None:
    app.router.add_get("/workers", list_workers)
    app.router.add_post("/workers", add_worker)
    app.router.add_delete("/workers", remove_worker)
    app.router.add_get(HEALTH_PATH, worker_health)
    app.router.add_get(QUEUES_PATH, worker_queues_now)


async def list_workers(request: web.Request) -> web.Response:
    """GET /workers: each worker with its health, breaker state, load and prefix-cache hits;
    in a group, every process's figures added up (`processes` says how many answered)."""
    now, tallies = time.monotonic(), request.app[METRICS].cache
    workers = [
        {**w.snapshot(now), **tallies.get(w.url, CacheTally()).snapshot()}
        for w in request.app[POOL]
    ]
    if relayed(request):
        return web.json_response({"workers": workers})
    views = [workers] + [
        answer.body["workers"] for answer in await ask_siblings(request) if answer.status == 200
    ]
    return web.json_response({"workers": merged(views), "processes": len(views)})


async def worker_health(request: web.Request) -> web.Response:
    """GET /workers/health: what this process's probes found, for the others of its group."""
    return web.json_response({"workers": findings(request.app[POOL])})


async def worker_queues_now(request: web.Request) -> web.Response:
    """GET /workers/queues: the requests waiting at each worker, as the worker said at most
    `health.queues_max_age` seconds ago (every process fronts the same workers: this one asks)."""
    app = request.app
    pool, key = app[POOL], app[CONFIG].worker_api_key
    workers = list(pool)
    found = await app[QUEUES].read(lambda: worker_queues(app[SESSION], workers, key))
    return web.json_response({"workers": found})


async def add_worker(request: web.Request) -> web.Response:
    """POST /workers {"url", "health_path"?, "worker_key"?}: add a worker and probe it at once.

    The proxy's worker key goes to the new worker only when `worker_key` is true.
    """
    return await _in_every_process(request, await _added(request), fine={201, 409})


async def _added(request: web.Request) -> web.Response:
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
    return await _in_every_process(request, await _removed(request), fine={200, 404})


async def _removed(request: web.Request) -> web.Response:
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


async def _in_every_process(
    request: web.Request, answer: web.Response, fine: set[int]
) -> web.Response:
    """This process's answer to a change, once the group's other processes made it too.

    A change this process refused as malformed is not passed on. `fine`: the statuses that
    say a process has the change (a 409 or 404 there: it had it already)."""
    if relayed(request) or answer.status not in fine:
        return answer
    missed = [a for a in await ask_siblings(request) if a.status not in fine]
    if not missed:
        return answer
    return error_response(
        502,
        "group_change_incomplete",
        f"{_missed(missed)}; send the request again: the processes that made the change "
        "answer that they have it, and the others make it",
    )


def _missed(answers: list[SiblingAnswer]) -> str:
    said = (
        f"proxy process {a.member} "
        + (f"could not be reached ({a.error})" if a.status is None else f"answered {a.status}")
        for a in answers
    )
    return "; ".join(said)


async def _json_fields(request: web.Request) -> dict[str, Any] | web.Response:
    try:
        data = orjson.loads(await request.read())
    except orjson.JSONDecodeError as exc:
        return invalid_json(str(exc))
    return data if isinstance(data, dict) else invalid_json(f"got a JSON {type(data).__name__}")


# The handlers that take the admin token: changes to the pool, and the probes' findings.
ADMIN = frozenset({add_worker, remove_worker, worker_health})


def _bad_fields() -> web.Response:
    return error_response(
        400,
        "invalid_worker",
        'send {"url": "http://HOST:PORT", "health_path": "/health", "worker_key": false}; '
        "health_path and worker_key (whether the proxy's worker key goes to it) are optional",
    )
