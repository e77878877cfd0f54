"""How BFCL's entries may be perturbed without making their gold wrong.

Single-turn Python entries scored by BFCL's AST checker may have a number or a name swapped
in their messages and their possible answers alike (`swaps`); Java and JavaScript answers are
source text, relevance entries hold no answer to swap, and a multi-turn answer is a state of
its backends, so those swap nothing. Words may be added to the last user message of a
single-turn entry and to the first of a multi-turn one: what the functions must be called
with (or whether any is) does not move with a sentence about something else.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from agent_eval.benchmarks.bfcl import swaps
from agent_eval.benchmarks.bfcl.categories import is_multi_turn, language, scoring
from agent_eval.data.records import Sample

Message = dict[str, Any]


class BfclEdits:
    """BFCL's `SampleEdits` (agent_eval.data.edits)."""

    def text(self, sample: Sample) -> str | None:
        message = _user_message(sample)
        content = message.get("content") if message is not None else None
        return content if isinstance(content, str) else None

    def context(self, sample: Sample) -> str:
        metadata = sample.metadata
        return json.dumps([metadata.get("functions"), metadata.get("bfcl_entry"), sample.answer])

    def swappable(self, sample: Sample) -> list[str]:
        if not _swaps_values(sample):
            return []
        return swaps.swappable(_contents(sample), _truth(sample), sample.metadata["functions"])

    def swapped(self, sample: Sample, new: Mapping[str, str]) -> Sample | None:
        texts, truth, docs = _contents(sample), _truth(sample), sample.metadata.get("functions")
        if not new or not _swaps_values(sample) or not swaps.consistent(texts, truth, docs, new):
            return None
        gold = {
            **json.loads(sample.answer or "{}"),
            "ground_truth": swaps.swapped_truth(truth, new),
        }
        messages = [
            {**m, "content": swaps.swapped_texts([m["content"]], new)[0]}
            if isinstance(m.get("content"), str)
            else m
            for m in sample.messages or []
        ]
        return _with_messages(sample, messages, json.dumps(gold))

    def told(self, sample: Sample, text: str) -> Sample | None:
        if self.text(sample) is None:
            return None
        if is_multi_turn(sample.metadata["bfcl_category"]):
            entry = copy.deepcopy(sample.metadata["bfcl_entry"])
            _first_user(entry["question"])["content"] = text
            metadata = {**sample.metadata, "bfcl_entry": entry}
            return dataclasses.replace(sample, question=text, metadata=metadata)
        messages = copy.deepcopy(sample.messages or [])
        _last_user(messages)["content"] = text
        return _with_messages(sample, messages, sample.answer)


EDITS = BfclEdits()


def _swaps_values(sample: Sample) -> bool:
    """Whether the entry's answers are Python values BFCL's AST checker compares."""
    category = sample.metadata["bfcl_category"]
    return scoring(category) == "ast" and language(category).name == "PYTHON"


def _truth(sample: Sample) -> Any:
    return json.loads(sample.answer or "{}").get("ground_truth") or []


def _contents(sample: Sample) -> list[str]:
    """Every text the model is sent as the entry's messages."""
    return [m["content"] for m in sample.messages or [] if isinstance(m.get("content"), str)]


def _with_messages(sample: Sample, messages: list[Message], answer: str | None) -> Sample:
    question = _last_user(messages)["content"]
    return dataclasses.replace(sample, question=question, messages=messages, answer=answer)


def _user_message(sample: Sample) -> Message | None:
    """The message a variant rewrites: the last user message, or a multi-turn entry's first."""
    if is_multi_turn(sample.metadata["bfcl_category"]):
        return _first_user(sample.metadata["bfcl_entry"]["question"])
    users = [m for m in sample.messages or [] if m.get("role") == "user"]
    return users[-1] if users else None


def _last_user(messages: list[Message]) -> Message:
    return next(m for m in reversed(messages) if m.get("role") == "user")


def _first_user(turns: list[list[Message]]) -> Message:
    return next(m for turn in turns for m in turn if m.get("role") == "user")
