"""Header names on the wire between the harness's parts: set by the proxy, read by the agents;
and the dialects of the servers' fields for token ids."""

from typing import Literal

SESSION_HEADER = "X-Session-ID"
"""The conversation a request belongs to; the proxy keeps a session on one worker by it."""
WORKER_HEADER = "X-Agent-Eval-Worker"
"""The worker that answered a request through the proxy (or whose error it passes on)."""
RETRIES_HEADER = "X-Agent-Eval-Retries"
"""How many workers failed the request before the one that answered (or the last one)."""
WAITED_HEADER = "X-Agent-Eval-Waited"
"""Seconds a request waited in the proxy for a free worker: the time before the try that
answered it (failed tries and backoff on busy workers), all of it when no worker answered."""
SHOULD_RETRY_HEADER = "x-should-retry"
"""Whether the client should retry the request: the OpenAI and Anthropic SDKs honour it."""
TokenFields = Literal["vllm", "sglang", "llamacpp"]
"""Whose request fields ask a server for token ids: vLLM's (`return_token_ids`), SGLang's
(`return_*_ids_in_sglext` on chat) or our llama.cpp server's (vLLM's fields, whose members it
leaves out when not asked for, where vLLM writes them null)."""


def waited_seconds(told: str | None) -> float:
    """The seconds a WAITED_HEADER value says; 0 when it is missing or not a number."""
    try:
        seconds = float(told) if told else 0.0
    except ValueError:
        return 0.0
    return seconds if 0.0 <= seconds < float("inf") else 0.0
