"""How a worker's answer reports its tokens: the prompt, and the share served from cache."""

from __future__ import annotations

from typing import Any


def reported_tokens(usage: Any) -> tuple[int, int | None] | None:
    """(prompt tokens, cached prompt tokens) of a usage block; None when it holds no prompt count.

    Chat Completions and completions (SGLang, vLLM) say `prompt_tokens_details.cached_tokens`,
    the Responses API `input_tokens_details.cached_tokens`, the Messages API
    `cache_read_input_tokens` beside input tokens that leave them out; the cached count is None
    when the worker did not report it (SGLang and vLLM report it only when launched to).
    """
    if not isinstance(usage, dict):
        return None
    if "cache_read_input_tokens" in usage:
        return _anthropic_tokens(usage)
    prompt = _count(usage.get("prompt_tokens", usage.get("input_tokens")))
    if prompt is None:
        return None
    details = usage.get("prompt_tokens_details") or usage.get("input_tokens_details")
    return prompt, _count(details.get("cached_tokens")) if isinstance(details, dict) else None


def _count(value: Any) -> int | None:
    """A worker's figure when it is a token count, else None: a worker's answer is not trusted."""
    return value if type(value) is int and value >= 0 else None


def _anthropic_tokens(usage: dict[str, Any]) -> tuple[int, int | None] | None:
    """(prompt, cached) of Messages API usage, whose input tokens exclude the cache's."""
    counts = [_count(usage.get(key)) for key in ("input_tokens", "cache_read_input_tokens")]
    written = _count(usage.get("cache_creation_input_tokens")) or 0
    uncached, cached = counts
    if uncached is None:
        return None
    return uncached + (cached or 0) + written, cached
