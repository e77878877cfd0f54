"""A mock SGLang worker: a real aiohttp server with knobs, a hold gate and counters.

Tests and benchmarks of the proxy stand it in for GPU servers. As a process:
`python -m agent_eval.testing.mock_worker --port N --name NAME --model M`; its /mock/ routes
(behavior, script, requests, stats) do over HTTP what the MockWorker methods do. `--count K`
serves K workers on K ports in the one process, NAME-0 to NAME-(K-1), for benches of many.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import asdict
from http import HTTPStatus
from types import TracebackType
from typing import Any, get_args

import orjson
from aiohttp import web
from pydantic import TypeAdapter, ValidationError

from agent_eval.testing.kv_cache import CacheConfig, Lookup, Prefill
from agent_eval.testing.replies import (
    ENDPOINTS,
    JSON,
    Endpoint,
    Prompt,
    Reply,
    ReplyMeta,
    chat_prompt,
)
from agent_eval.testing.templates import TEMPLATES, Template, completion_text
from agent_eval.testing.toy_tokens import ReplyTokens, chat_prompt_text
from agent_eval.testing.worker_state import Behavior, HoldGate, Served, WorkerState, WorkerStats
from agent_eval.wire import TokenFields

log = logging.getLogger(__name__)

STATE = web.AppKey("state", WorkerState)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
_MAX_BODY = 64 * 1024**2  # long agent trajectories outgrow aiohttp's 1 MiB default
_SHUTDOWN_TIMEOUT = 1.0  # a fixture should stop fast; stragglers are cancelled
_KEYLESS = ("/health", "/metrics", "/mock/")
_REPLIES = TypeAdapter(list[Reply])
MAX_CHOICES = 16
"""The most choices the mock samples for one request (`n`)."""


def _json(payload: object, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(payload), status=status, content_type="application/json")


def _error_type(status: int) -> str:
    """SGLang's error type for a status: 400 -> BadRequestError."""
    try:
        name = HTTPStatus(status).phrase.replace(" ", "").replace("-", "")
    except ValueError:
        return "MockError"
    return name if name.endswith("Error") else f"{name}Error"


def _error_body(status: int, message: str) -> JSON:
    """An error body in SGLang's shape."""
    body = {"object": "error", "message": message, "type": _error_type(status), "param": None}
    return {**body, "code": status}


def _error(status: int, message: str) -> web.Response:
    """An error answer in SGLang's shape."""
    return _json(_error_body(status, message), status)


def _parse_object(raw: bytes) -> JSON:
    """A JSON object from a request body. Raises: ValueError when it is not one."""
    body = orjson.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


async def _health(request: web.Request) -> web.Response:
    return web.Response(status=200 if request.app[STATE].behavior.healthy else 503)


