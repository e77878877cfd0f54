"""Attempt calls through a proxy with `capture.tokens` on or off, over a fresh mock worker that
speaks a token dialect: the bytes the client read, the attempt's record, what the worker got."""

from __future__ import annotations

from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.replies import Reply
from agent_eval.testing.worker_state import Behavior
from agent_eval.wire import TokenFields
from tests.helpers.attempts import ADMIN_TOKEN, attempt_client
from tests.helpers.proxy import proxy_starter

CREATED = 1_700_000_000
"""The mock's stamp on every answer, so two plays answer alike."""


@dataclass(frozen=True)
class Played:
    """What one play gave: each reply's bytes as the client read them, the attempt's record,
    the worker that answered."""

    read: list[bytes]
    record: dict[str, Any]
    worker: MockWorker


async def play(
    fields: TokenFields,
    tokens: bool,
    route: str,
    body: dict[str, Any],
    replies: list[Reply],
    responses_api: bool = True,
) -> Played:
    """Send `body` on `route` once per reply, as one attempt, through a proxy over a fresh
    mock worker answering in `fields` (numbered from 0, stamped alike)."""
    async with AsyncExitStack() as stack:
        behavior = Behavior(created=CREATED, stream_chunks=3)
        worker = MockWorker(
            "w", behavior=behavior, token_fields=fields, responses_api=responses_api
        )
        await stack.enter_async_context(worker)
        capture = {"tokens": tokens, "token_fields": fields}
        base_url = await proxy_starter(stack)([worker], admin_token=ADMIN_TOKEN, capture=capture)
        worker.script(*replies)
        async with attempt_client(base_url) as attempts, aiohttp.ClientSession() as http:
            opened = await attempts.open("tokens")
            url = opened.attempt_base_url + route.removeprefix("/v1")
            read = []
            for _ in replies:
                async with http.post(url, data=orjson.dumps(body)) as response:
                    assert response.status == 200, await response.text()
                    read.append(await response.read())
            record = await attempts.end(opened.key)
        return Played(read, record, worker)
