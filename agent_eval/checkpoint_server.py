"""Workers serving the newest checkpoint: weights swapped in place where the backend can."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path

import aiohttp

from agent_eval.config import RunConfig
from agent_eval.serving import Served, served_model, serving

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
        if served is not None and self.reloadable and await _swap(served, checkpoint):
            # SGLang renames its model after a swap: ask again which name requests use.
            model = await served_model(self.config, served.client)
            self._served = dataclasses.replace(served, model=model)
            return self._served
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


async def _swap(served: Served, path: Path) -> bool:
    """Ask every worker to load `path`; False (and the reason logged) if any could not."""
    body = {"model_path": str(path)}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=1800)) as http:
        for worker in served.workers:
            try:
                async with http.post(worker.url + "/update_weights_from_disk", json=body) as answer:
                    result = await answer.json(content_type=None)
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                log.warning("worker %s could not swap weights (%s); restarting", worker.url, exc)
                return False
            if not result.get("success"):
                log.warning("worker %s refused %s: %s; restarting", worker.url, path,
                            result.get("message"))  # fmt: skip
                return False
    return True
