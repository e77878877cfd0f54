"""One model answer's calls, decoded as BFCL's OpenAI handler decodes them for execution."""

from __future__ import annotations

from typing import Any, Literal

from agent_eval.benchmarks.bfcl.multi_turn.guard import safe_prompt_answer
from agent_eval.benchmarks.bfcl.multi_turn.package import executor, handler_utils

Mode = Literal["fc", "prompt"]
"""fc: the functions as tools, calls as tool calls; prompt: both in text, as BFCL prompts."""
MODES: tuple[Mode, ...] = ("fc", "prompt")


def decode_step(response: Any, mode: Mode) -> list[str] | None:
    """The answer's calls as executable text; None when BFCL's decoder fails or finds none,
    which ends the turn in BFCL's play and leaves the step out of its check."""
    try:
        calls = _decoded(response, mode)
    except Exception:  # BFCL's decoders raise whatever their parsing raised: a failed decode
        return None
    if calls is None or executor().is_empty_execute_response(calls):
        return None
    return list(calls)


def _decoded(response: Any, mode: Mode) -> list[str] | None:
    utils = handler_utils()
    if mode == "fc":
        calls: list[str] = utils.convert_to_function_call(response)
        return calls
    if not isinstance(response, str) or not safe_prompt_answer(response):
        return None
    decoded: list[str] = utils.default_decode_execute_prompting(response)
    return decoded
