"""Attempts on a test proxy: its admin token, an attempt client, and keyed OpenAI clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp

from agent_eval.proxy.attempt_client import AttemptClient

ADMIN_TOKEN = "test-admin-token"
"""The admin token the capture tests start their proxies with."""


@asynccontextmanager
async def attempt_client(base_url: str) -> AsyncIterator[AttemptClient]:
    """An attempt client of the proxy at `base_url`, with the tests' admin token."""
    async with aiohttp.ClientSession() as http:
        yield AttemptClient(http, base_url, ADMIN_TOKEN)
