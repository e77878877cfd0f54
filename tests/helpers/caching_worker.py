"""A fake worker whose usage reports prefix-cache hits, as SGLang and vLLM do when asked to."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import orjson
from aiohttp import web

MODEL = "mock-model"
ANSWER = "Answer: 4"


@dataclass
class CachingWorker:
    """Answers every chat completion with ANSWER and a usage block its fields shape.

    `cached_tokens` None sends usage without `prompt_tokens_details`; `usage` False sends none.
    """

    prompt_tokens: int = 100
    cached_tokens: int | None = 60
    usage: bool = True
    fail_next: int = 0
    """The next N generation requests answer 503."""
    served: int = 0
    """Generation requests answered 200."""
    _runner: web.AppRunner | None = field(default=None, repr=False)
    url: str = ""

    async def __aenter__(self) -> CachingWorker:
        app = web.Application()
        app.router.add_get("/health", _ok)
        app.router.add_get("/v1/models", _models)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def usage_block(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": 3,
            "total_tokens": self.prompt_tokens + 3,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        return usage

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        if self.fail_next > 0:
            self.fail_next -= 1
            return web.json_response({"object": "error", "message": "busy"}, status=503)
        body = await request.json()
        self.served += 1
        if body.get("stream"):
            return await self._stream(request, body)
        message = {"role": "assistant", "content": ANSWER}
        answer = _envelope(
            "chat.completion", [{"index": 0, "message": message, "finish_reason": "stop"}]
        )
        if self.usage:
            answer["usage"] = self.usage_block()
        return web.json_response(answer)

    async def _stream(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        deltas = [({"role": "assistant", "content": ""}, None), ({"content": ANSWER}, None)]
        for delta, finish in [*deltas, ({}, "stop")]:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            await response.write(_event(_envelope("chat.completion.chunk", [choice])))
        if self.usage and (body.get("stream_options") or {}).get("include_usage"):
            final = {**_envelope("chat.completion.chunk", []), "usage": self.usage_block()}
            await response.write(_event(final))
        await response.write_eof(b"data: [DONE]\n\n")
        return response


def _envelope(kind: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": kind, "created": 1, "model": MODEL, "choices": choices}


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
