"""Send a client request to a worker, retrying elsewhere on failures that allow it."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, replace
from typing import Any

import orjson
from aiohttp import web

from agent_eval.proxy.capture.token_fields import token_ask
from agent_eval.proxy.capture.token_stream import TokenRelay, whole_answer
from agent_eval.proxy.capture.token_translation import TokenTranslation
from agent_eval.proxy.config import ProxyConfig
from agent_eval.proxy.dialects import (
    Translation,
    assembler_for,
    follows,
    lacks_route,
    stream_ending,
    translation_for,
)
from agent_eval.proxy.errors import (
    error_response,
    in_envelope,
    model_not_found,
    no_healthy_worker,
    out_of_resources,
    overloaded,
    too_many_choices,
)
from agent_eval.proxy.exchange import Exchange
from agent_eval.proxy.fields import RequestRefused
from agent_eval.proxy.fleet.pool import ModelNotServedError, WorkerPool
from agent_eval.proxy.fleet.worker import Worker
from agent_eval.proxy.recorder import Recorder
from agent_eval.proxy.server.metrics import ProxyMetrics
from agent_eval.proxy.server.request_bounds import MAX_NESTING, NestingBound, choices_over
from agent_eval.proxy.upstream.connections import UpstreamPool
from agent_eval.proxy.upstream.failures import (
    ERROR_BODY_BYTES,
    UPSTREAM_ERRORS,
    Failure,
    classify_exception,
    openai_error_body,
    retryable,
    status_failure,
)
from agent_eval.proxy.upstream.headers import (
    served_by,
    translated_headers,
    upstream_headers,
    worker_auth,
)
from agent_eval.proxy.upstream.http1 import ProxyOutOfResources, UpstreamResponse
from agent_eval.proxy.upstream.streaming import Passthrough, Relay, pipe_stream
from agent_eval.proxy.upstream.translated import ChatTranslation
from agent_eval.wire import RETRIES_HEADER, SHOULD_RETRY_HEADER, WAITED_HEADER, WORKER_HEADER

log = logging.getLogger(__name__)

BACKPRESSURE = frozenset({429, 503})
"""A worker's statuses that say it is full."""
_EXHAUSTED = {
    "connect": (502, "worker_unreachable"),
    "disconnect": (502, "upstream_disconnected"),
    "busy": (503, "worker_busy"),
    "too_large": (502, "upstream_response_too_large"),
}


@dataclass(frozen=True, slots=True)
class Forwarded:
    """A request's answer, and what made it: the worker, whether it was translated, the answer
    parsed (when followed or read whole)."""

    response: web.StreamResponse
    worker: Worker | None = None
    translated: bool = False
    answer: dict[str, Any] | None = None


