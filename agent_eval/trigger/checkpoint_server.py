"""Workers serving the newest checkpoint: weights swapped in place where the backend can."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

import aiohttp
from pydantic import SecretStr

from agent_eval.proxy.upstream.headers import bearer
from agent_eval.run.config import RunConfig
from agent_eval.run.serving import Served, serving

log = logging.getLogger(__name__)


class CheckpointServer:
    """Workers serving the newest checkpoint: weights swapped in place where the backend can."""

    def __init__(
        self,
        config: RunConfig,
        on_wait: Callable[[str], None],
        on_proxy: Callable[[str | None, str | None], None],
    ) -> None:
        """`on_proxy` hears of each new proxy (base URL and key) and of its end (None)."""
        self.config, self.on_wait, self.on_proxy = config, on_wait, on_proxy
        self.reloadable = config.backend().reloads_weights
        self._stack: contextlib.AsyncExitStack | None = None
        self._served: Served | None = None

    async def __aenter__(self) -> CheckpointServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._close()

    async def load(self, checkpoint: Path) -> Served:
        """Workers with the weights of the checkpoint at `checkpoint`, swapped in or restarted."""
        served = self._served
        key = self.config.proxy.worker_api_key
        if served is not None and self.reloadable and await _swap(served, checkpoint, key):
            # SGLang now lists the checkpoint's path as its model but answers to any name, and
            # the proxy routes by the names a worker listed before: requests keep their name.
            return served
        await self._close()
        self.on_wait(f"starting workers on {checkpoint.name}")
        config = self.config.model_copy(deep=True)
        config.model.path = str(checkpoint)
        self._stack = contextlib.AsyncExitStack()
        self._served = await self._stack.enter_async_context(serving(config, self.on_wait))
        self.on_proxy(self._served.base_url, self._served.api_key)
        return self._served

    async def _close(self) -> None:
        stack, self._stack, self._served = self._stack, None, None
        if stack is not None:
            self.on_proxy(None, None)
            await stack.aclose()


async def _swap(served: Served, path: Path, key: SecretStr | None) -> bool:
    """Ask each worker, with the worker key, to load `path`; False (reason logged) if one fails."""
    body = {"model_path": str(path)}
    timeout = aiohttp.ClientTimeout(total=1800)
    async with aiohttp.ClientSession(timeout=timeout, headers=bearer(key)) as http:
        for worker in served.workers:
            if refusal := await _load(http, worker.url, body):
                log.warning("worker %s did not load %s (%s); restarting", worker.url, path, refusal)
                return False
    return True


async def _load(http: aiohttp.ClientSession, url: str, body: dict[str, str]) -> str | None:
    """Why the worker at `url` did not load the weights `body` names; None once it has."""
    try:
        async with http.post(url + "/update_weights_from_disk", json=body) as answer:
            result = await answer.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
        return f"{type(exc).__name__} {exc}".strip()
    if not isinstance(result, dict):
        return f"status {answer.status}"
    if result.get("success"):
        return None
    # SGLang says why in `message`; its API-key check answers `error: Unauthorized`.
    return f"status {answer.status}: {result.get('message') or result.get('error')}"
