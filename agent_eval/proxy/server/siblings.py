"""A request one process of a group passes on to the others, each answering for itself."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from agent_eval.proxy.server.group import LOCAL_HEADER
from agent_eval.proxy.server.keys import GROUP, SESSION

SIBLING_TIMEOUT = aiohttp.ClientTimeout(total=30)


@dataclass(frozen=True)
class SiblingAnswer:
    """What one other process answered; status None when it could not be reached."""

    member: int
    status: int | None
    body: Any
    error: str | None = None


def relayed(request: web.Request) -> bool:
    """Whether this request needs no passing on: no group, or a sibling sent it."""
    return request.app.get(GROUP) is None or LOCAL_HEADER in request.headers


async def ask_siblings(request: web.Request) -> list[SiblingAnswer]:
    """The same request (method, path, query, body, Authorization) made to every other process."""
    group = request.app[GROUP]
    body = await request.read()
    headers = {LOCAL_HEADER: "1"}
    if "Authorization" in request.headers:
        headers["Authorization"] = request.headers["Authorization"]
    asks = [
        _ask(request.app[SESSION], member, origin + request.path_qs, request.method, headers, body)
        for member, origin in sorted(group.siblings().items())
    ]
    return list(await asyncio.gather(*asks))


async def _ask(
    session: aiohttp.ClientSession,
    member: int,
    url: str,
    method: str,
    headers: dict[str, str],
    body: bytes,
) -> SiblingAnswer:
    try:
        async with session.request(
            method, url, data=body or None, headers=headers, timeout=SIBLING_TIMEOUT
        ) as answer:
            return SiblingAnswer(member, answer.status, orjson.loads(await answer.read()))
    except (aiohttp.ClientError, TimeoutError, orjson.JSONDecodeError) as exc:
        return SiblingAnswer(member, None, None, f"{type(exc).__name__} {exc}".strip())
