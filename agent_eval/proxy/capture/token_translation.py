"""Token capture on a call translated to Chat Completions (Messages, Responses): the chat request
asks the worker for its tokens, and its answer or stream is read for them before translation.

Nothing is cut: a translation builds the client's answer anew from the chat fields it knows
(text, tool calls, finish reason, usage), so the members the proxy asked for never reach the
client. A route a worker serves itself is not asked: neither vLLM's nor SGLang's /v1/responses
nor vLLM's /v1/messages documents fields that return token ids (vLLM's `return_token_ids` is
on its chat and completions requests alone), so such a call is recorded without tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_eval.proxy.capture.token_fields import TokenReader, token_ask
from agent_eval.proxy.routes import CHAT_ROUTE
from agent_eval.proxy.upstream.translated import ChatTranslation, EventTranslator
from agent_eval.wire import TokenFields


@dataclass(frozen=True)
class TokenTranslation(ChatTranslation):
    """`inner`'s translation, its chat request asking for tokens, which `reader` gathers from
    the worker's answer or stream on its way to be translated."""

    inner: ChatTranslation = field(kw_only=True)
    reader: TokenReader = field(kw_only=True, default_factory=TokenReader)

    @classmethod
    def of(cls, inner: ChatTranslation, fields: TokenFields) -> TokenTranslation:
        # The chat request is the proxy's own, so nothing in it was asked by the client.
        ask = token_ask(CHAT_ROUTE, {}, inner.body, fields)
        body = inner.body if ask is None else ask.body
        return cls(inner.request, body, inner.answer_id, inner.route, inner=inner)

    def translated(self, chat: dict[str, Any]) -> dict[str, Any]:
        if isinstance(chat, dict):
            self.reader.take(chat)
        return self.inner.translated(chat)

    def translator(self) -> EventTranslator:
        return _ReadingTranslator(self.inner.translator(), self.reader)

    def tokens(self) -> dict[str, Any] | None:
        """The call's tokens as its record keeps them, once its answer was read."""
        return self.reader.result()


class _ReadingTranslator:
    """An event translator whose chat chunks are read for their tokens first."""

    def __init__(self, inner: EventTranslator, reader: TokenReader) -> None:
        self._inner = inner
        self._reader = reader

    def feed(self, payload: dict[str, Any]) -> list[dict[str, Any]]:
        events = self._inner.feed(payload)  # a chunk it refuses is not read either
        self._reader.take(payload)
        return events

    def finish(self) -> list[dict[str, Any]]:
        return self._inner.finish()

    def fail(self, message: str) -> list[dict[str, Any]]:
        return self._inner.fail(message)

    def result(self) -> dict[str, Any] | None:
        return self._inner.result()
