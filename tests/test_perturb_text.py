"""`names` and `distractor` variants: the gold stays, the change is consistent and seeded."""

from __future__ import annotations

import json
import random
import re

from agent_eval.data import Sample
from agent_eval.perturb.distractor import add_distractor
from agent_eval.perturb.names import new_names
from tests.helpers.shared_data import gsm8k_path

JANET = Sample(
    "gsm8k-0",
    "Janet's ducks lay 16 eggs per day. She eats three for breakfast and bakes muffins with four. "
    "She sells the remainder for $2 per egg. How much in dollars does she make every day?",
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=18>>18.\n#### 18",
)
APPLES = Sample(
    "a",
    "Tom has 5 apples and Mary gives him 7 more apples. How many apples does Tom have?",
    "Tom has 5 + 7 = <<5+7=12>>12 apples after Mary's gift.\n#### 12",
)


def gsm8k() -> list[Sample]:
    rows = [json.loads(line) for line in gsm8k_path().read_text().splitlines()]
    return [Sample(f"gsm8k-{i}", row["question"], row["answer"]) for i, row in enumerate(rows)]


def test_names_are_swapped_alike_in_question_and_answer() -> None:
    variant = new_names(APPLES, random.Random(1))
    assert variant is not None
    assert "Tom" not in variant.question + variant.answer
    assert "Mary" not in variant.question + variant.answer
    assert "apple" not in variant.question + variant.answer
    tom = re.match(r"(\w+) has 5 (\w+) and (\w+) gives", variant.question)
    assert tom is not None
    person, thing, giver = tom.groups()
    assert variant.answer.startswith(f"{person} has 5 + 7 = <<5+7=12>>12 {thing} after {giver}'s")
    assert variant.question.endswith(f"does {person} have?")
    assert variant.answer.endswith("#### 12")


def test_nothing_to_swap_gives_no_variant() -> None:
    plain = Sample("p", "A box holds 5 balls. How many do 3 boxes hold?", "<<5*3=15>>15\n#### 15")
    assert new_names(plain, random.Random(0)) is None


def test_names_on_gsm8k_keep_the_gold_and_are_seeded() -> None:
    samples = gsm8k()[:300]
    variants = [new_names(s, random.Random(s.id)) for s in samples]
    assert variants == [new_names(s, random.Random(s.id)) for s in samples]
    made = [(s, v) for s, v in zip(samples, variants, strict=True) if v is not None]
    assert len(made) > 100
    for sample, variant in made:
        assert variant.question != sample.question
        assert variant.answer.rpartition("####")[2] == (sample.answer or "").rpartition("####")[2]


def test_the_distractor_is_one_sentence_before_the_question() -> None:
    variant = add_distractor(JANET, random.Random(2))
    assert variant is not None
    assert variant.answer == JANET.answer
    question = JANET.question or ""
    stem, _, asked = question.rpartition(". ")
    assert variant.question.startswith(stem + ". ")
    assert variant.question.endswith(" " + asked)
    added = variant.question[len(stem) + 2 : -len(asked) - 1]
    assert variant.question.count(added) == 1
    assert "Janet" in added
    assert re.search(r"\b\d+\b", added) and not {"16", "3", "4", "2", "9", "18"} & set(
        re.findall(r"\d+", added)
    )


def test_distractors_on_gsm8k_keep_the_gold_and_are_seeded() -> None:
    samples = gsm8k()[:300]
    variants = [add_distractor(s, random.Random(s.id)) for s in samples]
    assert variants == [add_distractor(s, random.Random(s.id)) for s in samples]
    for sample, variant in zip(samples, variants, strict=True):
        assert variant is not None
        assert variant.answer == sample.answer
        assert variant.question != sample.question
        assert len(variant.question) > len(sample.question or "")
    assert len({v.question for v in variants if v}) == len(samples)
