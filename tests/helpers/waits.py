"""Waits on conditions set by another task or process, each with a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], timeout: float = 10.0, why: Callable[[], str] = str
) -> None:
    """Wait for a condition set by another task or process; fail after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if result if isinstance(result, bool) else await result:
            return
        if loop.time() > deadline:
            raise AssertionError(why() or "condition never held")
        await asyncio.sleep(0.02)


async def until(
    condition: Callable[[dict[str, Any]], bool], base_url: str, path: str, timeout: float = 10.0
) -> dict[str, Any]:
    """Poll a proxy JSON route until `condition` holds on its body; fail after `timeout`."""
    root = base_url.removesuffix("/v1")
    last: dict[str, Any] = {}

    async def check() -> bool:
        nonlocal last
        async with aiohttp.ClientSession() as session, session.get(root + path) as response:
            last = await response.json()
        return condition(last)

    await eventually(check, timeout, lambda: f"{path} never met the condition; last: {last}")
    return last


async def wait_ready(base_url: str, healthy: int, timeout: float = 10.0) -> None:
    """Wait until /readiness counts `healthy` healthy workers."""
    await until(
        lambda status: status.get("healthy_workers", 0) >= healthy, base_url, "/readiness", timeout
    )
