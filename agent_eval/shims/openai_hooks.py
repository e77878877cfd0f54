"""Hooks on each request an openai client sends and each answer's head it receives, shared by
its `with_options` copies.

Relies on `openai.AsyncOpenAI._client`, the httpx2 AsyncClient the client sends through (its
`with_options` copies send through the same one), and on that client's `event_hooks` lists
being its own, so a hook appended there runs. openai takes hooks only in an `http_client`
built before the client; a runner gets its client already built. Checked against openai 3.57.0
and httpx2 2.16.2.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2
import openai

ResponseHook = Callable[[httpx2.Response], Awaitable[None]]
RequestHook = Callable[[httpx2.Request], Awaitable[None]]


def add_response_hook(client: openai.AsyncOpenAI, hook: ResponseHook) -> None:
    """Have `hook` see the head of every answer to `client` and its copies; once, however often
    it is added."""
    hooks = client._client.event_hooks["response"]
    if hook not in hooks:
        hooks.append(hook)


def add_request_hook(client: openai.AsyncOpenAI, hook: RequestHook) -> None:
    """Have `hook` see every request `client` and its copies send, before it is sent; once."""
    hooks = client._client.event_hooks["request"]
    if hook not in hooks:
        hooks.append(hook)