class Forwarder:
    """Owns the attempt loop: choose a worker, send, classify, back off, try another."""

    def __init__(
        self,
        config: ProxyConfig,
        pool: WorkerPool,
        upstream: UpstreamPool,
        metrics: ProxyMetrics,
        recorder: Recorder | None,
        max_in_flight: int,
    ) -> None:
        self._config = config
        self._pool = pool
        self._upstream = upstream
        self._metrics = metrics
        self._recorder = recorder
        self._worker_key = config.worker_api_key
        self._max_in_flight = max_in_flight
        self._in_flight = 0
        self._nesting = NestingBound()

    async def forward(self, exchange: Exchange) -> Forwarded:
        """The worker's answer, or an OpenAI-style error once every allowed attempt failed.

        Workers are tried one after another until one answers or the retries run out. A
        failure the request itself may have caused is charged to its worker only once
        another worker tells: if the next one fails the same way the request is poison, is
        not tried further and counts against no worker.
        """
        admitted = self._admit(exchange)
        if isinstance(admitted, Forwarded):
            return admitted
        exchange, deadline = admitted, admitted.started + self._config.timeouts.total
        headers = upstream_headers(exchange.request.headers)
        tried: list[Worker] = []
        failure: Failure | None = None
        suspect: tuple[Worker, Failure] | None = None
        self._in_flight += 1
        try:
            for attempt in range(self._config.retry.max_retries + 1):
                try:
                    worker = self._next_worker(exchange, tried, suspect)
                except ModelNotServedError as exc:
                    return self._finish(exchange, model_not_found(str(exc)), None)
                if worker is None or time.monotonic() >= deadline:
                    break
                if failure is not None:
                    self._metrics.retries.labels(exchange.info.route, failure.reason).inc()
                    await asyncio.sleep(self._backoff(attempt, failure))
                tried.append(worker)
                exchange.trying(time.monotonic())
                outcome = await self._attempt(exchange, worker, deadline, headers, attempt)
                if not isinstance(outcome, Failure):
                    self._charge(suspect)  # another worker managed: the first one was at fault
                    return outcome
                exchange.trying(None)
                failure = outcome
                log.debug("attempt %d failed: %s", attempt + 1, failure.message)
                if suspect is not None and failure.repeats(suspect[1]):
                    return self._finish(exchange, _poisoned(failure, len(tried)), None)
                suspect = self._blame(worker, failure, suspect)
            self._charge(suspect)
            return self._finish(exchange, self._exhausted(failure, len(tried)), None)
        finally:
            self._in_flight -= 1

    def _admit(self, exchange: Exchange) -> Exchange | Forwarded:
        """The exchange ready to send, or the answer that refuses it."""
        cap = self._config.limits.max_choices
        if cap is not None and (field := choices_over(exchange.payload, cap)) is not None:
            return self._finish(exchange, too_many_choices(field, cap), None)
        if self._in_flight >= self._max_in_flight:
            return self._finish(exchange, overloaded(self._max_in_flight), None)
        capture = self._config.capture
        if capture.tokens and exchange.call is not None:
            route, payload = exchange.info.route, exchange.payload
            exchange.tokens = token_ask(route, payload, exchange.body, capture.token_fields)
        return exchange

    def _next_worker(
        self, exchange: Exchange, tried: list[Worker], suspect: tuple[Worker, Failure] | None
    ) -> Worker | None:
        """The worker for the next attempt; None when none is left."""
        info = exchange.info
        if tried:
            info = replace(info, detour_from=frozenset(w.url for w in tried))
        worker = self._pool.choose(info, tried)
        if worker is None and suspect is not None and tried == [suspect[0]]:
            return suspect[0]  # the only worker: a second try tells poison from a fault
        return worker

    def _blame(
        self, worker: Worker, failure: Failure, suspect: tuple[Worker, Failure] | None
    ) -> tuple[Worker, Failure] | None:
        """Charge what is known to be a worker's fault; the suspect left waiting for a verdict."""
        if not failure.may_be_the_request:
            self._charge((worker, failure))
            return suspect
        self._charge(suspect)  # failed differently from this one: its own fault
        return (worker, failure)

    async def _attempt(
        self,
        exchange: Exchange,
        worker: Worker,
        deadline: float,
        headers: list[tuple[str, str]],
        retries: int,
    ) -> Forwarded | Failure:
        worker.in_flight += 1
        trial = worker.breaker.begin()
        upstream: UpstreamResponse | None = None
        if auth := worker_auth(self._worker_key, worker):
            headers = [*headers, *auth.items()]
        try:
            translation = self._translation(exchange, worker)
            upstream = await self._send(exchange, worker, translation, deadline, headers)
            limit = self._config.max_response_bytes
            if lacks_route(exchange, worker, translation, upstream.status):
                await upstream.read_start(ERROR_BODY_BYTES)
                translation = self._translation(exchange, worker)
                upstream = await self._send(exchange, worker, translation, deadline, headers)
            if retryable(upstream.status):
                if upstream.status in BACKPRESSURE:
                    worker.rejected += 1
                body = await upstream.read_start(ERROR_BODY_BYTES)
                return status_failure(upstream.status, body, upstream.headers, worker.url)
            if translation is not None and (refusal := translation.refused(upstream.status)):
                return self.refuse(exchange, refusal)
            if upstream.status == 200 and upstream.content_type == "text/event-stream":
                # The attempt's deadline holds until the first bytes; then the stream is the
                # client's, never to be retried, and only the total deadline is left.
                first = await upstream.readany()
                if self._config.timeouts.worker is not None:
                    upstream.extend(max(deadline - time.monotonic(), 0.001))
                return await self._stream(exchange, worker, translation, upstream, first, retries)
            if upstream.status >= 400:
                body = await upstream.read_start(ERROR_BODY_BYTES)
            else:
                body = await upstream.read(limit)
            return self._answer(exchange, worker, translation, upstream.status, body, retries)
        except RequestRefused as exc:
            return self.refuse(exchange, exc)
        except ProxyOutOfResources as exc:
            log.error("%s; lower the load or raise the open-files limit", exc)
            return self._finish(exchange, out_of_resources(str(exc)), None)
        except UPSTREAM_ERRORS as exc:
            failure = classify_exception(exc, worker.url)
            if failure.reason == "connect":
                worker.health.mark_down(failure.message)
            return failure
        finally:
            worker.in_flight -= 1
            if upstream is not None:
                upstream.close()
            if trial and worker.breaker.trial_in_flight:
                worker.breaker.end_trial()

    def _translation(self, exchange: Exchange, worker: Worker) -> Translation | None:
        """What `worker` is sent instead of the request, if anything: an attempt call's chat
        translation asks for its tokens when the proxy captures them."""
        translation = translation_for(exchange, worker)
        capture = self._config.capture
        if exchange.call is None or not capture.tokens:
            return translation
        if isinstance(translation, ChatTranslation):
            return TokenTranslation.of(translation, capture.token_fields)
        return translation

    async def _send(
        self,
        exchange: Exchange,
        worker: Worker,
        translation: Translation | None,
        deadline: float,
        headers: list[tuple[str, str]],
    ) -> UpstreamResponse:
        """Post the request, or its translation, to `worker`."""
        timeouts = self._config.timeouts
        idle = timeouts.stream_idle if exchange.info.stream else None
        remaining = max(deadline - time.monotonic(), 0.001)
        if timeouts.worker is not None:
            remaining = min(remaining, timeouts.worker)
        route, body = exchange.info.route, exchange.body
        if exchange.tokens is not None:
            body = exchange.tokens.body
        if translation is not None:
            route, body = translation.route, translation.body
            headers = translated_headers(headers)
        return await self._upstream.post(worker.origin, route, headers, body, remaining, idle)

    async def _stream(
        self,
        exchange: Exchange,
        worker: Worker,
        translation: Translation | None,
        upstream: UpstreamResponse,
        first: bytes,
        retries: int,
    ) -> Forwarded:
        self._succeeded(worker)
        relay: Relay
        # A stream followed is bounded as an answer read whole is: what follows it grows with it.
        limits = self._config.max_event_bytes, self._config.max_response_bytes
        if translation is not None:
            relay = translation.relay(*limits)
        else:
            # A Responses answer is followed to be stored; an attempt's call is assembled
            # from its bytes when its record is taken.
            follow = self._recorder is not None or follows(exchange)
            ending = stream_ending(exchange)
            assembler = assembler_for(exchange) if follow else None
            if exchange.tokens is not None:
                relay = TokenRelay(exchange.tokens, assembler, ending, *limits)
            else:
                relay = Passthrough(assembler, ending, *limits)
            if exchange.call is not None and not follow:
                exchange.call.raw = []
        metrics = self._metrics
        response = await pipe_stream(exchange, upstream, first, worker, metrics, relay, retries)
        if exchange.call is not None:
            if isinstance(relay, TokenRelay):
                exchange.call.tokens = relay.reader.result()
            _read_tokens(exchange, translation)
        answer = relay.answer()
        counted = answer
        if counted is None and isinstance(relay, Passthrough):
            counted = relay.usage_event()  # a stream nobody followed: only its end is parsed
        metrics.count_usage(worker.url, counted)
        if exchange.call is not None:
            exchange.call.usage = counted
        return self._finish(exchange, response, worker, answer, translation is not None)

    def _answer(
        self,
        exchange: Exchange,
        worker: Worker,
        translation: Translation | None,
        status: int,
        body: bytes,
        retries: int,
    ) -> Forwarded:
        self._succeeded(worker)
        if status >= 400:
            body = openai_error_body(status, body)
        answer = None
        if status == 200 and translation is not None:
            try:
                answer = self._translated(translation, body)
            except ValueError as exc:
                message = f"worker {worker.url} sent a malformed answer: {exc}"
                return self._finish(exchange, error_response(502, "upstream_error", message), None)
            body = orjson.dumps(answer)
            _read_tokens(exchange, translation)
        elif status == 200 or self._recorder is not None or exchange.call is not None:
            answer = _json_or_none(body)  # an answer's usage is counted, its worker's cache hits
            if status == 200 and exchange.tokens is not None and exchange.call is not None:
                body, answer, exchange.call.tokens = whole_answer(body, answer, exchange.tokens)
        if status == 200:
            self._metrics.count_usage(worker.url, answer)
        response = web.Response(
            status=status,
            body=body,
            content_type="application/json",
            headers=served_by(worker.url, retries, exchange.waited()),
        )
        return self._finish(exchange, response, worker, answer, translation is not None)

    def _translated(self, translation: Translation, chat: bytes) -> dict[str, Any]:
        """The client's answer for the worker's. Raises: ValueError when malformed."""
        answer = translation.answer(chat)
        if self._nesting.exceeded(answer):
            raise ValueError(f"it nests arrays and objects more than {MAX_NESTING} deep")
        return answer

    def refuse(self, exchange: Exchange, refusal: RequestRefused) -> Forwarded:
        """The answer to a request the proxy cannot serve as sent, counted as the others are."""
        response = error_response(refusal.status, refusal.code, refusal.message, refusal.field)
        if refusal.status >= 500:
            # The request's own, however the status reads: the SDKs would retry it in vain.
            response.headers[SHOULD_RETRY_HEADER] = "false"
        return self._finish(exchange, response, None)

    def _succeeded(self, worker: Worker) -> None:
        # 4xx answers land here too: they are the client's fault and never count against a worker.
        worker.served += 1
        worker.breaker.record_success()

    def _charge(self, blame: tuple[Worker, Failure] | None) -> None:
        """Count a failure against its worker, unless it was no fault of the worker's."""
        if blame is not None and blame[1].counts_against_worker:
            blame[0].record_failure()

    def _backoff(self, attempt: int, failure: Failure) -> float:
        retry = self._config.retry
        capped = min(retry.backoff_max, retry.backoff_base * 2 ** (attempt - 1))
        delay = capped * random.uniform(0.5, 1.0)
        if failure.retry_after is not None:
            delay = max(delay, min(failure.retry_after, retry.backoff_max))
        return delay

    def _exhausted(self, failure: Failure | None, attempts: int) -> web.Response:
        if failure is None:
            return no_healthy_worker(len(self._pool), len(self._pool.healthy()))
        status, code = _EXHAUSTED.get(failure.reason, (504, "upstream_timeout"))
        if failure.status is not None:
            status, code = failure.status, "upstream_error"
        response = error_response(
            status,
            code,
            f"the request failed on {attempts} attempt(s); last: {failure.message}. "
            "Worker states are at GET /workers; retry later.",
        )
        return _passed_on(response, failure, attempts)

    def _finish(
        self,
        exchange: Exchange,
        response: web.StreamResponse,
        worker: Worker | None,
        answer: dict[str, Any] | None = None,
        translated: bool = False,
    ) -> Forwarded:
        elapsed = time.monotonic() - exchange.started
        route = exchange.info.route
        response = in_envelope(route, response)
        if not response.prepared:  # a stream's head, sent already, said it
            response.headers.setdefault(WAITED_HEADER, f"{exchange.waited():g}")
        worker_label = "none"
        if worker is not None:
            worker_label = worker.url
            worker.answered += 1
            worker.answer_seconds += elapsed
        self._metrics.requests.labels(route, str(response.status), worker_label).inc()
        self._metrics.latency.labels(route).observe(elapsed)
        if self._recorder is not None:
            self._record(self._recorder, exchange, response, worker, answer, elapsed)
        if exchange.call is not None:
            exchange.call.finish(response, worker.url if worker else None, answer)
        return Forwarded(response, worker, translated, answer)

    def _record(
        self,
        recorder: Recorder,
        exchange: Exchange,
        response: web.StreamResponse,
        worker: Worker | None,
        answer: dict[str, Any] | None,
        elapsed: float,
    ) -> None:
        """Append the exchange to its session's record. An answer nested deeper than the
        recorder can write is recorded as null: the client had it as it was."""
        if answer is None:
            answer = _json_or_none(_body_of(response))
        if answer is not None and self._nesting.exceeded(answer):
            answer = None
        recorder.record(
            exchange.info.session_key,
            {
                "time": time.time(),
                "session": exchange.info.session_key,
                "route": exchange.info.route,
                "worker": worker.url if worker else None,
                "status": response.status,
                "latency_s": round(elapsed, 6),
                "request": exchange.payload,
                "response": answer,
                "usage": (answer or {}).get("usage"),
            },
        )


