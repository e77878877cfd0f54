"""Serve the OpenAI Responses API over workers that only speak Chat Completions."""

from agent_eval.proxy.responses.errors import UnsupportedField
from agent_eval.proxy.responses.request import to_chat_request
from agent_eval.proxy.responses.response import new_response_id, to_response
from agent_eval.proxy.responses.stream import StreamTranslator, encode_event

__all__ = [
    "StreamTranslator",
    "UnsupportedField",
    "encode_event",
    "new_response_id",
    "to_chat_request",
    "to_response",
]
