"""The tokens one request to the llama.cpp worker was given and produced, recorded as it runs.

A request that asks for them (`return_token_ids`, vLLM's field, or `logprobs`) gets a
`Tokens` for its whole run; every generation it starts reports to it through
`shims.llama_generations`. A chat turn may take several generations (choosing a tool, then its
arguments): its prompt is the first generation's, its completion everything after that prompt
in the last generation's context, so prompt + completion is what the model last read and wrote.

A generation that ends on an end-of-generation token (SmolLM2's `<|im_end|>`) keeps it last in
the completion, with its logprob: llama-cpp-python leaves it out of the text and its counts, but
vLLM's `token_ids` end with it (its detokenizer skips the stop token for the text only, vllm/v1/
engine/detokenizer.py) and so do SGLang's `output_ids` (detokenizer_manager.py trims its copy for
the text), so a trainer's loss mask covers the token that ended the turn. A stop string keeps
every token sampled up to the one that completed it, as vLLM's ids do. Completions' logprobs are
llama-cpp-python's own: `stop_logprobs` adds that token's entry, as vLLM's list it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llama_cpp import Llama

from agent_eval.shims.llama_generations import (
    Answer,
    OnAnswer,
    OnToken,
    ends_generation,
    logprobs_after,
)

Alternatives = list[tuple[int, float]]


@dataclass
class Wanted:
    """What a request asked for: token ids, logprobs, and how many alternatives per token."""

    ids: bool = False
    logprobs: bool = False
    top: int = 0


@dataclass
class Piece:
    """Completion tokens with their logprobs (None without logits per token) and alternatives."""

    ids: list[int] = field(default_factory=list)
    logprobs: list[float | None] = field(default_factory=list)
    alternatives: list[Alternatives] = field(default_factory=list)


@dataclass
class Tokens:
    """One request's prompt and completion tokens; `take` hands out the completion in pieces."""

    wanted: Wanted
    prompt_ids: list[int] | None = None
    completion: Piece = field(default_factory=Piece)
    taken: int = 0
    llama: Llama | None = None

    def generation(self, llama: Llama, prompt: list[int]) -> OnToken:
        """Start recording a generation of `prompt`: what it returns records each token."""
        self.llama = llama
        first = self.prompt_ids is None or prompt[: len(self.prompt_ids)] != self.prompt_ids
        if first:
            self.prompt_ids = prompt
        start = len(self.prompt_ids or [])
        self.completion = Piece()
        self.taken = 0
        pending = prompt[start:]  # read as prompt now, sampled by an earlier generation
        position = len(prompt) - 1

        def on_token(token: int) -> None:
            nonlocal position
            if pending:
                # The rows of the prompt's tokens exist once generate has read the prompt.
                for offset, given in enumerate(pending):
                    self._add(llama, start - 1 + offset, given)
                pending.clear()
            self._add(llama, position, token)
            position += 1

        return on_token

    def take(self) -> Piece:
        """The completion tokens recorded since the last `take`."""
        done, start = self.completion, self.taken
        self.taken = len(done.ids)
        return Piece(done.ids[start:], done.logprobs[start:], done.alternatives[start:])

    def _add(self, llama: Llama, position: int, token: int) -> None:
        row = logprobs_after(llama, position) if self.wanted.logprobs else None
        self.completion.ids.append(token)
        self.completion.logprobs.append(None if row is None else float(row[token]))
        self.completion.alternatives.append(_top(row, self.wanted.top))

    def stop_entry(self, llama: Llama, offset: int) -> dict[str, Any] | None:
        """The completions logprobs entry of the token that ended the generation, at text
        offset `offset`; None when no end-of-generation token ended it, or no logprob."""
        done = self.completion
        if not done.ids or not ends_generation(llama, done.ids[-1]) or done.logprobs[-1] is None:
            return None
        text, value = token_text(llama, done.ids[-1]), done.logprobs[-1]
        top = {token_text(llama, other): lp for other, lp in done.alternatives[-1]}
        return {
            "tokens": [text],
            "text_offset": [offset],
            "token_logprobs": [value],
            "top_logprobs": [{**top, text: value}],
        }


def token_bytes(llama: Llama, token: int) -> bytes:
    """A token's bytes, a control token's (`<|im_end|>`) written out as vLLM's logprobs write it."""
    return llama.detokenize([token], special=True)


def token_text(llama: Llama, token: int) -> str:
    """A token's text: its bytes, less a character they hold only part of."""
    return token_bytes(llama, token).decode(errors="ignore")


def _top(row: np.ndarray | None, count: int) -> Alternatives:
    if row is None or count <= 0:
        return []
    best = np.argsort(row)[::-1][:count]
    return [(int(token), float(row[token])) for token in best]


CURRENT: ContextVar[Tokens | None] = ContextVar("llamacpp_tokens", default=None)


def watch(llama: Llama, prompt: list[int]) -> OnToken | None:
    """The current request's recorder for a generation it starts; None when nothing was asked."""
    tokens = CURRENT.get()
    return None if tokens is None else tokens.generation(llama, prompt)


def stop_logprobs(llama: Llama, options: dict[str, Any]) -> OnAnswer | None:
    """For a completions request of the current request that asked for logprobs: what adds the
    entry of the token that ended its generation to its answer, whole or on a stream's last
    chunk (llama-cpp-python lists none for it); None otherwise."""
    tokens = CURRENT.get()
    if tokens is None or not tokens.wanted.logprobs or options.get("logprobs") is None:
        return None
    prompt = options.get("prompt")
    # llama-cpp-python's text offsets count characters from the prompt's start.
    written = len(prompt) if isinstance(prompt, str) and not options.get("echo") else 0

    def on_answer(answer: Answer) -> None:
        nonlocal written
        choice = answer["choices"][0]
        written += len(choice["text"])
        entry = tokens.stop_entry(llama, written) if choice["finish_reason"] else None
        if entry is None:
            return
        listed = choice.get("logprobs")
        if listed is None:
            choice["logprobs"] = entry
        else:
            for key, values in entry.items():
                listed[key] += values

    return on_answer


@contextlib.contextmanager
def recording(wanted: Wanted) -> Iterator[Tokens]:
    """Record the tokens of every generation started in this context (and the threads it
    starts): the request's `Tokens`."""
    tokens = Tokens(wanted)
    reset = CURRENT.set(tokens)
    try:
        yield tokens
    finally:
        CURRENT.reset(reset)
