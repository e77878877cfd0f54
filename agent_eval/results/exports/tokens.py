"""A recorded model call's token ids (ModelCallRecord.tokens), read back from a record."""

from __future__ import annotations

from typing import Any

from agent_eval.agents.trajectory import CallTokens


def recorded_tokens(call: dict[str, Any]) -> CallTokens | None:
    """The call's token ids and log probabilities as the record holds them; None when they were
    not captured."""
    tokens = call.get("tokens")
    if not isinstance(tokens, dict):
        return None
    return CallTokens(tokens["prompt_ids"], tokens["completion_ids"], tokens.get("logprobs"))


def continues(earlier: CallTokens, later: CallTokens) -> bool:
    """Whether `later`'s prompt begins with all `earlier` was given and produced: what a trainer
    that concatenates the calls of an attempt takes for granted."""
    given = len(earlier.prompt_ids)
    produced = len(earlier.completion_ids)
    return (
        len(later.prompt_ids) >= given + produced
        and later.prompt_ids[:given] == earlier.prompt_ids
        and later.prompt_ids[given : given + produced] == earlier.completion_ids
    )
