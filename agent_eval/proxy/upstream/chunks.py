"""The shape of a streamed Chat Completions or completions chunk, checked where one is read.

Only the fields the proxy reads are checked, strictly (nothing is coerced, so what passes is
what the worker sent); the rest of a chunk is dropped, except in usage. What passes has the
types the assembler and the Responses translation rely on.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from agent_eval.proxy.upstream.sse import MalformedStream


class FunctionDelta(TypedDict, total=False):
    name: str | None
    arguments: str | None


class ToolCallDelta(TypedDict, total=False):
    index: int
    id: str | None
    function: FunctionDelta | None


class Delta(TypedDict, total=False):
    role: str | None
    content: str | None
    reasoning_content: str | None
    tool_calls: list[ToolCallDelta] | None


class ChoiceChunk(TypedDict, total=False):
    index: int
    delta: Delta | None
    text: str | None
    finish_reason: str | None
    stop_reason: str | int | None
    """vLLM's: the stop string (or token id) that ended the choice."""
    matched_stop: str | int | None
    """SGLang's: the stop string (or token id) that ended the choice."""


@with_config(ConfigDict(extra="allow"))
class TokenDetails(TypedDict, total=False):
    cached_tokens: int | None
    reasoning_tokens: int | None


@with_config(ConfigDict(extra="allow"))
class Usage(TypedDict, total=False):
    prompt_tokens: int | None
    completion_tokens: int | None
    total_tokens: int | None
    prompt_tokens_details: TokenDetails | None
    completion_tokens_details: TokenDetails | None


class Chunk(TypedDict, total=False):
    id: str | None
    object: str | None
    created: int | float | None
    model: str | None
    choices: list[ChoiceChunk] | None
    usage: Usage | None


class NativeResponse(TypedDict, total=False):
    """What is read of the response a native Responses stream completes with."""

    id: str
    status: str


_CHUNK = TypeAdapter(Chunk)
_NATIVE_RESPONSE = TypeAdapter(NativeResponse)


def chat_chunk(payload: dict[str, Any]) -> Chunk:
    """`payload` as a checked chunk.

    Raises: MalformedStream naming the first field of the wrong shape.
    """
    try:
        return _CHUNK.validate_python(payload, strict=True)
    except ValidationError as exc:
        raise MalformedStream(f"a malformed chunk ({_first_error(exc, '')})") from None


def completed_response(response: object) -> dict[str, Any]:
    """The response a native `response.completed` event carries, whole, once checked.

    Raises: MalformedStream naming the first field of the wrong shape.
    """
    if not isinstance(response, dict):
        raise MalformedStream("a malformed response.completed (response: not an object)")
    try:
        _NATIVE_RESPONSE.validate_python(response, strict=True)
    except ValidationError as exc:
        where = _first_error(exc, "response.")
        raise MalformedStream(f"a malformed response.completed ({where})") from None
    return response


def _first_error(exc: ValidationError, prefix: str) -> str:
    """Where the first error is, after `prefix`, and what it is: `choices.0.delta: Input ...`."""
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{prefix}{where}: {error['msg']}" if where else error["msg"]
