"""BFCL's multi-turn entries as samples: the entry to play in the metadata, the gold as JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agent_eval.benchmarks.bfcl.multi_turn.package import CATEGORIES, bfcl_utils, constants
from agent_eval.data.errors import DataError
from agent_eval.data.records import Sample


def multi_turn_items(category: str) -> Iterator[Sample]:
    """Every entry of one multi-turn category, in the package's order, with BFCL's ids.

    Raises: DataError for a category BFCL's multi-turn set does not have.
    """
    if category not in CATEGORIES:
        raise DataError(
            f"BFCL has no multi-turn category {category!r}; it has: {', '.join(CATEGORIES)}"
        )
    golds = {gold["id"]: gold["ground_truth"] for gold in _read("possible_answer", category)}
    for entry in _read(".", category):
        yield _sample(entry, golds[entry["id"]], category)


def _read(folder: str, category: str) -> list[dict[str, Any]]:
    """A category's file as BFCL stores it: one JSON entry a line."""
    utils = bfcl_utils()
    prefix = constants("category_mapping").VERSION_PREFIX
    path = utils.PROMPT_PATH / folder / f"{prefix}_{category}.json"
    entries: list[dict[str, Any]] = utils.load_file(path, use_lock=False)
    return entries


def _sample(entry: dict[str, Any], ground_truth: list[list[str]], category: str) -> Sample:
    gold = {
        "id": entry["id"],
        "category": category,
        "ground_truth": ground_truth,
        "initial_config": entry["initial_config"],
        "involved_classes": entry["involved_classes"],
    }
    return Sample(
        id=entry["id"],
        question=_first_user_text(entry["question"]),
        answer=json.dumps(gold),
        metadata={"bfcl_category": category, "bfcl_entry": entry},
    )


def _first_user_text(turns: list[list[dict[str, Any]]]) -> str:
    """What the user asks first, for display."""
    return next((m["content"] for turn in turns for m in turn if m.get("role") == "user"), "")
