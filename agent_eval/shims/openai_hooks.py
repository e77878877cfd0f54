"""A hook on each answer's head an openai client receives, shared by its `with_options` copies.

Relies on `openai.AsyncOpenAI._client`, the httpx2 AsyncClient the client sends through (its
`with_options` copies send through the same one), and on that client's `event_hooks["response"]`
being its own list, so a hook appended there runs. openai takes hooks only in an `http_client`
built before the client; a runner gets its client already built. Checked against openai 3.57.0
and httpx2 2.16.2.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2
import openai

ResponseHook = Callable[[httpx2.Response], Awaitable[None]]


def add_response_hook(client: openai.AsyncOpenAI, hook: ResponseHook) -> None:
    """Have `hook` see the head of every answer to `client` and its copies; once, however often
    it is added."""
    hooks = client._client.event_hooks["response"]
    if hook not in hooks:
        hooks.append(hook)
