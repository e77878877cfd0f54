"""Each generation of llama-cpp-python's `Llama`, seen as it runs: its prompt tokens, each token it
samples, and the logits it sampled from; and each answer `Llama.__call__` gives (the server's
completions route calls it, never its chat handlers), whole or chunk by chunk.

Relies on `Llama._create_completion` passing the whole prompt's tokens to `self.generate` and
appending every token `generate` yields to the completion except an end-of-generation token
(`llama_vocab_is_eog` on `Llama._model.vocab`), and on `Llama.scores` holding, with
`logits_all`, row i's logits after token i: what llama-cpp-python's own logprobs read. Checked
against llama-cpp-python 0.3.36.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, cast

import llama_cpp
import numpy as np
import numpy.typing as npt
from llama_cpp import Llama

Answer = dict[str, Any]
OnToken = Callable[[int], None]
Watch = Callable[[Llama, list[int]], OnToken | None]
"""Called as a generation starts with its prompt tokens; what it returns sees each token."""


def watch_generations(watch: Watch) -> None:
    """Have `watch` see every generation of every `Llama` in this process; a later call
    replaces the watch, never wraps `generate` twice."""

    def watching(generate: Any, hook: Callable[[], Watch]) -> Callable[..., Any]:
        def watched_generate(
            llama: Llama, tokens: Sequence[int], *args: Any, **kwargs: Any
        ) -> Generator[int, Sequence[int] | None, None]:
            on_token = hook()(llama, list(tokens))
            generation = generate(llama, tokens, *args, **kwargs)
            if on_token is None:
                return (yield from generation)
            for token in generation:
                on_token(token)
                yield token

        return watched_generate

    _hook_once("generate", watch, watching)


OnAnswer = Callable[[Answer], None]
EditAnswers = Callable[[Llama, dict[str, Any]], OnAnswer | None]
"""Called as `Llama.__call__` starts with its keyword arguments; what it returns may change each
answer or stream chunk in place before the caller sees it."""


def edit_completions(edit: EditAnswers) -> None:
    """Have `edit` see every answer `Llama.__call__` gives in this process; a later call
    replaces the edit, never wraps `__call__` twice."""

    def editing(call: Any, hook: Callable[[], EditAnswers]) -> Callable[..., Any]:
        def edited_call(llama: Llama, *args: Any, **kwargs: Any) -> Any:
            on_answer = hook()(llama, kwargs)
            answer = call(llama, *args, **kwargs)
            if on_answer is None:
                return answer
            if isinstance(answer, dict):
                on_answer(answer)
                return answer
            return _edited(cast(Iterator[Answer], answer), on_answer)

        return edited_call

    _hook_once("__call__", edit, editing)


def _hook_once(name: str, hook: Any, wrapping: Callable[[Any, Callable[[], Any]], Any]) -> None:
    """Make `hook` the one `Llama.<name>` calls: the method is wrapped (by `wrapping`, given the
    original and a getter of the current hook) the first time; later calls swap the hook."""
    method = getattr(Llama, name)
    if getattr(method, "hook", None) is not None:
        method.hook = hook
        return
    wrapped: Any = functools.wraps(method)(wrapping(method, lambda: wrapped.hook))
    wrapped.hook = hook
    setattr(Llama, name, wrapped)


def _edited(chunks: Iterator[Answer], on_answer: OnAnswer) -> Iterator[Answer]:
    for chunk in chunks:
        on_answer(chunk)
        yield chunk


def ends_generation(llama: Llama, token: int) -> bool:
    """Whether `token` ends a generation: llama-cpp-python leaves it out of the completion."""
    return bool(llama_cpp.llama_vocab_is_eog(llama._model.vocab, token))


def logprobs_after(llama: Llama, position: int) -> npt.NDArray[np.single] | None:
    """Log-probabilities of the token after `position` of the context, as llama-cpp-python
    computes its logprobs; None when the model keeps no logits per token (`logits_all` off)."""
    if not llama._logits_all:
        return None
    return Llama.logits_to_logprobs(llama.scores[position, :])
