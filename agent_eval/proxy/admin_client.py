"""The proxy's worker list as its clients read it: the live view, serve's screen, the run."""

from __future__ import annotations

from typing import Any

import aiohttp


def proxy_root(url: str) -> str:
    """The proxy's root URL, where its admin routes are, from its base URL (with or without /v1)."""
    return url.rstrip("/").removesuffix("/v1")


async def fetch_workers(
    http: aiohttp.ClientSession, url: str, api_key: str | None
) -> list[dict[str, Any]]:
    """The proxy's `GET /workers` list; `url` may end in /v1.

    Raises: aiohttp.ClientError (ClientResponseError on a non-2xx answer), TimeoutError, or
    ValueError/KeyError/TypeError on a body of another shape.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with http.get(f"{proxy_root(url)}/workers", headers=headers) as response:
        response.raise_for_status()
        return list((await response.json())["workers"])
