"""The request fields that ask a worker for token ids and logprobs, and the answer's members
they add, which the proxy reads and then takes back out.

vLLM (`vllm/entrypoints/openai/protocol.py`): `return_token_ids` puts `prompt_token_ids` on a
chat answer (on a stream's first chunk) and on each completion choice, `token_ids` on each
choice (a stream's delta ids); both are null when not asked for. SGLang
(`python/sglang/srt/entrypoints/openai/protocol.py`, `serving_chat.py`): on chat,
`return_input_ids_in_sglext` and `return_output_ids_in_sglext` add `sglext.input_ids` and
`sglext.output_ids` (one list per choice), in the body or in a last `choices: []` chunk
(its `return_token_ids` is refused on streamed chat); on completions `return_token_ids` adds
each choice's `token_ids` and `prompt_token_ids`; members not asked for are left out. Our
llama.cpp server (`backends/llamacpp_fields.py`) takes vLLM's fields and places its members as
vLLM does, but leaves out those not asked for, as SGLang does. All take chat `logprobs: true`
(choice `logprobs.content[].logprob`) and completions `logprobs: N` (choice
`logprobs.token_logprobs`), null when not asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from agent_eval.proxy.capture.json_spans import (
    Edit,
    Member,
    elements,
    members,
    nulled,
    removals,
)
from agent_eval.proxy.routes import CHAT_ROUTE
from agent_eval.wire import TokenFields

COMPLETIONS_ROUTE = "/v1/completions"
TOKEN_ROUTES = frozenset({CHAT_ROUTE, COMPLETIONS_ROUTE})

_CHOICE_IDS = ("token_ids", "prompt_token_ids")
_SGLEXT_IDS = {
    "return_input_ids_in_sglext": "input_ids",
    "return_output_ids_in_sglext": "output_ids",
}


@dataclass(frozen=True, slots=True)
class TokenAsk:
    """What the proxy added to one request for its tokens: the request the worker gets, and
    the answer members it takes out again (those the client did not ask for itself)."""

    body: bytes
    fields: TokenFields
    token_ids: bool
    """The proxy added `return_token_ids`: the ids' members are null again (vLLM's) or gone
    (SGLang's, llama.cpp's) in the client's answer."""
    logprobs: bool
    """The proxy asked for logprobs: each choice's `logprobs` is null again for the client."""
    sglext: frozenset[str] = frozenset()
    """The `sglext` members the proxy asked for."""

    @property
    def nulls(self) -> bool:
        """Whether the worker writes the ids' members it was not asked for as null (vLLM)."""
        return self.fields == "vllm"


def token_ask(
    route: str, payload: dict[str, Any], body: bytes, fields: TokenFields
) -> TokenAsk | None:
    """The request fields to add to a generation call on `route` for its tokens; None when
    the route has none or the client asked for all of it itself."""
    if route not in TOKEN_ROUTES:
        return None
    chat = route == CHAT_ROUTE
    added: dict[str, object] = {}
    if fields == "sglang" and chat:
        added |= {name: True for name in _SGLEXT_IDS if payload.get(name) is not True}
    elif payload.get("return_token_ids") is not True:
        added["return_token_ids"] = True
    logprobs = _asked_logprobs(payload, chat)
    if not logprobs:
        added["logprobs"] = True if chat else 1
    if not added:
        return None
    sglext = frozenset(_SGLEXT_IDS[name] for name in added if name in _SGLEXT_IDS)
    token_ids = "return_token_ids" in added
    return TokenAsk(_with_members(body, added), fields, token_ids, not logprobs, sglext)


def _asked_logprobs(payload: dict[str, Any], chat: bool) -> bool:
    value = payload.get("logprobs")
    if chat:
        return value is True
    return type(value) is int


def _with_members(body: bytes, added: dict[str, object]) -> bytes:
    """`body` (a JSON object) with `added` as its last members: a parser that meets a key twice
    keeps the last, as Python's and llama.cpp's do."""
    end = body.rstrip().rindex(b"}")
    extra = orjson.dumps(added)[1:-1]
    inner = body[:end].rstrip()
    separator = b"" if inner.endswith(b"{") else b","
    return inner + separator + extra + body[end:]


def answer_edits(
    data: bytes, at: int, ask: TokenAsk, parsed: dict[str, Any] | None = None
) -> list[Edit] | None:
    """The edits that give back, from the answer object at `at` (`parsed`: its value), what
    the client would get without `ask`: [] when there is nothing to take out; None when the
    whole object is the proxy's (SGLang's ids chunk). Raises: SpanError when the bytes are
    not an object."""
    known = parsed or {}
    top = members(data, at, known)
    edits: list[Edit] = []
    cut: list[str] = []
    for member in top:
        if member.key == "choices":
            edits += _choices_edits(data, member, ask, known.get("choices"))
        elif ask.token_ids and member.key == "prompt_token_ids":
            if ask.nulls:
                edits += _null(data, member)
            else:
                cut.append(member.key)
        elif member.key == "sglext" and ask.sglext and data[member.value] == ord("{"):
            ext = members(data, member.value, known.get("sglext"))
            if {m.key for m in ext} <= ask.sglext:
                if _empty_choices(data, top):
                    return None
                cut.append(member.key)
            else:
                edits += removals(data, ext, ask.sglext)
    return edits + removals(data, top, cut)


