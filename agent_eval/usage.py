"""How a worker's answer reports its tokens: the prompt, and the share served from cache."""

from __future__ import annotations

from typing import Any


def reported_tokens(usage: Any) -> tuple[int, int | None] | None:
    """(prompt tokens, cached prompt tokens) of a usage block; None when it holds no prompt count.

    Chat Completions and completions (SGLang, vLLM) say `prompt_tokens_details.cached_tokens`,
    the Responses API `input_tokens_details.cached_tokens`; the cached count is None when the
    worker did not report it (SGLang and vLLM report it only when launched to).
    """
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
    if prompt is None:
        return None
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    return prompt, _count(details.get("cached_tokens")) if isinstance(details, dict) else None


def _count(value: Any) -> int | None:
    """A worker's figure when it is a token count, else None: a worker's answer is not trusted."""
    return value if type(value) is int and value >= 0 else None
