"""Worker URLs: one spelling per worker, checked before it joins the pool."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from agent_eval.errors import ConfigError

# RFC 3986 path characters (unreserved, sub-delims, ':', '@', '/', percent escapes).
_PATH = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@%/-]*")


def normalize_worker_url(url: str) -> str:
    """`scheme://host:port[/prefix]` without a trailing `/` or `/v1`; ConfigError if not a URL."""
    text = url.strip()
    parts = urlsplit(text)
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


def check_health_path(path: str) -> None:
    """Raises ConfigError unless `path` is a plain path on the worker, like /health."""
    if not (path.startswith("/") and not path.startswith("//") and _PATH.fullmatch(path)):
        raise ConfigError(
            f"health path {path!r} must be a path on the worker such as /health or /v1/models: "
            "starting with one '/', without spaces, a query or another host"
        )
