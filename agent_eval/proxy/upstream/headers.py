"""The headers of a request on its way to a worker, and of its answer on the way back."""

from __future__ import annotations

from multidict import CIMultiDictProxy
from pydantic import SecretStr

from agent_eval.proxy.fleet.worker import Worker
from agent_eval.wire import RETRIES_HEADER, WAITED_HEADER, WORKER_HEADER

# Hop-by-hop headers, those the proxy sets itself, and those that describe the body as the
# client sent it: the proxy forwards the decoded body, so `Content-Encoding: gzip` over plain
# bytes would make every worker fail the request. Client keys never reach a worker, nor
# attempt keys: the proxy sends its own worker key (`x-api-key` is Anthropic's place for both).
_DROPPED_REQUEST_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-encoding",
        "authorization",
        "x-api-key",
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


def served_by(worker_url: str, retries: int, waited: float) -> dict[str, str]:
    """The headers that name the worker that answered, the retries it took to reach it and
    the seconds the request waited before."""
    return {WORKER_HEADER: worker_url, RETRIES_HEADER: str(retries), WAITED_HEADER: f"{waited:g}"}


def bearer(key: SecretStr | None) -> dict[str, str]:
    """The Authorization header that carries `key`; none without a key."""
    return {} if key is None else {"Authorization": f"Bearer {key.get_secret_value()}"}


def worker_auth(key: SecretStr | None, worker: Worker | None) -> dict[str, str]:
    """The Authorization header for `worker`: only workers the operator gave the key get it."""
    if worker is None or not worker.takes_key:
        return {}
    return bearer(key)


# Headers of one API's dialect, which a worker sent the request translated does not speak.
_DIALECT_HEADERS = ("anthropic-version", "anthropic-beta")


def translated_headers(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`headers` for a worker that gets the request translated: the dialect's own left out."""
    return [(k, v) for k, v in headers if k.lower() not in _DIALECT_HEADERS]


def upstream_headers(client: CIMultiDictProxy[str]) -> list[tuple[str, str]]:
    """The client's headers a worker may see: end-to-end ones about the request itself."""
    dropped = _DROPPED_REQUEST_HEADERS
    if "Connection" in client:
        # A client may name more hop-by-hop headers in `Connection` (RFC 9110, 7.6.1).
        named = (t.strip().lower() for v in client.getall("Connection") for t in v.split(","))
        dropped = dropped.union(named)
    return [(k, v) for k, v in client.items() if k.lower() not in dropped]
