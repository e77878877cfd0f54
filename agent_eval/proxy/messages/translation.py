"""One Messages request as the request a worker without the route is sent instead: Chat
Completions for a message, the worker's tokenizer for a count of tokens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agent_eval.proxy.fields import RequestRefused
from agent_eval.proxy.messages.events import StreamTranslator
from agent_eval.proxy.messages.request import to_chat_request
from agent_eval.proxy.messages.response import new_message_id, to_message
from agent_eval.proxy.routes import MISSING_ROUTE_STATUSES, TOKENIZE_ROUTE
from agent_eval.proxy.upstream.streaming import Relay
from agent_eval.proxy.upstream.translated import MALFORMED, ChatTranslation


@dataclass(frozen=True)
class MessagesTranslation(ChatTranslation):
    """A Messages request as Chat Completions; `answer_id` is its message's id."""

    @classmethod
    def of(cls, request: dict[str, Any]) -> MessagesTranslation:
        """Raises: RequestRefused when the request cannot be served as Chat Completions."""
        return cls(request, orjson.dumps(to_chat_request(request)), new_message_id())

    def translated(self, chat: dict[str, Any]) -> dict[str, Any]:
        return to_message(chat, self.request, self.answer_id)

    def translator(self) -> StreamTranslator:
        return StreamTranslator(self.request, self.answer_id)


class CannotCount(RequestRefused):
    """count_tokens on a worker with neither the route nor a tokenizer route."""

    status = 501
    code = "cannot_count_tokens"

    def __init__(self) -> None:
        super().__init__(
            "messages",
            "tokens cannot be counted on this fleet: the worker serves neither "
            "/v1/messages/count_tokens nor a /tokenize route that takes chat messages (SGLang "
            "and vLLM have one; llama.cpp's server here does not). The proxy does not estimate "
            "counts; send the request to /v1/messages and read its usage instead",
        )


@dataclass(frozen=True)
class CountTranslation:
    """A count_tokens request as the chat request the worker's tokenizer takes."""

    request: dict[str, Any]
    body: bytes
    route: str = TOKENIZE_ROUTE

    @classmethod
    def of(cls, request: dict[str, Any]) -> CountTranslation:
        """Raises: RequestRefused when the request has no Chat Completions form."""
        chat = to_chat_request(request, counting=True)
        tokenize = {"model": chat["model"], "messages": chat["messages"]}
        if "tools" in chat:
            tokenize["tools"] = chat["tools"]
        # The prompt the model would read, up to where it starts to answer.
        tokenize["add_generation_prompt"] = True
        return cls(request, orjson.dumps(tokenize))

    def answer(self, tokenized: bytes) -> dict[str, Any]:
        """`{"input_tokens": N}` from the tokenizer's `count`.

        Raises: ValueError when the answer holds no count.
        """
        try:
            count = orjson.loads(tokenized)["count"]
        except MALFORMED as exc:
            raise ValueError(f"not a /tokenize answer ({type(exc).__name__}: {exc})") from exc
        if type(count) is not int or count < 0:
            raise ValueError(f"not a /tokenize answer (count: {count!r})")
        return {"input_tokens": count}

    def relay(self, max_event_bytes: int, max_stream_bytes: int | None = None) -> Relay:
        """Never called: a count is not streamed, and the tokenizer answers JSON."""
        raise ValueError("a count of tokens is not streamed")

    def refused(self, status: int) -> RequestRefused | None:
        """A worker without a tokenizer route cannot count."""
        return CannotCount() if status in MISSING_ROUTE_STATUSES else None
