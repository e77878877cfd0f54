"""The tokens one request to the llama.cpp worker was given and produced, recorded as it runs.

A request that asks for them (`return_token_ids`, vLLM's field, or chat `logprobs`) gets a
`Tokens` for its whole run; every generation it starts reports to it through
`shims.llama_generations`. A chat turn may take several generations (choosing a tool, then its
arguments): its prompt is the first generation's, its completion everything after that prompt
in the last generation's context, so prompt + completion is what the model last read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
from llama_cpp import Llama

from agent_eval.shims.llama_generations import OnToken, ends_generation, logprobs_after

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
            if not ends_generation(llama, token):
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
