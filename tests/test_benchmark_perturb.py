"""`--perturb` on BFCL and AgentDojo: a variant's gold is right for what it plays, and where it
could not be, no variant is made."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

import pytest

from agent_eval.benchmarks.bfcl import swaps
from agent_eval.benchmarks.bfcl.datasets import bfcl_items
from agent_eval.benchmarks.bfcl.edits import EDITS
from agent_eval.benchmarks.bfcl.reward import score_bfcl
from agent_eval.data import DataError, Item, Sample, load_dataset
from agent_eval.data.edits import benchmark_edits
from agent_eval.perturb.coverage import coverage
from agent_eval.perturb.expand import perturbed
from agent_eval.testing.bfcl_answers import as_model_calls, first_choices

KINDS = ["numbers", "names", "distractor"]


def variants(dataset: str, kinds: list[str], limit: int | None = None) -> list[Sample]:
    return samples(
        perturbed(load_dataset(dataset, limit=limit), kinds, 0, benchmark_edits(dataset))
    )


def samples(items: Iterable[Item]) -> list[Sample]:
    """A benchmark's items and variants, each a sample."""
    found = list(items)
    assert all(isinstance(item, Sample) for item in found)
    return [item for item in found if isinstance(item, Sample)]


def right_calls(gold: str) -> str:
    """The prediction document of an answer making the gold's first possible calls."""
    calls = as_model_calls(first_choices(json.loads(gold)["ground_truth"], as_text=False))
    result = [{name: arguments} for name, arguments in calls]
    return json.dumps(
        {"bfcl_category": json.loads(gold)["bfcl_category"], "mode": "fc", "result": result}
    )


@pytest.mark.parametrize("kind", ["numbers", "names"])
def test_every_swap_variant_of_simple_is_right_for_the_new_values_only(kind: str) -> None:
    """Over all of bfcl:simple: BFCL's checker takes the variant's own right answer, and turns
    down the original's; the variant plays what it says (its last message is its question)."""
    items = {item.id: item for item in samples(load_dataset("bfcl:simple"))}
    made = [v for v in variants("bfcl:simple", [kind]) if v.variant_of is not None]
    checked = 0
    for variant in made:
        original = items[variant.variant_of or ""]
        assert variant.messages and variant.messages[-1]["content"] == variant.question
        assert variant.question != original.question
        assert variant.metadata == original.metadata
        if not score_bfcl(right_calls(original.answer or ""), original.answer or "").correct:
            continue  # first_choices cannot write this entry's answer (nested choices)
        checked += 1
        assert score_bfcl(right_calls(variant.answer or ""), variant.answer or "").correct
        assert not score_bfcl(right_calls(original.answer or ""), variant.answer or "").correct
    assert checked > 0.9 * len(made) and checked >= 5


def test_a_numbers_variant_swaps_each_value_in_question_and_answers_alike() -> None:
    original, variant = variants("bfcl:simple", ["numbers"], limit=1)
    assert (
        original.question
        == "Find the area of a triangle with a base of 10 units and height of 5 units."
    )
    truth = json.loads(variant.answer or "")["ground_truth"][0]["calculate_triangle_area"]
    base, height = truth["base"][0], truth["height"][0]
    assert variant.question == (
        f"Find the area of a triangle with a base of {base} units and height of {height} units."
    )
    assert truth["unit"] == ["units", ""] and {base, height}.isdisjoint({10, 5})


def added(original: str | None, variant: str | None) -> bool:
    """Whether `variant` is `original` with one run of words put in, none changed."""
    old, new = (original or "").split(), (variant or "").split()
    start = next((i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), len(old))
    return len(new) > len(old) and new[:start] + new[start + len(new) - len(old) :] == old


def swappable(text: str, truth: Any, docs: Any = None) -> list[str]:
    return swaps.swappable([text], truth, docs or [])


