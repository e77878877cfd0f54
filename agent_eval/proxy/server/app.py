"""The proxy's aiohttp application: OpenAI routes, health, metrics and the worker admin API."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from aiohttp import web
from aiohttp.typedefs import Middleware

from agent_eval.proxy.capture import routes as capture_routes
from agent_eval.proxy.capture.call import Call
from agent_eval.proxy.capture.routes import ATTEMPT_PREFIX, ATTEMPTS
from agent_eval.proxy.capture.store import AttemptStore
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.errors import (
    admin_unauthorized,
    body_too_large,
    body_too_slow,
    error_response,
    expectation_failed,
    in_envelope,
    invalid_json,
    method_not_allowed,
    nesting_too_deep,
    no_healthy_worker,
    not_found,
    unauthorized,
)
from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.fields import RequestRefused
from agent_eval.proxy.fleet.health import HealthChecker
from agent_eval.proxy.fleet.health_copy import LeaderFindings
from agent_eval.proxy.fleet.pool import WorkerPool
from agent_eval.proxy.fleet.queues import QueueReadings
from agent_eval.proxy.forward import Forwarder
from agent_eval.proxy.messages.request import metadata_user
from agent_eval.proxy.policies import RequestInfo, session_key
from agent_eval.proxy.recorder import Recorder
from agent_eval.proxy.responses.route import ResponsesRoute
from agent_eval.proxy.responses.shared_store import SharedResponseStore
from agent_eval.proxy.responses.store import ResponseStorage, ResponseStore, StoreBounds
from agent_eval.proxy.routes import (
    COUNT_TOKENS_ROUTE,
    MESSAGES_ROUTE,
    RESPONSES_ROUTE,
    is_anthropic,
)
from agent_eval.proxy.server import admin, response_routes
from agent_eval.proxy.server.auth import (
    bearer_matches,
    client_authorized,
    secret_bytes,
    sent_attempt_key,
)
from agent_eval.proxy.server.group import Group
from agent_eval.proxy.server.keys import (
    CALL,
    CONFIG,
    FORWARDER,
    GROUP,
    HEALTH,
    METRICS,
    NESTING,
    POOL,
    QUEUES,
    RESPONSES,
    SESSION,
)
from agent_eval.proxy.server.limits import in_flight_cap
from agent_eval.proxy.server.metrics import ProxyMetrics
from agent_eval.proxy.server.metrics_shared import syncing
from agent_eval.proxy.server.readiness import readiness
from agent_eval.proxy.server.request_bounds import MAX_NESTING, NestingBound
from agent_eval.proxy.upstream.connections import ConnectionLimits, UpstreamPool
from agent_eval.shims.aiohttp_expect import send_continue
from agent_eval.wire import SESSION_HEADER

log = logging.getLogger(__name__)

GENERATION_ROUTES = (
    "/v1/chat/completions",
    "/v1/completions",
    RESPONSES_ROUTE,
    MESSAGES_ROUTE,
    COUNT_TOKENS_ROUTE,
)
PROTECTED_PREFIXES = ("/v1/", "/workers", "/a/", "/attempts")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_KEYED_PATH = re.compile(r"^/a/[^/]*/?")


def build_app(config: ProxyConfig, group: Group | None = None) -> web.Application:
    """The proxy app over the configured workers; upstream resources live as long as it.

    `group`: this process's place in a group of several sharing the port, if it is one."""
    pool = WorkerPool(config.health, config.routing_policy())
    pool.add_all(config.endpoints)
    app = web.Application(client_max_size=config.max_body_bytes, middlewares=[_guard(config)])
    app[CONFIG] = config
    app[POOL] = pool
    app[ATTEMPTS] = AttemptStore(config.capture)
    app[METRICS] = ProxyMetrics(pool, app[ATTEMPTS])
    app[RESPONSES] = ResponsesRoute(_response_store(config, group))
    app[NESTING] = NestingBound()
    app[QUEUES] = QueueReadings(config.health.queues_max_age)
    if group is not None:
        app[GROUP] = group
        app.on_cleanup.append(_close_shared_store)
    app.cleanup_ctx.append(_upstream)
    if app[METRICS].shared is not None:
        app.cleanup_ctx.append(_shared_metrics)
    # Each route again under /a/KEY, for clients that can set a base URL but no key.
    for prefix in ("", ATTEMPT_PREFIX):
        for route in GENERATION_ROUTES:
            app.router.add_post(prefix + route, generate, expect_handler=_expect)
        app.router.add_get(prefix + "/v1/models", models)
    app.router.add_get("/health", health)
    app.router.add_get("/readiness", readiness)
    app.router.add_get("/metrics", metrics)
    admin.add_routes(app)
    capture_routes.add_routes(app)
    response_routes.add_routes(app)
    return app


