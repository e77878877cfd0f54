"""The text of a run's token ids, from its model's own tokenizer where this machine holds it as
a GGUF file: its vocabulary is loaded alone (llama-cpp-python's `vocab_only`), in under a second,
once per file, and kept for the runs that use it. Call these in a thread: they read
files and decode."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_eval.backends.llamacpp import embedded_model
from agent_eval.errors import AgentEvalError
from agent_eval.run.config import CONFIG_FILE, load_run_config

if TYPE_CHECKING:
    from llama_cpp import Llama

KEPT = 4
"""Vocabularies (and runs' model files) kept in memory at once: those being looked at."""
GGUF = ".gguf"


@dataclass
class Vocabulary:
    """One model file's tokenizer: each id's text, decoded once."""

    name: str
    llama: Llama
    """Its vocabulary alone, no weights."""
    texts: dict[int, str | None] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def text(self, ids: list[int]) -> list[str | None]:
        """Each id's text (a control token's written out, `<|im_end|>`; bytes that are not
        UTF-8 alone as `\\xNN`); None for an id the vocabulary does not have."""
        with self.lock:  # pages ask from several threads; the cache and llama.cpp are shared
            return [self._text(token) for token in ids]

    def _text(self, token: int) -> str | None:
        if token not in self.texts:
            known = type(token) is int and 0 <= token < self.llama.n_vocab()
            # Never pass llama.cpp an id it does not have: it reads past its table.
            piece = self.llama.detokenize([token], special=True) if known else None
            self.texts[token] = None if piece is None else piece.decode(errors="backslashreplace")
        return self.texts[token]


def call_texts(run_dir: Path, prompt_ids: list[int], completion_ids: list[int]) -> dict[str, Any]:
    """A call's tokens' text as the view sends it: `text` (the tokenizer's name and the text of
    each prompt and completion id) or null, and `text_note`, why not, when null."""
    vocabulary = run_vocabulary(run_dir)
    if isinstance(vocabulary, str):
        return {"text": None, "text_note": vocabulary}
    text = {
        "tokenizer": vocabulary.name,
        "prompt": vocabulary.text(prompt_ids),
        "completion": vocabulary.text(completion_ids),
    }
    return {"text": text, "text_note": None}


def run_vocabulary(run_dir: Path) -> Vocabulary | str:
    """The vocabulary of the model the run's config.yaml names; a str saying why there is none
    (config.yaml is read again only when it changes)."""
    path = run_dir / CONFIG_FILE
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return f"{path} is missing, so the run's model is unknown"
    found = _model_file(path, stamp)
    if isinstance(found, str):
        return found
    try:
        return _load(found, found.stat().st_mtime_ns)
    except (OSError, ValueError) as exc:
        return f"{found} cannot be read as a GGUF tokenizer ({exc})"


@functools.lru_cache(maxsize=KEPT)
def _model_file(path: Path, stamp: int) -> Path | str:
    # `stamp` is part of the cache key: an edited config is read again.
    try:
        config = load_run_config(path, {}, [])
        model, backend = config.worker().model, config.allocation().backend
    except (AgentEvalError, ValueError) as exc:
        return f"{path} cannot be read ({exc}), so the run's model is unknown"
    if model is None and backend == "llamacpp":
        try:
            return embedded_model()
        except AgentEvalError as exc:
            return str(exc)
    if model is not None and model.endswith(GGUF) and Path(model).is_file():
        return Path(model)
    named = "the served model" if model is None else repr(model)
    return f"the run's model ({named}) is not a GGUF file on this machine, so ids are shown"


@functools.lru_cache(maxsize=KEPT)
def _load(file: Path, stamp: int) -> Vocabulary:
    # `stamp` is part of the cache key: a replaced file is loaded again. Imported here: loading
    # llama.cpp's library would slow every command that imports the view's server.
    from llama_cpp import Llama

    return Vocabulary(file.name, Llama(model_path=str(file), vocab_only=True, verbose=False))
