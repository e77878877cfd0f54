"""Between proxy and worker: headers kept, failures classified, errors reshaped."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from multidict import CIMultiDictProxy
from pydantic import SecretStr

from agent_eval.proxy.errors import error_body
from agent_eval.proxy.http1 import UpstreamConnectError

WORKER_HEADER = "X-Agent-Eval-Worker"
RETRYABLE_STATUSES = frozenset({429, 502, 503, 504})

# Hop-by-hop headers, and those the proxy sets itself. Client keys never reach a worker:
# the proxy sends its own worker key.
_DROPPED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "authorization",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "accept-encoding",
    }
)

# Every upstream failure is an OSError: connect errors, disconnects and timeouts alike.
UPSTREAM_ERRORS = (OSError,)


def worker_auth(key: SecretStr | None) -> dict[str, str]:
    """The Authorization header the proxy sends workers of its own accord (probes, lookups)."""
    return {"Authorization": f"Bearer {key.get_secret_value()}"} if key else {}


def upstream_headers(
    client: CIMultiDictProxy[str], worker_key: str | None
) -> list[tuple[str, str]]:
    headers = [(k, v) for k, v in client.items() if k.lower() not in _DROPPED_REQUEST_HEADERS]
    if worker_key:
        headers.append(("Authorization", f"Bearer {worker_key}"))
    return headers


@dataclass(frozen=True)
class Failure:
    """Why one attempt on one worker failed, in words a client can act on."""

    reason: str
    message: str
    status: int | None = None
    retry_after: float | None = None

    @property
    def counts_against_worker(self) -> bool:
        """A 429 is backpressure, not a fault of the worker."""
        return self.status != 429


def classify_exception(exc: OSError, worker_url: str) -> Failure:
    """Name what went wrong with a worker, for the client and the retry decision."""
    if isinstance(exc, UpstreamConnectError):
        return Failure("connect", f"worker {worker_url}: {exc}")
    if isinstance(exc, TimeoutError):
        return Failure("timeout", f"worker {worker_url} did not answer in time")
    return Failure("disconnect", f"worker {worker_url} dropped the connection ({exc})")


def status_failure(status: int, body: bytes, headers: dict[str, str], url: str) -> Failure:
    return Failure(
        "status",
        f"worker {url} answered {status}: {upstream_message(body)}",
        status=status,
        retry_after=_seconds(headers.get("retry-after")),
    )


def upstream_message(body: bytes) -> str:
    """The message inside an OpenAI or SGLang error body, else the body's first line."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return (
            body.decode(errors="replace").strip().splitlines()[0][:300]
            if body.strip()
            else "no body"
        )
    if isinstance(data, dict):
        inner = data.get("error")
        if isinstance(inner, dict) and "message" in inner:
            return str(inner["message"])
        if "message" in data:
            return str(data["message"])
    return str(data)[:300]


def openai_error_body(status: int, body: bytes) -> bytes:
    """A worker's error in OpenAI's shape; a body already in it is kept as it is."""
    try:
        data = orjson.loads(body)
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            return body
    except orjson.JSONDecodeError:
        pass
    return error_body(status, "upstream_error", upstream_message(body))


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None