def _read_tokens(exchange: Exchange, translation: Translation | None) -> None:
    """Give a translated attempt call the tokens read from its worker's chat answer."""
    if isinstance(translation, TokenTranslation) and exchange.call is not None:
        exchange.call.tokens = translation.tokens()


def _poisoned(failure: Failure, attempts: int) -> web.Response:
    """The answer to a request that failed the same way twice in a row."""
    response = error_response(
        failure.status or 502,
        "request_failed_on_every_worker",
        f"the request failed the same way on {attempts} attempts (last: {failure.message}), "
        "so the request itself is the likely cause: it was not tried again and counts "
        "against no worker. Check the request; worker states are at GET /workers.",
    )
    return _passed_on(response, failure, attempts)


def _passed_on(response: web.Response, failure: Failure, attempts: int) -> web.Response:
    """`response` with the retries taken, naming the worker whose error status it passes on,
    when a worker answered."""
    response.headers[RETRIES_HEADER] = str(attempts - 1)
    if failure.worker is not None:
        response.headers[WORKER_HEADER] = failure.worker
    return response


def _body_of(response: web.StreamResponse) -> bytes:
    body = getattr(response, "body", None)
    return body if isinstance(body, bytes) else b""


def _json_or_none(body: bytes) -> dict[str, Any] | None:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return data if isinstance(data, dict) else None
