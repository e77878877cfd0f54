"""The llama.cpp worker program: llama-cpp-python's server with `chatml-tools` and OpenAI messages.

Run as `python -m agent_eval.backends.llamacpp_server` with llama-cpp-python's server flags.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, cast

import orjson
import uvicorn
from llama_cpp.llama_chat_format import (
    LlamaChatCompletionHandler,
    LlamaChatCompletionHandlerRegistry,
)
from llama_cpp.server.app import create_app
from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

from agent_eval.backends.llamacpp import FRESH_PROMPTS
from agent_eval.backends.llamacpp_chat import FORMAT_NAME, chatml_tools
from agent_eval.backends.llamacpp_fields import CHAT_PATH, COMPLETIONS_PATH, TokenFields, wanted
from agent_eval.backends.llamacpp_tokens import recording, stop_logprobs, watch
from agent_eval.shims.llama_generations import edit_completions, watch_generations
from agent_eval.system.credentials import WORKER_API_KEY

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
log = logging.getLogger(__name__)
HEALTH_PATH = "/health"


def fit_messages(body: bytes) -> bytes:
    """OpenAI clients' chat messages in the shapes llama-cpp-python's request model accepts.

    The Agents SDK sends `content: null` beside tool calls and newer clients send the
    `developer` role; the server's request model rejects both with a 500.
    """
    try:
        request = orjson.loads(body)
        messages = request["messages"]
    except (orjson.JSONDecodeError, TypeError, KeyError):
        return body  # the server's own validation answers malformed requests
    if not isinstance(messages, list):
        return body
    for message in messages:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "developer":
            message["role"] = "system"
        if message.get("role") == "assistant" and message.get("content") is None:
            message.pop("content", None)
    return orjson.dumps(request)


class OpenAIMessages:
    """ASGI middleware: chat requests pass through `fit_messages`, requests for their tokens
    get them (llamacpp_fields); `/health` answers at once.

    The server runs one generation at a time and its own routes wait for it, so a probe of
    `/v1/models` would time out on a worker that is merely busy.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == HEALTH_PATH:
            await _healthy(send)
            return
        path = scope["path"] if scope["type"] == "http" and scope["method"] == "POST" else None
        if path not in (CHAT_PATH, COMPLETIONS_PATH):
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        body = fit_messages(body) if path == CHAT_PATH else body
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        receive = _replaying(body, receive)
        asked = wanted(body, path)
        if asked is None:
            await self.app(scope, receive, send)
            return
        with recording(asked) as tokens:
            await self.app(scope, receive, TokenFields(send, tokens, path) if asked.ids else send)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the request's (fitted) body, then waits as the client's does."""
    given = False

    async def receive_fitted() -> MutableMapping[str, Any]:
        nonlocal given
        if given:
            return await receive()  # later calls only wait for the client to leave
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive_fitted


async def _healthy(send: Send) -> None:
    body = b'{"status":"ok"}'
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description="agent-eval's llama.cpp worker")
    add_args_from_model(parser, Settings)
    parser.add_argument(
        FRESH_PROMPTS,
        action="store_true",
        help="Read each chat prompt whole, never finished from an earlier request's cache.",
    )
    args = parser.parse_args()
    # llama-cpp-python annotates these as returning the class; they return an instance.
    server = cast(ServerSettings, parse_model_from_args(ServerSettings, args))
    # From the environment, not --api_key: an argument is visible to every user in `ps`.
    server.api_key = os.environ.get(WORKER_API_KEY) or server.api_key
    model = cast(ModelSettings, parse_model_from_args(ModelSettings, args))
    logging.basicConfig(level=logging.INFO, format="%(levelname)s:     %(message)s")
    # In the worker's log: what its sums depend on besides the model (rollout.reproducible).
    log.info(
        "%s with %d thread(s), %d for prompts, one request at a time, %s",
        model.model_alias or model.model, model.n_threads, model.n_threads_batch,
        "each prompt read whole" if args.fresh_prompts else "prompts finished from the cache",
    )  # fmt: skip
    # The handler Protocol names llama-cpp-python's TypedDicts; ours reads the same plain dicts.
    handler = cast(
        LlamaChatCompletionHandler, functools.partial(chatml_tools, fresh=args.fresh_prompts)
    )
    LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        FORMAT_NAME, handler, overwrite=True
    )
    watch_generations(watch)
    edit_completions(stop_logprobs)
    app = OpenAIMessages(create_app(server_settings=server, model_settings=[model]))
    uvicorn.run(app, host=server.host, port=server.port)


if __name__ == "__main__":
    main()
