"""Continuity between an attempt's model calls: whether each call's prompt begins with the tokens
an earlier call of its conversation was given and produced, and where it first differs (drift).

A trainer that joins an agent's turns into one sequence assumes that a turn's prompt ids begin
with the previous turn's prompt ids + completion ids. A chat template that renders the model's
own turn differently when it is sent back (reasoning dropped, a tool call reformatted, text
tokenized again across a boundary) breaks that: the turn drifts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from agent_eval.agents.trajectory import CallTokens, ChoiceTokens

SAME_CONVERSATION = 0.5
"""The share of an earlier call's prompt a call must begin with to be of its conversation."""


@dataclass(frozen=True)
class DriftPoint:
    """Where a call's prompt first differs from the tokens of the call it was checked against."""

    index: int
    """The position in the call's prompt_ids (and in the earlier call's prompt + completion)."""
    expected: int
    """The earlier call's token there."""
    found: int
    """The call's own prompt token there."""


@dataclass(frozen=True)
class TurnCheck:
    """One call checked against the earlier call of its conversation."""

    call: int
    """Its index among the attempt's model calls."""
    previous: int
    """The index of the earlier call it was checked against."""
    drift: DriftPoint | None
    """None when it continues that call: its prompt begins with that call's tokens."""


@dataclass(frozen=True)
class ContinuityCounts:
    """What the drift metrics count of one attempt, or of many added together."""

    tokenized: int = 0
    """Model calls with their tokens recorded."""
    untokenized: int = 0
    """Model calls without (not captured): skipped."""
    checked: int = 0
    """Calls checked against an earlier call of their conversation."""
    drifted: int = 0
    """Of those, the calls whose prompt does not begin with the earlier call's tokens."""


@dataclass(frozen=True)
class Continuity:
    """An attempt's calls checked: each turn that follows an earlier one, and what was skipped."""

    turns: tuple[TurnCheck, ...]
    conversations: int
    """Calls with tokens that start a conversation: the first, and any that follow no earlier."""
    untokenized: int
    """Calls without tokens: neither checked nor checked against."""

    def counts(self) -> ContinuityCounts:
        drifted = sum(turn.drift is not None for turn in self.turns)
        tokenized = len(self.turns) + self.conversations
        return ContinuityCounts(tokenized, self.untokenized, len(self.turns), drifted)


def continuity(calls: Sequence[CallTokens | None]) -> Continuity:
    """Check each call with tokens against the earlier call of its conversation.

    An agent may hold several conversations in one attempt (a sub-agent, a summariser), so a
    call's previous turn is not simply the call before it: it is the earlier call whose prompt +
    completion shares the longest prefix with the call's prompt (the latest of equals). The call
    continues it when all of those tokens begin its prompt, and drifts when they differ at a
    point that lies past SAME_CONVERSATION of that call's prompt. A call that shares less starts
    a new conversation, as does one whose prompt ends inside the earlier tokens with none
    different (the conversation sent back shorter: a branch, nothing rendered anew). Every two
    calls through one chat template share its first header tokens, so a new conversation cannot
    be told by sharing nothing at all; drift from rendering a turn anew lies at the end of the
    earlier prompt or after it, far past its half.
    """
    earlier: list[_Seen] = []
    turns: list[TurnCheck] = []
    untokenized = 0
    for index, tokens in enumerate(calls):
        if tokens is None:
            untokenized += 1
            continue
        turn = _check(index, tokens.prompt_ids, earlier)
        if turn is not None:
            turns.append(turn)
        # A call of several choices is gone on from with the one its agent took: any of them.
        earlier += [
            _Seen(index, answer.prompt_ids + answer.completion_ids, len(answer.prompt_ids))
            for answer in tokens.answers()
        ]
    tokenized = len(calls) - untokenized
    return Continuity(tuple(turns), tokenized - len(turns), untokenized)


@dataclass(frozen=True)
class _Seen:
    """An earlier call's tokens: its prompt and then its completion."""

    call: int
    tokens: list[int]
    prompt_length: int


def _check(index: int, prompt: list[int], earlier: list[_Seen]) -> TurnCheck | None:
    """The check of one call against the earlier calls; None: it starts a new conversation."""
    best: _Seen | None = None
    most = -1
    for seen in reversed(earlier):
        if len(seen.tokens) <= most:
            continue  # it cannot share more than the best found so far, nor win a tie
        shared = shared_prefix(prompt, seen.tokens)
        if shared > most:
            best, most = seen, shared
    if best is None:
        return None
    if most == len(best.tokens):
        return TurnCheck(index, best.call, None)
    if most == len(prompt) or most == 0 or most < SAME_CONVERSATION * best.prompt_length:
        return None
    return TurnCheck(index, best.call, DriftPoint(most, best.tokens[most], prompt[most]))


def continues(earlier: CallTokens, later: CallTokens) -> bool:
    """Whether `later`'s prompt begins with all `earlier` was given and produced (with one of
    its choices): what a trainer that joins an attempt's calls into one sequence takes for
    granted."""
    return followed(earlier, later) is not None


def followed(earlier: CallTokens, later: CallTokens) -> CallTokens | None:
    """`earlier` as answered by the choice `later` goes on from: the first whose prompt and
    completion begin `later`'s prompt; None when none does."""
    prompt = later.prompt_ids
    for answer in earlier.answers():
        seen = answer.prompt_ids + answer.completion_ids
        if len(prompt) >= len(seen) and shared_prefix(prompt, seen) == len(seen):
            return answer
    return None


def shared_prefix(a: list[int], b: list[int]) -> int:
    """How many tokens `a` and `b` share from their start."""
    length = min(len(a), len(b))
    if (a if len(a) == length else a[:length]) == (b if len(b) == length else b[:length]):
        return length
    # Slices compare at C speed: halving the range keeps the whole search linear.
    low, high = 0, length
    while high - low > 1:
        middle = (low + high) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle
    return low


def recorded_tokens(call: dict[str, Any]) -> CallTokens | None:
    """A recorded model call's tokens (samples.jsonl's shape); None when it has none, or none
    that read as token ids."""
    tokens = call.get("tokens")
    if not isinstance(tokens, dict):
        return None
    prompt, completion = tokens.get("prompt_ids"), tokens.get("completion_ids")
    if not _ids(prompt) or not _ids(completion):
        return None
    logprobs = tokens.get("logprobs")
    choices = _recorded_choices(tokens.get("choices"))
    return CallTokens(prompt, completion, _list_or_none(logprobs), choices)


def _recorded_choices(choices: Any) -> list[ChoiceTokens] | None:
    """A call's choices (n > 1) as recorded; None when it has none (older lines, one choice)."""
    if not isinstance(choices, list):
        return None
    read = [
        ChoiceTokens(c.get("index", 0), c["completion_ids"], _list_or_none(c.get("logprobs")))
        for c in choices
        if isinstance(c, dict) and _ids(c.get("completion_ids"))
    ]
    return read or None


def _list_or_none(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


def _ids(value: Any) -> TypeGuard[list[int]]:
    # Not item by item: an attempt's calls hold hundreds of thousands of ids, read on every
    # summary; a stray item only compares unequal.
    return isinstance(value, list)


def recorded_continuity(model_calls: Iterable[dict[str, Any]]) -> Continuity:
    """The continuity of a recorded trajectory's model calls."""
    return continuity([recorded_tokens(call) for call in model_calls])
