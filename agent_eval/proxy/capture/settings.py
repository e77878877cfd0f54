"""The settings of per-attempt keys: how long a key lives, how much the proxy keeps."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.wire import TokenFields


class CaptureConfig(BaseModel):
    """Bounds on the attempts the proxy records (POST /attempts)."""

    model_config = ConfigDict(extra="forbid")

    key_ttl: float = Field(
        3600.0,
        gt=0,
        description="Seconds an attempt key lives when POST /attempts gives no ttl_s; after it "
        "the key's calls are refused.",
    )
    max_open: int = Field(
        10_000,
        ge=1,
        description="Attempts open at once; past it POST /attempts answers 429 until one ends "
        "or expires.",
    )
    max_record_bytes: int = Field(
        16 * 1024**2,
        ge=1024,
        description="Bytes of calls one attempt's record may hold; past it the attempt's calls "
        "are refused (attempt_limit_exceeded) and its record says so.",
    )
    max_total_bytes: int = Field(
        1024**3,
        ge=1024,
        description="Bytes of calls all open attempts' records may hold together; past it "
        "their calls are refused as over an attempt's own limit are.",
    )
    drain_timeout: float = Field(
        30.0,
        gt=0,
        description="Seconds DELETE /attempts/KEY waits for the key's calls in flight before "
        "it returns the record without them.",
    )
    tokens: bool = Field(
        False,
        description="Ask the workers for each attempt call's prompt and completion token ids "
        "and logprobs, and keep them in its record under `tokens`; the client gets the "
        "answer it would get without.",
    )
    token_fields: TokenFields = Field(
        "vllm",
        description="Whose request fields ask the workers for token ids: `vllm` "
        "(return_token_ids), `sglang` (return_input_ids_in_sglext, "
        "return_output_ids_in_sglext) or `llamacpp` (the embedded llama.cpp server: vLLM's "
        "fields, the members not asked for left out).",
    )
