"""Serve the OpenAI Responses API over workers that only speak Chat Completions."""

from agent_eval.proxy.responses.errors import (
    InvalidType,
    PreviousResponseNotFound,
    RequestRefused,
    UnsupportedField,
)
from agent_eval.proxy.responses.native import NativeFailure
from agent_eval.proxy.responses.request import to_chat_request
from agent_eval.proxy.responses.response import new_response_id, to_response
from agent_eval.proxy.responses.route import ResponsesRoute
from agent_eval.proxy.responses.store import ResponseStore, StoredResponse
from agent_eval.proxy.responses.stream import StreamTranslator, encode_event
from agent_eval.proxy.responses.translation import Translation

__all__ = [
    "InvalidType",
    "NativeFailure",
    "PreviousResponseNotFound",
    "RequestRefused",
    "ResponseStore",
    "ResponsesRoute",
    "StoredResponse",
    "StreamTranslator",
    "Translation",
    "UnsupportedField",
    "encode_event",
    "new_response_id",
    "to_chat_request",
    "to_response",
]