async def _model_info(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return _json(
        {"model_path": state.model_path, "tokenizer_path": state.model, "is_generation": True}
    )


async def _server_info(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return _json(
        {"model_path": state.model_path, "port": state.port, "version": "mock", "name": state.name}
    )


def _weights_path(raw: bytes) -> str:
    """The model_path of a weight update request. Raises: ValueError when it has none."""
    path = _parse_object(raw).get("model_path")
    if not isinstance(path, str) or not path:
        raise ValueError("model_path, a non-empty string, is required")
    return path


async def _update_weights_from_disk(request: web.Request) -> web.Response:
    """Swap weights as SGLang does: 200 and the new model_path, or 400 and `success: false`.

    Any existing path loads here; SGLang also refuses weights of another shape.
    """
    state = request.app[STATE]
    state.stats.weight_updates += 1
    try:
        path = _weights_path(await request.read())
    except ValueError as exc:
        return _error(400, f"invalid request body: {exc}")
    if not await asyncio.to_thread(os.path.exists, path):
        # SGLang's words when its loader cannot find the weights, locally or on the Hub.
        message = f"Failed to get weights iterator: {path} (repository not found)."
        return _json({"success": False, "message": message, "num_paused_requests": 0}, 400)
    state.model_path = path
    log.info("mock worker %s loaded weights from %s", state.name, path)
    message = "Succeeded to update model weights."
    return _json({"success": True, "message": message, "num_paused_requests": 0})


async def _tokenize(request: web.Request) -> web.Response:
    """vLLM's chat /tokenize: the prompt's tokens counted as the mock counts them (words), the
    same count its answers report as prompt tokens."""
    raw = await request.read()
    request.app[STATE].stats.bodies.append((request.path, raw))
    try:
        count = chat_prompt(_parse_object(raw)).tokens
    except (ValueError, TypeError, AttributeError) as exc:
        return _error(400, f"invalid request body: {exc}")
    return _json({"count": count, "max_model_len": 32768, "tokens": list(range(count))})


def _card(model: str) -> JSON:
    created = int(time.time())
    return {"id": model, "object": "model", "created": created, "owned_by": "agent-eval-mock"}


async def _models(request: web.Request) -> web.Response:
    """SGLang's served model name: the launch name until a weight swap, then the weights' path."""
    return _json({"object": "list", "data": [_card(request.app[STATE].model_path)]})


async def _model(request: web.Request) -> web.Response:
    """One model card; the only SGLang route that answers 404 to a name it does not serve."""
    model, served = request.match_info["model"], request.app[STATE].model_path
    if model != served:
        error = {"message": f"The model '{model}' does not exist", "type": "invalid_request_error"}
        return _json({"error": {**error, "param": "model", "code": "model_not_found"}}, 404)
    return _json(_card(model))


async def _get_behavior(request: web.Request) -> web.Response:
    return _json(asdict(request.app[STATE].behavior))


async def _set_behavior(request: web.Request) -> web.Response:
    """Apply the JSON fields of the body to the behavior; answer the whole new behavior."""
    behavior = request.app[STATE].behavior
    try:
        behavior.update(_parse_object(await request.read()))
    except ValueError as exc:
        return _error(400, f"invalid behavior update: {exc}")
    return _json(asdict(behavior))


async def _get_load(request: web.Request) -> web.Response:
    """SGLang's /get_load: one data-parallel rank, its requests running and waiting."""
    queue = request.app[STATE].queue
    rank = {"dp_rank": 0, "num_reqs": queue.running, "num_waiting_reqs": queue.waiting}
    return _json([{**rank, "num_tokens": 0}])


async def _stats(request: web.Request) -> web.Response:
    return _json(request.app[STATE].stats.as_dict())


async def _add_script(request: web.Request) -> web.Response:
    """Queue the replies of the body (a JSON list of Reply fields), as `MockWorker.script`."""
    state = request.app[STATE]
    try:
        replies = _REPLIES.validate_json(await request.read())
    except ValidationError as exc:
        return _error(400, f"invalid script: {exc.errors(include_url=False)}")
    state.script.extend(replies)
    return _json({"queued": len(state.script)})


async def _served(request: web.Request) -> web.Response:
    """The latest generation requests and their answers, oldest first."""
    return _json([asdict(served) for served in request.app[STATE].served])


async def _clear_cache(request: web.Request) -> web.Response:
    """Empty the simulated prefix cache, so a benchmark's next run starts cold."""
    prefill = request.app[STATE].prefill
    if prefill is None:
        return _error(
            404, "this mock worker simulates no prefix cache; start it with --prefix-cache"
        )
    prefill.cache.clear()
    return _json({"blocks": len(prefill.cache)})


def _meta(
    state: WorkerState,
    path: str,
    body: JSON,
    prompt: Prompt,
    lookup: Lookup | None,
) -> ReplyMeta:
    endpoint = ENDPOINTS[path]
    options = body.get("stream_options")
    options = options if isinstance(options, dict) else {}
    return ReplyMeta(
        id=f"{endpoint.id_prefix}{state.name}-{next(state.ids)}",
        model=body.get("model") or state.model,
        created=int(time.time()) if state.behavior.created is None else state.behavior.created,
        fingerprint=state.name,
        prompt_tokens=prompt.tokens if lookup is None else lookup.prompt_tokens,
        pieces=state.behavior.stream_chunks,
        include_usage=bool(options.get("include_usage")),
        cached_tokens=None if lookup is None else lookup.cached_tokens,
        tokens=_tokens(state, path, body),
        n=_choices(body),
    )


def _choices(body: JSON) -> int:
    """The choices a request asks for: its `n`, within what a test needs."""
    n = body.get("n")
    return min(n, MAX_CHOICES) if type(n) is int and n > 1 else 1


def _tokens(state: WorkerState, path: str, body: JSON) -> ReplyTokens | None:
    """The token members the answer carries, for a worker that speaks a token dialect."""
    if state.token_fields is None or path == "/v1/responses":
        return None
    chat = path == "/v1/chat/completions"
    prompt = chat_prompt_text(body, state.drift) if chat else completion_text(body)
    return ReplyTokens.of(state.token_fields, chat, prompt, body)


async def _prefill(state: WorkerState, text: str | None) -> Lookup | None:
    """Pay the simulated prefill, when the worker simulates a prefix cache."""
    if state.prefill is None or text is None:
        return None
    lookup = await state.prefill.run(text)
    state.stats.count_prefill(lookup)
    return lookup


def _abort(request: web.Request, state: WorkerState) -> None:
    """Cut the connection without finishing the stream, as a crashing worker would."""
    state.stats.aborted_streams += 1
    if request.transport is not None:
        request.transport.abort()


async def _write_paced(
    response: web.StreamResponse, chunks: Iterator[bytes], behavior: Behavior
) -> bool:
    """Write chunk by chunk; False when `die_mid_stream_after` stops it short."""
    for sent, chunk in enumerate(chunks):
        if sent == behavior.die_mid_stream_after:
            return False
        if sent and behavior.chunk_delay > 0:
            await asyncio.sleep(behavior.chunk_delay)
        await response.write(chunk)
    await response.write_eof()
    return True


async def _stream(
    request: web.Request, state: WorkerState, chunks: Iterator[bytes]
) -> web.StreamResponse:
    """Write SSE chunks, paced and cut as the behavior says."""
    response = web.StreamResponse(headers=_SSE_HEADERS)
    await response.prepare(request)
    behavior = state.behavior
    try:
        if behavior.chunk_delay <= 0 and behavior.die_mid_stream_after is None:
            # Nothing to pace or cut: one write instead of a syscall per chunk.
            await response.write_eof(b"".join(chunks))
        elif not await _write_paced(response, chunks, behavior):
            _abort(request, state)
    except ConnectionResetError:
        # The client left; returning lets aiohttp close quietly instead of logging a traceback.
        state.stats.disconnects += 1
    return response


async def _generate(
    request: web.Request, state: WorkerState, endpoint: Endpoint, template: Template
) -> web.StreamResponse:
    """Answer one generation request: injected error, full queue, latency (in turn, under a
    capacity), gate, prefill, then the reply."""
    try:
        body = _parse_object(await request.read())
        prompt = endpoint.prompt(body)
        text = None if state.prefill is None else template(body)
    # A body of the wrong shape (say, messages that are not objects) is the client's fault.
    except (ValueError, TypeError, AttributeError) as exc:
        return _error(400, f"invalid request body: {exc}")
    behavior, stream = state.behavior, body.get("stream") is True
    if (status := behavior.take_error()) is not None:
        return _refuse(
            request, state, body, status, f"error injected into mock worker {state.name}"
        )
    if state.queue.full(behavior):
        state.stats.rejected += 1
        message = f"mock worker {state.name} is full: {state.queue.waiting} requests wait"
        return _refuse(request, state, body, behavior.busy_status, message)
    async with state.queue.slot(behavior.capacity):
        if behavior.latency > 0:
            await asyncio.sleep(behavior.latency)
        if behavior.hang:
            await state.gate.hold()
    lookup = await _prefill(state, text)
    reply, meta = state.next_reply(prompt), _meta(state, request.path, body, prompt, lookup)
    answer = endpoint.body(reply, meta)
    state.served.append(Served(request.path, body, 200, stream, answer))
    if stream:
        return await _stream(request, state, endpoint.stream(reply, meta))
    return _json(answer)


def _refuse(
    request: web.Request, state: WorkerState, body: JSON, status: int, message: str
) -> web.Response:
    """An error answer to a generation request, kept with the requests served."""
    error = _error_body(status, message)
    state.served.append(Served(request.path, body, status, body.get("stream") is True, error))
    return _json(error, status)


def _generation(path: str) -> Handler:
    """The handler of one generation route."""
    endpoint, template = ENDPOINTS[path], TEMPLATES[path]

    async def handle(request: web.Request) -> web.StreamResponse:
        state = request.app[STATE]
        state.stats.authorizations.append(request.headers.get("Authorization"))
        state.stats.headers.append({k.lower(): v for k, v in request.headers.items()})
        state.stats.bodies.append((request.path, await request.read()))
        with state.stats.generation():
            return await _generate(request, state, endpoint, template)

    return handle


@web.middleware
async def _require_key(request: web.Request, handler: Handler) -> web.StreamResponse:
    """SGLang's --api-key check; the mock's own /mock routes stay open to tests."""
    key = request.app[STATE].api_key
    if key is None or request.method == "OPTIONS" or request.path.startswith(_KEYLESS):
        return await handler(request)
    if request.headers.get("Authorization") != f"Bearer {key}":
        return _json({"error": "Unauthorized"}, 401)
    return await handler(request)


@web.middleware
async def _count_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    request.app[STATE].stats.requests[request.path] += 1
    return await handler(request)


async def _stamp(request: web.Request, response: web.StreamResponse) -> None:
    """Name the worker on every answer, so tests behind a proxy see who answered."""
    response.headers["X-Mock-Worker"] = request.app[STATE].name


def build_app(state: WorkerState) -> web.Application:
    """The aiohttp application of one mock worker over `state`."""
    app = web.Application(middlewares=[_count_requests, _require_key], client_max_size=_MAX_BODY)
    app[STATE] = state
    app.on_response_prepare.append(_stamp)
    app.router.add_get("/health", _health)
    app.router.add_get("/health_generate", _health)
    app.router.add_get("/get_model_info", _model_info)
    app.router.add_get("/get_server_info", _server_info)
    app.router.add_get("/get_load", _get_load)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/v1/models/{model:.+}", _model)
    app.router.add_post("/update_weights_from_disk", _update_weights_from_disk)
    app.router.add_get("/mock/behavior", _get_behavior)
    app.router.add_post("/mock/behavior", _set_behavior)
    app.router.add_get("/mock/stats", _stats)
    app.router.add_get("/mock/requests", _served)
    app.router.add_post("/mock/script", _add_script)
    app.router.add_delete("/mock/cache", _clear_cache)
    for path in ENDPOINTS:
        if path != "/v1/responses" or state.responses_api:
            app.router.add_post(path, _generation(path))
    if state.tokenize_api:
        app.router.add_post("/tokenize", _tokenize)
    return app


class MockWorker:
    """One mock SGLang worker on a real port; `async with MockWorker() as worker: ...`."""

    def __init__(
        self,
        name: str = "mock-0",
        model: str = "mock-model",
        host: str = "127.0.0.1",
        port: int = 0,
        behavior: Behavior | None = None,
        responses_api: bool = True,
        api_key: str | None = None,
        cache: CacheConfig | None = None,
        tokenize_api: bool = True,
        token_fields: TokenFields | None = None,
        drift: bool = False,
    ) -> None:
        """`cache` turns on the simulated prefix cache and its prefill delay; `token_fields`
        has it answer token ids and logprobs in vLLM's or SGLang's fields (`toy_tokens`), with
        a template that `drift`s when asked."""
        self.state = WorkerState(
            name,
            model,
            behavior or Behavior(),
            responses_api=responses_api,
            tokenize_api=tokenize_api,
            api_key=api_key,
            token_fields=token_fields,
            drift=drift,
        )
        self.state.prefill = None if cache is None else Prefill(cache)
        self.host = host
        self._bind_port = port
        self._runner: web.AppRunner | None = None

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def behavior(self) -> Behavior:
        return self.state.behavior

    @property
    def stats(self) -> WorkerStats:
        return self.state.stats

    @property
    def gate(self) -> HoldGate:
        return self.state.gate

    @property
    def port(self) -> int:
        """The bound port; 0 before `start()`."""
        return self.state.port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def script(self, *replies: Reply) -> None:
        """Queue replies; each generation request takes the next, then defaults resume."""
        self.state.script.extend(replies)

    def requests_to(self, path: str) -> list[JSON]:
        """The bodies of the latest generation requests on `path`, oldest first."""
        return [orjson.loads(body) for seen, body in self.stats.bodies if seen == path]

    def served(self, path: str | None = None) -> list[Served]:
        """The latest generation requests (on `path`, or all) and their answers, oldest first."""
        return [served for served in self.state.served if path in (None, served.path)]

    def assert_script_used_up(self) -> None:
        """Raises: AssertionError if scripted replies were never asked for."""
        if left := len(self.state.script):
            raise AssertionError(f"mock worker {self.name}: {left} scripted replies never used")

    async def start(self) -> None:
        """Bind and serve; port 0 picks a free one. Raises: OSError when the port is taken."""
        runner = web.AppRunner(
            build_app(self.state),
            access_log=None,  # the benchmark pushes thousands of requests a second
            handler_cancellation=True,  # so a client that leaves is seen, even on the gate
            shutdown_timeout=_SHUTDOWN_TIMEOUT,
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self._bind_port).start()
        except OSError:
            await runner.cleanup()
            raise
        self.state.port = runner.addresses[0][1]
        self._runner = runner
        log.info("mock worker %s serving %s at %s", self.name, self.state.model, self.url)

    async def stop(self) -> None:
        """Release held requests and shut the server down."""
        if self._runner is None:
            return
        self.gate.release()
        await self._runner.cleanup()
        self._runner = None

    async def __aenter__(self) -> MockWorker:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve mock SGLang workers until SIGTERM.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--name", default="mock-0")
    parser.add_argument(
        "--count",
        type=int,
        default=1,
        help="workers served by this process, each on a free port of its own and named "
        "NAME-0, NAME-1, ... (more than 1 takes --port 0)",
    )
    parser.add_argument("--model", default="mock-model")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before answering")
    parser.add_argument(
        "--capacity", type=int, help="generation requests served at once; the others wait"
    )
    parser.add_argument(
        "--queue-limit",
        type=int,
        help="with --capacity: waiting requests past which it answers 429",
    )
    parser.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between chunks")
    parser.add_argument("--stream-chunks", type=int, default=4, help="content pieces per stream")
    parser.add_argument(
        "--two-step", action="store_true", help="answer tool requests with a calculator call"
    )
    parser.add_argument(
        "--wrong-above-temperature",
        type=float,
        help="two-step answers are wrong at a request temperature above this",
    )
    parser.add_argument(
        "--needs-tokens",
        type=int,
        help="two-step answers fill max_tokens and are wrong when it is below this",
    )
    parser.add_argument(
        "--no-responses-api",
        dest="responses_api",
        action="store_false",
        help="serve no /v1/responses, like llama.cpp",
    )
    parser.add_argument("--api-key", help="require `Authorization: Bearer KEY`, as SGLang does")
    parser.add_argument(
        "--token-fields",
        choices=get_args(TokenFields),
        help="answer token ids and logprobs in vLLM's, SGLang's or our llama.cpp server's fields",
    )
    parser.add_argument(
        "--drift", action="store_true", help="render a re-sent assistant turn differently"
    )
    _add_cache_arguments(parser)
    args = parser.parse_args(argv)
    if args.count < 1 or (args.count > 1 and args.port != 0):
        parser.error("--count takes a number from 1 up, and more than 1 takes --port 0")
    return args


def _add_cache_arguments(parser: argparse.ArgumentParser) -> None:
    cache, default = parser.add_argument_group("simulated prefix cache"), CacheConfig()
    cache.add_argument(
        "--prefix-cache", action="store_true", help="simulate a prefix KV cache and its prefill"
    )
    cache.add_argument("--cache-tokens", type=int, default=default.capacity_tokens)
    cache.add_argument("--block-tokens", type=int, default=default.block_tokens)
    cache.add_argument(
        "--prefill-ms-per-token",
        type=float,
        default=default.prefill_per_token * 1000,
        help="prefill delay per uncached prompt token",
    )
    cache.add_argument(
        "--prefill-slots", type=int, default=default.prefill_slots, help="prefills at once"
    )


def _cache_config(args: argparse.Namespace) -> CacheConfig | None:
    """The cache the flags ask for. Raises: SystemExit naming a bad value."""
    if not args.prefix_cache:
        return None
    try:
        return CacheConfig(
            args.cache_tokens,
            args.block_tokens,
            args.prefill_ms_per_token / 1000,
            args.prefill_slots,
        )
    except ValueError as exc:
        raise SystemExit(f"mock worker: {exc}") from None


async def _serve(args: argparse.Namespace) -> None:
    """Serve until SIGTERM or SIGINT, printing a READY line for each worker once bound."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with contextlib.AsyncExitStack() as workers:
        for name in _names(args.name, args.count):
            worker = await workers.enter_async_context(_worker(args, name))
            # Launchers wait for this exact line on stdout to learn the port.
            print(f"READY {worker.url}", flush=True)
        await stop.wait()


def _names(name: str, count: int) -> list[str]:
    return [name] if count == 1 else [f"{name}-{i}" for i in range(count)]


def _worker(args: argparse.Namespace, name: str) -> MockWorker:
    """One worker as the flags say, named `name`; each has its own behavior and state."""
    behavior = Behavior(
        latency=args.latency,
        capacity=args.capacity,
        queue_limit=args.queue_limit,
        chunk_delay=args.chunk_delay,
        stream_chunks=args.stream_chunks,
        two_step=args.two_step,
        wrong_above_temperature=args.wrong_above_temperature,
        needs_tokens=args.needs_tokens,
    )
    return MockWorker(
        name,
        args.model,
        args.host,
        args.port,
        behavior,
        args.responses_api,
        args.api_key,
        _cache_config(args),
        token_fields=args.token_fields,
        drift=args.drift,
    )


def _run(main: Coroutine[Any, Any, None]) -> None:
    """Run on uvloop when it is installed: benchmarks need the throughput."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
    else:
        uvloop.run(main)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of `python -m agent_eval.testing.mock_worker`."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    _run(_serve(_parse_args(argv)))


if __name__ == "__main__":
    main()
