"""The proxy's worker list as its clients read it: the live view, serve's screen, the run."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

WorkerLoad = list[dict[str, Any]]
"""The proxy's `GET /workers` list: each worker's URL, health and counters."""

LOAD_COUNTERS = ("served", "failures", "prompt_tokens", "cached_tokens")
"""The counters of GET /workers that only grow while the proxy runs."""


def proxy_root(url: str) -> str:
    """The proxy's root URL, where its admin routes are, from its base URL (with or without /v1)."""
    return url.rstrip("/").removesuffix("/v1")


def on_host(url: str, host: str) -> str:
    """`url` with `host` in place of a wildcard address (0.0.0.0 or ::): a proxy listening on
    every interface names its URL by one, which a client cannot connect to elsewhere."""
    parts = urlsplit(url)
    if parts.hostname not in {"0.0.0.0", "::"}:
        return url
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port}"))


def url_host(url: str) -> str:
    """The host of a proxy's URL (which always names its port), an IPv6 one in brackets."""
    return urlsplit(url).netloc.rpartition(":")[0]


async def fetch_workers(http: aiohttp.ClientSession, url: str, api_key: str | None) -> WorkerLoad:
    """The proxy's `GET /workers` list; `url` may end in /v1.

    Raises: aiohttp.ClientError (ClientResponseError on a non-2xx answer), TimeoutError, or
    ValueError/KeyError/TypeError on a body of another shape.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with http.get(f"{proxy_root(url)}/workers", headers=headers) as response:
        response.raise_for_status()
        return list((await response.json())["workers"])


def load_since(before: WorkerLoad, after: WorkerLoad) -> WorkerLoad:
    """Each worker of `after` with its counters less those `before` had: one run's share."""
    earlier = {worker["url"]: worker for worker in before}
    return [_less(worker, earlier.get(worker["url"], {})) for worker in after]


def _less(after: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    counted = dict(after)
    for name in LOAD_COUNTERS:
        if isinstance(after.get(name), int):
            counted[name] = after[name] - (before.get(name) or 0)
    cached, prompt = counted.get("cached_tokens"), counted.get("prompt_tokens")
    if "cache_hit_rate" in counted:
        counted["cache_hit_rate"] = cached / prompt if cached is not None and prompt else None
    return counted
