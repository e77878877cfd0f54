"""GET and DELETE /v1/responses/{id}: the responses made through the proxy and stored."""

from __future__ import annotations

import aiohttp
from aiohttp import web

from agent_eval.proxy.errors import error_response
from agent_eval.proxy.server.keys import CONFIG, POOL, RESPONSES, SESSION
from agent_eval.proxy.upstream.failures import openai_error_body
from agent_eval.proxy.upstream.headers import worker_auth
from agent_eval.proxy.upstream.http1 import UpstreamTooLarge, read_whole
from agent_eval.wire import WORKER_HEADER

WORKER_TIMEOUT = aiohttp.ClientTimeout(total=60)


def add_routes(app: web.Application) -> None:
    app.router.add_get("/v1/responses/{response_id}", retrieve)
    app.router.add_delete("/v1/responses/{response_id}", delete)


async def retrieve(request: web.Request) -> web.StreamResponse:
    """A stored response: the proxy's own copy, or the native worker that made it answers."""
    response_id = request.match_info["response_id"]
    stored = request.app[RESPONSES].store.get(response_id)
    if stored is None:
        return _unknown(response_id)
    if stored.response is None:
        return await _from_worker(request, stored.worker)
    return web.Response(
        body=stored.response,
        content_type="application/json",
        headers={WORKER_HEADER: stored.worker},
    )


async def delete(request: web.Request) -> web.StreamResponse:
    """Forget a stored response; a native worker's own copy is deleted there too."""
    response_id = request.match_info["response_id"]
    stored = request.app[RESPONSES].store.pop(response_id)
    if stored is None:
        return _unknown(response_id)
    if stored.response is None:
        return await _from_worker(request, stored.worker)
    return web.json_response({"id": response_id, "object": "response.deleted", "deleted": True})


async def _from_worker(request: web.Request, worker: str) -> web.StreamResponse:
    """The same request made to `worker`, its answer passed back."""
    headers = worker_auth(request.app[CONFIG].worker_api_key, request.app[POOL].get(worker))
    limit = request.app[CONFIG].max_response_bytes
    try:
        async with request.app[SESSION].request(
            request.method,
            worker + request.path,
            headers=headers,
            timeout=WORKER_TIMEOUT,
            allow_redirects=False,
        ) as answer:
            body = await read_whole(answer.content.readany, answer.content_length, limit)
            status = answer.status
    except UpstreamTooLarge as exc:
        message = f"worker {worker}, which holds this response, {exc}"
        return error_response(502, "upstream_response_too_large", message)
    except (aiohttp.ClientError, TimeoutError) as exc:
        return error_response(
            502, "worker_unreachable", f"worker {worker}, which holds this response: {exc}"
        )
    if status >= 300:  # a redirect is not followed: it may point anywhere
        body = openai_error_body(status, body)
    return web.Response(
        status=status, body=body, content_type="application/json", headers={WORKER_HEADER: worker}
    )


def _unknown(response_id: str) -> web.Response:
    return error_response(
        404,
        "response_not_found",
        f"no stored response has id {response_id!r}: it was made with `store: false`, "
        "not through this proxy, or expired from its store",
    )