async def _shared_metrics(app: web.Application) -> AsyncIterator[None]:
    shared = app[METRICS].shared
    assert shared is not None, "added only for a proxy of several processes"
    async with syncing(shared):
        yield


def _response_store(config: ProxyConfig, group: Group | None) -> ResponseStorage:
    """This process's own Responses store, or the file its group shares."""
    kept = config.responses
    bounds = StoreBounds(kept.store_capacity, kept.store_ttl, kept.store_bytes)
    if group is None:
        return ResponseStore(bounds)
    return SharedResponseStore(group.responses_path, bounds)


async def _close_shared_store(app: web.Application) -> None:
    store = app[RESPONSES].store
    assert isinstance(store, SharedResponseStore), "added only for a group's shared store"
    store.close()


async def _upstream(app: web.Application) -> AsyncIterator[None]:
    """Connections to the workers, the health prober and the recorder, for the app's lifetime."""
    config = app[CONFIG]
    connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, enable_cleanup_closed=True)
    session = aiohttp.ClientSession(connector=connector, auto_decompress=True)
    app[SESSION] = session
    recorder = Recorder(config.record_dir) if config.record_dir else None
    if recorder is not None:
        await recorder.start()
    app[HEALTH] = HealthChecker(
        app[POOL], config.health, session, config.worker_api_key, _leader(app, session)
    )
    limits = config.limits
    upstream = UpstreamPool(
        ConnectionLimits(
            config.timeouts.connect,
            limits.max_connections_per_worker,
            limits.max_idle_per_worker,
            limits.idle_timeout,
        )
    )
    app[FORWARDER] = Forwarder(
        config,
        app[POOL],
        upstream,
        app[METRICS],
        recorder,
        in_flight_cap(limits.max_in_flight),
    )
    app[HEALTH].start()
    try:
        yield
    finally:
        await app[HEALTH].stop()
        if recorder is not None:
            await recorder.close()
        upstream.close()
        await session.close()


def _leader(app: web.Application, session: aiohttp.ClientSession) -> LeaderFindings | None:
    """Where a process of a group that does not lead reads the workers' health."""
    group, token = app.get(GROUP), app[CONFIG].admin_token
    if group is None or group.leads:
        return None
    assert token is not None, "a group's processes get the admin token from their parent"
    return LeaderFindings(session, group.leader, token.get_secret_value())


def _guard(config: ProxyConfig) -> Middleware:
    """Checks keys, records the calls of attempt keys, and turns routing misses and surprises
    into errors, each in the shape its route's clients read."""
    key, token = secret_bytes(config.api_key), secret_bytes(config.admin_token)
    limit = config.max_body_bytes

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        call = _admission(request, key, token)
        route = routed_path(request.path)
        if isinstance(call, web.Response):
            return in_envelope(route, call)
        response: web.StreamResponse | None = None
        try:
            response = in_envelope(route, await _answer(request, handler, limit))
            return response
        finally:
            if call is not None:
                call.abandon(response)  # recorded already, unless it ended before the forwarder

    return guard


def _admission(
    request: web.Request, key: bytes | None, token: bytes | None
) -> Call | web.Response | None:
    """The answer that refuses a request its keys do not open; else the attempt call it is,
    if it is one."""
    called = request.match_info.handler
    if called in ADMIN_HANDLERS:
        # Changing workers and attempts takes the admin token, whatever key clients use.
        if token is None or not bearer_matches(request.headers.get("Authorization", ""), token):
            return admin_unauthorized()
        return None
    if called in ATTEMPT_HANDLERS and (
        sent := sent_attempt_key(request.headers, request.match_info.get("key"))
    ):
        return _admitted(request, sent)  # the attempt key alone lets it in
    if (
        key is not None
        and request.path.startswith(PROTECTED_PREFIXES)
        and not client_authorized(routed_path(request.path), request.headers, key)
    ):
        return unauthorized()
    return None


async def _answer(request: web.Request, handler: Handler, limit: int) -> web.StreamResponse:
    """The handler's answer; routing misses and surprises as errors."""
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return body_too_large(limit)
    except web.HTTPNotFound:
        return not_found(shown_path(request.path))
    except web.HTTPMethodNotAllowed as exc:
        allowed = sorted(exc.allowed_methods)
        return method_not_allowed(request.method, shown_path(request.path), allowed)
    except web.HTTPException:
        raise
    except Exception:
        log.exception("unexpected error on %s %s", request.method, shown_path(request.path))
        return error_response(500, "proxy_error", "the proxy failed on this request; see its log")


def _admitted(request: web.Request, key: str) -> Call | web.Response | None:
    """The attempt call a request with an attempt key is (None: a route not recorded, which
    the key opens), or the answer that refuses it."""
    store = request.app[ATTEMPTS]
    if request.match_info.handler is models:
        attempt = store.usable(key)
        return attempt if isinstance(attempt, web.Response) else None
    call = store.admit(key)
    if isinstance(call, Call):
        call.route = routed_path(request.path)
        request[CALL] = call
    return call