def _choices_edits(data: bytes, choices: Member, ask: TokenAsk, parsed: Any) -> list[Edit]:
    if data[choices.value : choices.value + 1] != b"[":
        return []
    edits: list[Edit] = []
    for at, choice in elements(data, choices.value, parsed):
        if data[at : at + 1] == b"{":
            edits += _choice_edits(data, members(data, at, choice), ask)
    return edits


def _choice_edits(data: bytes, found: list[Member], ask: TokenAsk) -> list[Edit]:
    """vLLM's ids, and the logprobs, are null again; other workers' ids leave the choice."""
    ids = ask.token_ids and ask.nulls
    edits = removals(data, found, _CHOICE_IDS) if ask.token_ids and not ask.nulls else []
    for member in found:
        if (ids and member.key in _CHOICE_IDS) or (ask.logprobs and member.key == "logprobs"):
            edits += _null(data, member)
    return edits


def forget(answer: dict[str, Any], ask: TokenAsk) -> None:
    """Take out of the parsed `answer` what `answer_edits` takes out of its bytes."""
    null = ask.nulls
    if ask.token_ids and "prompt_token_ids" in answer:
        if null:
            answer["prompt_token_ids"] = None
        else:
            del answer["prompt_token_ids"]
    ext = answer.get("sglext")
    if ask.sglext and isinstance(ext, dict):
        for key in ask.sglext:
            ext.pop(key, None)
        if not ext:
            del answer["sglext"]
    for choice in answer.get("choices") or ():
        if isinstance(choice, dict):
            _forget_choice(choice, ask, null)


def _forget_choice(choice: dict[str, Any], ask: TokenAsk, null: bool) -> None:
    for key in _CHOICE_IDS if ask.token_ids else ():
        if key in choice and null:
            choice[key] = None
        else:
            choice.pop(key, None)
    if ask.logprobs and "logprobs" in choice:
        choice["logprobs"] = None


def _null(data: bytes, member: Member) -> list[Edit]:
    return [] if data[member.value : member.end] == b"null" else [nulled(member)]


def _empty_choices(data: bytes, top: list[Member]) -> bool:
    for member in top:
        if member.key == "choices":
            return next(elements(data, member.value), None) is None
    return True


class TokenReader:
    """Gathers a call's token ids and logprobs from its answer, whole or chunk by chunk: the
    prompt's, and each choice's (n > 1 samples several against the one prompt)."""

    def __init__(self) -> None:
        self.prompt: list[int] | None = None
        self._choices: dict[int, _ChoiceReader] = {}

    def take(self, payload: dict[str, Any]) -> None:
        """Take in one answer or one stream chunk."""
        self._prompt(payload.get("prompt_token_ids"))
        ext = payload.get("sglext")
        if isinstance(ext, dict):
            self._prompt(ext.get("input_ids"))
            outputs = ext.get("output_ids")
            for index, ids in enumerate(outputs if isinstance(outputs, list) else ()):
                if _ints(ids):
                    self._choice(index).completion += ids
        for choice in payload.get("choices") or ():
            if isinstance(choice, dict):
                index = choice.get("index", 0)
                if type(index) is int:
                    self._prompt(choice.get("prompt_token_ids"))
                    self._choice(index).take(choice)

    def result(self) -> dict[str, Any] | None:
        """The call's tokens as its record keeps them: the first choice's completion at the top
        (the one a chat agent goes on with), and every choice's in `choices` when there were
        several; None when the worker gave no ids."""
        read = sorted(self._choices.items())
        if self.prompt is None and not any(choice.completion for _, choice in read):
            return None
        first = read[0][1] if read else _ChoiceReader()
        tokens = {"prompt_ids": self.prompt or [], **first.result()}
        if len(read) > 1:
            tokens["choices"] = [{"index": index, **choice.result()} for index, choice in read]
        return tokens

    def _prompt(self, ids: object) -> None:
        if self.prompt is None and _ints(ids):
            self.prompt = ids  # type: ignore[assignment]

    def _choice(self, index: int) -> _ChoiceReader:
        found = self._choices.get(index)
        if found is None:
            found = self._choices[index] = _ChoiceReader()
        return found


class _ChoiceReader:
    """One choice's completion ids and logprobs, as they arrive."""

    def __init__(self) -> None:
        self.completion: list[int] = []
        self.logprobs: list[float] = []
        self.some_logprobs = False

    def take(self, choice: dict[str, Any]) -> None:
        ids = choice.get("token_ids")
        if _ints(ids):
            self.completion += ids  # type: ignore[arg-type]
        logprobs = choice.get("logprobs")
        if isinstance(logprobs, dict):
            self.some_logprobs = True
            self.logprobs += _values(logprobs)

    def result(self) -> dict[str, Any]:
        logprobs = self.logprobs if self.some_logprobs else None
        return {"completion_ids": self.completion, "logprobs": logprobs}


def _values(logprobs: dict[str, Any]) -> list[float]:
    """The sampled tokens' logprobs: chat's `content[].logprob`, completions' `token_logprobs`."""
    content = logprobs.get("content")
    if isinstance(content, list):
        return [e["logprob"] for e in content if isinstance(e, dict) and _number(e.get("logprob"))]
    values = logprobs.get("token_logprobs")
    return [v for v in values if _number(v)] if isinstance(values, list) else []


def _ints(value: object) -> bool:
    return isinstance(value, list) and all(type(v) is int for v in value)


def _number(value: object) -> bool:
    return type(value) in (int, float)
