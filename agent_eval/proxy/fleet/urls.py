"""Worker URLs: one spelling per worker, checked before it joins the pool."""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from agent_eval.errors import ConfigError
from agent_eval.system.credentials import WORKER_API_KEY

# RFC 3986 path characters (unreserved, sub-delims, ':', '@', '/', percent escapes).
_PATH = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")


def normalize_worker_url(url: str) -> str:
    """`scheme://host:port[/prefix]` without a trailing `/` or `/v1`; ConfigError if not a URL."""
    text = url.strip()
    parts = urlsplit(text)
    _refuse_userinfo(parts)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"worker URL {url!r} is not an http(s) URL: write it like http://127.0.0.1:30000"
        )
    try:
        parts.port  # noqa: B018 - raises on a port out of range or not a number
    except ValueError:
        raise ConfigError(
            f"worker URL {url!r} has a bad port: use a number from 1 to 65535"
        ) from None
    path = parts.path.rstrip("/")
    if not _PATH.fullmatch(path):
        raise ConfigError(f"worker URL {url!r} has characters a URL path cannot hold as they are")
    path = path.removesuffix("/v1")
    return f"{parts.scheme}://{parts.netloc}{path}"


def _refuse_userinfo(parts: SplitResult) -> None:
    """A user name or password in a worker URL would show wherever the URL does: refused."""
    if "@" not in parts.netloc:
        return
    # The message shows the URL without what it refuses: a password is never echoed.
    bare = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    raise ConfigError(
        f"the worker URL for {bare} holds a user name or password, which would show on "
        "/metrics, in every answer's X-Agent-Eval-Worker header and in workers.json: "
        f"give the URL without them, as {bare}, and the worker's key with --worker-api-key or "
        f"the {WORKER_API_KEY} environment variable (a worker added with POST /workers "
        'then takes it with "worker_key": true)'
    )


def check_health_path(path: str) -> None:
    """Raises ConfigError unless `path` is a plain path on the worker, like /health."""
    if not (path.startswith("/") and not path.startswith("//") and _PATH.fullmatch(path)):
        raise ConfigError(
            f"health path {path!r} must be a path on the worker such as /health or /v1/models: "
            "starting with one '/', without spaces, a query or another host"
        )
