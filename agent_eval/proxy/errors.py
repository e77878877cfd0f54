"""OpenAI-shaped error answers with stable codes; each message says what to do next."""

from __future__ import annotations

import orjson
from aiohttp import web

from agent_eval.proxy.routes import is_anthropic
from agent_eval.wire import SHOULD_RETRY_HEADER

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    417: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    502: "upstream_error",
    503: "service_unavailable",
    504: "timeout_error",
}


# Anthropic's error types by status; others are invalid_request_error below 500, api_error above.
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_body(status: int, code: str, message: str, param: str | None = None) -> bytes:
    """OpenAI's error shape; `param` names the request field at fault, when one is."""
    error = {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "code": code}
    return orjson.dumps({"error": {**error, "param": param}})


def anthropic_error_body(status: int, message: str) -> bytes:
    """Anthropic's error shape, which its SDK reads its error's message from."""
    default = "invalid_request_error" if status < 500 else "api_error"
    error = {"type": ANTHROPIC_ERROR_TYPES.get(status, default), "message": message}
    return orjson.dumps({"type": "error", "error": error})


def in_envelope(route: str, response: web.StreamResponse) -> web.StreamResponse:
    """`response` as clients of `route` read errors: on Anthropic's routes, an error in
    OpenAI's shape (the proxy's own, a worker's reshaped) is put in Anthropic's envelope.

    Every error the proxy answers on a route passes here, so its clients read one shape.
    """
    if response.status < 400 or not is_anthropic(route) or not isinstance(response, web.Response):
        return response
    body = response.body if isinstance(response.body, bytes) else b""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        data = None
    if isinstance(data, dict) and data.get("type") == "error":
        return response  # a native worker's own: Anthropic's shape already
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = message if isinstance(message, str) else f"the proxy answered {response.status}"
    response.body = anthropic_error_body(response.status, text)
    return response


def error_response(
    status: int,
    code: str,
    message: str,
    param: str | None = None,
    retry_after: int | None = None,
) -> web.Response:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return web.Response(
        status=status,
        body=error_body(status, code, message, param),
        content_type="application/json",
        headers=headers,
    )


def invalid_json(detail: str) -> web.Response:
    return error_response(
        400, "invalid_json", f"the request body is not a JSON object ({detail}); send JSON"
    )


def body_too_large(limit: int) -> web.Response:
    return error_response(
        413,
        "body_too_large",
        f"the request body is over the proxy's limit of {limit} bytes; "
        "send less, or start the proxy with a larger --max-body-bytes",
    )


def nesting_too_deep(limit: int) -> web.Response:
    return error_response(
        400,
        "nesting_too_deep",
        f"the request body nests arrays and objects more than {limit} deep, the proxy's "
        "limit; send a flatter body",
    )


def too_many_choices(field: str, cap: int) -> web.Response:
    return error_response(
        400,
        "too_many_choices",
        f"`{field}` asks for more choices than the proxy's cap of {cap} per request; ask for "
        "fewer, or start the proxy with a larger --max-choices",
        param=field,
    )


def body_too_slow(limit: float) -> web.Response:
    response = error_response(
        408,
        "request_timeout",
        f"the request body did not arrive within {limit:g} s; send it faster, or start the "
        "proxy with a larger --client-timeout",
    )
    response.force_close()
    return response


def expectation_failed(expect: str) -> web.Response:
    return error_response(
        417,
        "expectation_failed",
        f"the proxy meets no 'Expect: {expect}'; send 'Expect: 100-continue' or none",
    )


def not_found(path: str) -> web.Response:
    return error_response(
        404,
        "unknown_route",
        f"no route {path}; the proxy serves /v1/chat/completions, /v1/completions, "
        "/v1/responses (and /v1/responses/ID), /v1/messages (and /v1/messages/count_tokens), "
        "/v1/models, /health, /readiness, /metrics, /workers and /attempts (each generation "
        "route and /v1/models also under /a/KEY/)",
    )


def method_not_allowed(method: str, path: str, allowed: list[str]) -> web.Response:
    return error_response(
        405, "method_not_allowed", f"{method} is not allowed on {path}; use {', '.join(allowed)}"
    )


def unauthorized() -> web.Response:
    return error_response(
        401,
        "invalid_api_key",
        "missing or wrong API key: send the proxy's key as 'Authorization: Bearer KEY' "
        "(or as 'x-api-key: KEY' on /v1/messages)",
    )


def admin_unauthorized() -> web.Response:
    return error_response(
        401,
        "invalid_admin_token",
        "adding or removing workers, and opening or ending attempts, takes the proxy's admin "
        "token: send it as "
        "'Authorization: Bearer TOKEN'. `agent-eval serve` prints it at start, and writes "
        "it to RUN_DIR/admin-token when it launches workers, as `agent-eval run` does; "
        "or choose it with --admin-token",
    )


def no_healthy_worker(total: int, healthy: int = 0) -> web.Response:
    if healthy:
        why = (
            f"{healthy} of the {total} workers are healthy but failed requests opened their "
            "circuit breakers; they get a trial request after the cooldown. See GET /workers "
            "and retry"
        )
    else:
        hint = "add one with POST /workers" if total == 0 else "see their state at GET /workers"
        why = f"no worker is healthy ({total} in the pool); {hint} and retry"
    return error_response(503, "no_healthy_worker", f"no worker can take the request: {why}")


def overloaded(limit: int) -> web.Response:
    return error_response(
        429,
        "proxy_overloaded",
        f"the proxy has {limit} requests in flight, its limit; retry after a second, or "
        "start it with a larger --max-in-flight",
        retry_after=1,
    )


def out_of_resources(detail: str) -> web.Response:
    return error_response(503, "proxy_out_of_resources", f"{detail}; retry later", retry_after=1)


def model_not_found(message: str) -> web.Response:
    return error_response(404, "model_not_found", message)


_CLOSED = {
    "ended": "its attempt has ended (DELETE /attempts/KEY took its record)",
    "expired": "its attempt has expired (past the ttl_s it was opened with)",
    "unknown": "no attempt has it (it may have ended or expired long ago)",
    "elsewhere": "no attempt of this proxy process has it (it may have ended or expired long "
    "ago); the proxy runs on several processes and an attempt's calls go to the one holding "
    "its record, at the origin POST /attempts answered",
}


def attempt_closed(state: str) -> web.Response:
    return error_response(
        401,
        "attempt_key_closed",
        f"the attempt key is refused: {_CLOSED.get(state, _CLOSED['unknown'])}; the engine "
        "opens a new key (POST /attempts) for each attempt",
    )


def attempt_limit_exceeded(limit: str) -> web.Response:
    response = error_response(
        429,
        "attempt_limit_exceeded",
        f"this attempt is over its {limit} limit, so its calls are refused; its record says "
        "so. Open the attempt with a larger limit (POST /attempts) or let it use less",
    )
    # Sent again, the call would be refused again: the SDKs honour this and do not retry.
    response.headers[SHOULD_RETRY_HEADER] = "false"
    return response


def too_many_attempts(limit: int) -> web.Response:
    return error_response(
        429,
        "too_many_attempts",
        f"{limit} attempts are open, the proxy's limit; end some (DELETE /attempts/KEY), or "
        "start the proxy with a larger proxy.capture.max_open",
        retry_after=1,
    )


def unknown_attempt() -> web.Response:
    return error_response(
        404,
        "unknown_attempt",
        "no open attempt has this key: it ended (its record was taken) or expired; open "
        "one with POST /attempts",
    )
