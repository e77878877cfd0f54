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
from agent_eval.proxy.upstream.translated import ChatTranslation


@dataclass(frozen=True)
class Translation(ChatTranslation):
    """A Responses request as Chat Completions; `answer_id` is its response's id."""

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

    def translated(self, chat: dict[str, Any]) -> dict[str, Any]:
        return to_response(chat, self.request, self.answer_id)

    def translator(self) -> StreamTranslator:
        return StreamTranslator(self.request, self.answer_id)
