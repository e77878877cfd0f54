"""`bfcl:PART` datasets: BFCL v4's entries and possible answers read from its installed package.

Each line of `bfcl_eval/data/BFCL_v4_<category>.json` is one entry; `possible_answer/` holds
the golds of the categories that have them, line for line. The multi-turn categories are read
by `multi_turn.data`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib.resources import files
from importlib.resources.abc import Traversable
from itertools import chain
from typing import Any

from agent_eval.benchmarks.bfcl.categories import (
    VERSION_PREFIX,
    categories,
    is_multi_turn,
    parts,
    scoring,
)
from agent_eval.benchmarks.bfcl.multi_turn.data import multi_turn_items
from agent_eval.data.errors import DataError
from agent_eval.data.records import Origin, Sample

DATA = files("bfcl_eval") / "data"


def bfcl_items(part: str) -> Iterator[Sample]:
    """Every entry of the categories `part` names, in BFCL's order.

    Raises: DataError for a part BFCL does not have, naming those it has.
    """
    chosen = categories(part)
    if chosen is None:
        raise DataError(f"bfcl has no part {part!r}; it has: {', '.join(parts())}")
    return chain.from_iterable(map(_category_items, chosen))


def _category_items(category: str) -> Iterator[Sample]:
    return multi_turn_items(category) if is_multi_turn(category) else _single_turn(category)


def _single_turn(category: str) -> Iterator[Sample]:
    name = f"{VERSION_PREFIX}_{category}.json"
    answers = _lines(DATA / "possible_answer" / name) if scoring(category) == "ast" else None
    for number, entry in enumerate(_lines(DATA / name), 1):
        truth = next(answers) if answers is not None else None
        yield entry_sample(entry, category, truth, Origin(name, "line", number))


def entry_sample(
    entry: dict[str, Any], category: str, truth: dict[str, Any] | None, origin: Origin | None
) -> Sample:
    """A single-turn entry as a sample; its gold is what `score_bfcl` gives BFCL's checker."""
    if truth is not None and truth["id"] != entry["id"]:
        raise DataError(f"{origin}: entry {entry['id']!r} has the answer of {truth['id']!r}")
    messages = entry["question"][0]
    gold = {
        "bfcl_category": category,
        "functions": entry["function"],
        "ground_truth": truth["ground_truth"] if truth is not None else None,
    }
    return Sample(
        id=entry["id"],
        question=_last_user_text(messages),
        answer=json.dumps(gold),
        messages=messages,
        metadata={"bfcl_category": category, "functions": entry["function"]},
        origin=origin,
    )


def _lines(path: Traversable) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    """What the user asks: the last user message's text."""
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    return str(users[-1]) if users else ""