def test_a_value_written_or_held_in_another_form_is_not_swapped() -> None:
    call = [{"f": {"length": [5], "field": [5]}}]
    assert swappable("a wire of 5m in a field of 5 Tesla", call) == []
    assert swappable("a wire of 5 m in a field of 5 Tesla", call) == ["5"]
    assert swappable("call it 10 times", [{"f": {"n": ["10L"]}}]) == []
    assert swappable("Write to John", [{"f": {"to": ["John"], "mail": ["john@x.org"]}}]) == []
    assert swappable("Write to John", [{"f": {"to": ["John"]}}]) == ["John"]


def test_a_value_the_answer_may_leave_out_or_the_docs_name_is_not_swapped() -> None:
    assert swappable("round to 2 places", [{"f": {"places": [2, ""]}}]) == []
    docs = [{"name": "f", "description": "places: 2 by default"}]
    assert swappable("round to 2 places", [{"f": {"places": [2]}}], docs) == []


def test_no_number_is_swapped_where_the_answers_hold_a_number_the_question_does_not_write() -> None:
    """The height may be computed from the base: a new base would leave it wrong."""
    truth = [{"area": {"base": [10], "height": [20]}}]
    assert swappable("a base of 10 and a height of twice that", truth) == []
    assert swappable("a base of 10 and a height of 20", truth) == ["10", "20"]


def test_a_swap_to_a_value_already_there_is_refused() -> None:
    original = next(bfcl_items("simple"))
    assert EDITS.swapped(original, {"10": "5"}) is None
    assert EDITS.swapped(original, {"10": "12"}) is not None
    assert EDITS.swapped(original, {"units": "feet"}) is None  # an answer may leave it out


@pytest.mark.parametrize(
    "dataset", ["bfcl:simple_java", "bfcl:irrelevance", "bfcl:multi_turn_base"]
)
def test_categories_without_python_values_to_swap_take_a_distractor_only(dataset: str) -> None:
    made = variants(dataset, KINDS, limit=4)
    assert [v.perturbation for v in made if v.perturbation] == ["distractor"] * 4


def test_a_multi_turn_distractor_is_what_the_first_turn_says() -> None:
    original, variant = variants("bfcl:multi_turn_base", ["distractor"], limit=1)
    first = variant.metadata["bfcl_entry"]["question"][0][0]
    assert first["content"] == variant.question != original.question
    assert added(original.question, variant.question)
    assert original.metadata["bfcl_entry"]["question"][0][0]["content"] == original.question
    assert variant.answer == original.answer


def test_agentdojo_refuses_numbers_and_names_and_adds_a_distractor_to_the_prompt() -> None:
    made = variants("agentdojo:banking", KINDS, limit=3)
    originals = [item for item in made if item.variant_of is None]
    counted = coverage(made, KINDS)
    assert [(c.kind, c.variants, c.originals) for c in counted] == [
        ("numbers", 0, 3), ("names", 0, 3), ("distractor", 3, 3),
    ]  # fmt: skip
    for original, variant in zip(originals, (v for v in made if v.variant_of), strict=True):
        assert variant.variant_of == original.id and variant.answer == original.answer
        assert variant.metadata == original.metadata
        assert added(original.question, variant.question)
        assert variant.question != original.question


def test_a_plug_in_kind_on_a_benchmark_is_named_as_unable_to_edit_it() -> None:
    with pytest.raises(DataError, match="rewrites a question and its answer"):
        variants("bfcl:simple", ["mypackage.perturbations:swap"], limit=1)


def test_the_variants_of_a_limited_run_are_those_of_the_whole_dataset() -> None:
    """Seeded per sample: the first entries' variants do not depend on what follows them."""
    whole = {v.id: dataclasses.asdict(v) for v in variants("bfcl:simple", KINDS)}
    first = variants("bfcl:simple", KINDS, limit=4)
    assert len(first) > 4
    assert [dataclasses.asdict(v) for v in first] == [whole[v.id] for v in first]
