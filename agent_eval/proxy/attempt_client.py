"""The proxy's attempts API as the engine calls it: open a key, read its record, end it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import aiohttp

from agent_eval.proxy.admin_client import on_host, proxy_root, url_host
from agent_eval.proxy.capture.attempt import Price


@dataclass(frozen=True)
class OpenedAttempt:
    """A key of the proxy's for one attempt, and where a client sends with it."""

    key: str
    base_url: str
    """The proxy's base URL (`http://HOST:PORT/v1`): send the key as the client's API key."""
    attempt_base_url: str
    """`http://HOST:PORT/a/KEY/v1`: for a client that can set a base URL but no key."""
    expires_at: float


class AttemptClient:
    """Opens and ends attempts on one proxy, with its admin token.

    Every method raises aiohttp.ClientError (ClientResponseError on a non-2xx answer) or
    TimeoutError when the proxy cannot be asked.
    """

    def __init__(self, http: aiohttp.ClientSession, base_url: str, admin_token: str) -> None:
        self._http = http
        self._root = proxy_root(base_url)
        self._headers = {"Authorization": f"Bearer {admin_token}"}
        self._holders: dict[str, str] = {}
        """Key -> the root of the proxy process holding its record, when it is not the proxy's
        own (several processes on one port)."""

    async def open(
        self,
        label: str,
        ttl_s: float | None = None,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        max_cost: float | None = None,
        price: Price | None = None,
    ) -> OpenedAttempt:
        """A new key for the attempt `label` (its session id), with its limits; `max_cost`
        prices its tokens at `price`."""
        body: dict[str, Any] = {"attempt": label, "limits": {}}
        if ttl_s is not None:
            body["ttl_s"] = ttl_s
        limits: dict[str, Any] = {"max_calls": max_calls, "max_tokens": max_tokens}
        limits["max_cost"] = max_cost
        if price is not None:
            limits["price"] = asdict(price)
        body["limits"] = {name: value for name, value in limits.items() if value is not None}
        opened = await self._call("POST", "/attempts", body)
        key = opened["key"]
        # The process holding the record, reached by the host this client reaches the proxy by
        # when it names itself by a wildcard (a proxy listening on 0.0.0.0, engine shards on Ray).
        root = on_host(opened.get("origin", self._root), url_host(self._root))
        if root != self._root:
            self._holders[key] = root
        return OpenedAttempt(
            key, f"{root}/v1", f"{root}{opened['base_path']}/v1", opened["expires_at"]
        )

    async def read(self, key: str) -> dict[str, Any]:
        """The attempt's record so far."""
        return await self._call("GET", f"/attempts/{key}", root=self._holders.get(key))

    async def end(self, key: str) -> dict[str, Any]:
        """End the attempt and take its whole record (its calls in order)."""
        root = self._holders.pop(key, None)
        return await self._call("DELETE", f"/attempts/{key}", root=root)

    async def _call(
        self, method: str, path: str, body: Any = None, root: str | None = None
    ) -> dict[str, Any]:
        url = (root or self._root) + path
        async with self._http.request(method, url, json=body, headers=self._headers) as response:
            response.raise_for_status()
            answer: dict[str, Any] = await response.json()
            return answer
