"""A model's answer decoded into calls as BFCL's OpenAI handler's `decode_ast` decodes it: the
arguments JSON of each tool call (fc), or the answer's text parsed as calls (prompt).

BFCL's handler module itself imports its base handler (and with it its file locks, multi-turn
backends and an OpenAI client made at construction); the fc decoding is this one loop.
"""

from __future__ import annotations

import json
from typing import Any

from agent_eval.shims.bfcl_checker import bfcl_module

_handler_utils = bfcl_module("model_handler.utils")

Calls = list[dict[str, Any]]
"""[{function name: {parameter: value}}], the shape BFCL's checkers read."""


def decode_calls(mode: str, result: Any, return_format: Any) -> Calls | None:
    """The calls of a kept answer (`single_turn.ModelResult`); None where BFCL's JavaScript
    decoder gives None (BFCL then counts the output as in the wrong format).

    Raises: ValueError (or TypeError, SyntaxError ...) when the answer holds no decodable calls,
    as BFCL's decoder raises: BFCL counts any exception as a failed decoding.
    """
    if mode == "prompt":
        if not isinstance(result, str):
            raise ValueError(f"no answer text to decode: {result!r}")
        decoded: Calls | None = _handler_utils.default_decode_ast_prompting(result, return_format)
        return decoded
    if not isinstance(result, list):
        raise ValueError(f"no tool calls: the model answered {result!r}")
    return [_decoded(call) for call in result]


def _decoded(call: dict[str, str]) -> dict[str, Any]:
    name = next(iter(call))
    return {name: json.loads(call[name])}
