"""One Responses request as the Chat Completions request a worker is sent instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agent_eval.proxy.fields import InvalidType
from agent_eval.proxy.responses.errors import PreviousResponseNotFound
from agent_eval.proxy.responses.events import StreamTranslator
from agent_eval.proxy.responses.request import to_chat_request
from agent_eval.proxy.responses.response import new_response_id, to_response
from agent_eval.proxy.routes import CHAT_ROUTE
from agent_eval.proxy.upstream.translated import TranslatedRelay


@dataclass(frozen=True)
class Translation:
    """The Responses `request`, the chat `body` sent for it and the id its answer gets."""

    request: dict[str, Any]
    body: bytes
    response_id: str
    route: str = CHAT_ROUTE

    @classmethod
    def of(cls, request: dict[str, Any]) -> Translation:
        """Raises: RequestRefused when the request cannot be served as Chat Completions."""
        previous = request.get("previous_response_id")
        if isinstance(previous, str):
            # The route puts stored conversations in `input`; an id left here is unknown.
            raise PreviousResponseNotFound(previous)
        if previous is not None:
            raise InvalidType("previous_response_id", "a string", previous)
        return cls(request, orjson.dumps(to_chat_request(request)), new_response_id())

    def answer(self, chat: bytes) -> dict[str, Any]:
        """The Responses object for the worker's Chat Completions answer.

        Raises: ValueError when `chat` is not a Chat Completions answer.
        """
        try:
            return to_response(orjson.loads(chat), self.request, self.response_id)
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, AttributeError) as exc:
            what = f"{type(exc).__name__}: {exc}"
            raise ValueError(f"not a Chat Completions answer ({what})") from exc

    def relay(self, max_event_bytes: int, max_stream_bytes: int | None = None) -> TranslatedRelay:
        """A relay turning the worker's chat stream into this response's events."""
        translator = StreamTranslator(self.request, self.response_id)
        return TranslatedRelay(translator, max_event_bytes, max_stream_bytes)

    def refused(self, status: int) -> None:
        """Every worker error is passed on as it is: a chat worker's errors are the client's."""
        return None