async def generate(request: web.Request) -> web.StreamResponse:
    """POST /v1/chat/completions, /v1/completions, /v1/responses, /v1/messages (and its
    count_tokens): forwarded to a worker."""
    started = time.monotonic()
    limit = request.app[CONFIG].max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        return body_too_large(limit)
    body: bytes | None
    if request.content.is_eof():
        body = await request.read()  # it came with the head, as small bodies do: no timer
    elif (body := await _read_slow_body(request)) is None:
        return body_too_slow(request.app[CONFIG].limits.client_timeout)
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return invalid_json(str(exc))
    if not isinstance(payload, dict):
        return invalid_json(f"got a JSON {type(payload).__name__}")
    if request.app[NESTING].exceeded(payload):
        return nesting_too_deep(MAX_NESTING)
    call = request.get(CALL)
    if call is None:
        route = request.path
        session = session_key(request.headers.get(SESSION_HEADER) or _sent_session(route, payload))
    else:
        # The attempt is the session: its calls stay on one worker, whatever the client sends.
        route, session = call.route, call.attempt.session
        call.sent(payload, body)
    info = RequestInfo(
        route=route,
        model=_text(payload.get("model")),
        session_key=session,
        stream=payload.get("stream") is True,
        payload=payload,
    )
    exchange = Exchange(request, body, payload, info, started, call=call)
    if route == RESPONSES_ROUTE:
        return await _respond(request, exchange)
    forwarded = await request.app[FORWARDER].forward(exchange)
    return forwarded.response


async def _respond(request: web.Request, exchange: Exchange) -> web.StreamResponse:
    """A Responses request: the stored conversation it continues put in front, its answer
    stored for the next to continue."""
    forwarder, responses = request.app[FORWARDER], request.app[RESPONSES]
    try:
        exchange = responses.continued(exchange)
    except RequestRefused as exc:
        return forwarder.refuse(exchange, exc).response
    forwarded = await forwarder.forward(exchange)
    if forwarded.worker is not None and forwarded.response.status == 200:
        responses.remember(exchange, forwarded.worker.url, forwarded.translated, forwarded.answer)
    return forwarded.response


async def models(request: web.Request) -> web.Response:
    """GET /v1/models: the models the healthy workers serve."""
    pool = request.app[POOL]
    if not pool.healthy():
        return no_healthy_worker(len(pool))
    data = [
        {"id": m, "object": "model", "created": 0, "owned_by": "agent-eval"} for m in pool.models()
    ]
    return web.json_response({"object": "list", "data": data}, dumps=_dumps)


ADMIN_HANDLERS = admin.ADMIN | capture_routes.ADMIN
"""The handlers that take the admin token."""
ATTEMPT_HANDLERS = frozenset({generate, models})
"""The handlers an attempt key opens."""


async def health(request: web.Request) -> web.Response:
    """GET /health: the proxy process is alive."""
    return web.json_response({"status": "ok"})


async def metrics(request: web.Request) -> web.Response:
    """GET /metrics: Prometheus text format."""
    proxy_metrics = request.app[METRICS]
    shared = proxy_metrics.shared
    body = proxy_metrics.render() if shared is None else await proxy_metrics.render_shared(shared)
    return web.Response(body=body, headers={"Content-Type": "text/plain; version=0.0.4"})


async def _expect(request: web.Request) -> web.StreamResponse | None:
    """`Expect: 100-continue` as aiohttp meets it; any other expectation refused as JSON."""
    expect = request.headers.get("Expect", "")
    if expect.lower() == "100-continue":
        # aiohttp's own answer; its handler refuses anything else in plain text, before middlewares.
        await send_continue(request)
        return None
    return expectation_failed(expect)


async def _read_slow_body(request: web.Request) -> bytes | None:
    """A body still arriving; None when the client did not send it all in time."""
    try:
        async with asyncio.timeout(request.app[CONFIG].limits.client_timeout):
            return await request.read()
    except TimeoutError:
        return None


def _sent_session(route: str, payload: dict[str, Any]) -> str | None:
    """The session key a body names: OpenAI's `user`, or Anthropic's `metadata.user_id`."""
    if is_anthropic(route):
        return metadata_user(payload)
    return _text(payload.get("user"))


def routed_path(path: str) -> str:
    """A path without the /a/KEY/ an attempt's client may put in front of its route."""
    return _KEYED_PATH.sub("/", path) if path.startswith("/a/") else path


def shown_path(path: str) -> str:
    """A path as it may be logged or echoed: an attempt key in it masked."""
    return _KEYED_PATH.sub("/a/KEY/", path)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _dumps(data: object) -> str:
    return orjson.dumps(data).decode()
