"""Unit conversions and cents a solution leaves to words: annotated only where a factor fits."""

from __future__ import annotations

import random
import re
from fractions import Fraction

import pytest

from agent_eval.data import Sample
from agent_eval.perturb.conversions import converted, in_cents
from agent_eval.perturb.numbers import new_numbers
from agent_eval.run.scoring import gold_answer

GAS = Sample(
    "x",
    "15 gallons of gas were equally divided into 5 different containers. Josey needed 1/4 of a "
    "container to run her lawnmower. How many pints of gasoline did Josey need?",
    "15 gallons = 120 pints\n120/5 = <<120/5=24>>24 pints per container\n"
    "(1/4)24 = <<(1/4)*24=6>>6 pints\nJosey needed 6 pints of gas for her lawnmower.\n#### 6",
)
JERKY = Sample(
    "y",
    "Archie buys beef jerky that comes 30 sticks to a bag and costs $18.00 per bag.  If Archie "
    "buys 1 bag while they're $3.00 off a bag, how much will each stick of jerky cost in cents?",
    "The bags are $18.00 with a $3.00 coupon so each bag is 18-3 = $<<18-3=15.00>>15.00\n"
    "The bag has 30 sticks of jerky and costs $15.00 so each stick will cost 15/30 = "
    "$<<15/30=0.5>>0.50\n#### 50",
)


@pytest.mark.parametrize(
    ("prose", "factors", "recovered"),
    [
        ("15 gallons = 120 pints", {8, 4}, "15 gallons = <<15*8=120>>120 pints"),
        ("48 quarts = 12 gallons\n", {4}, "48 quarts = <<48/4=12>>12 gallons\n"),
        (
            "Movie C = 1.25 hours = 75 minutes",
            {60},
            "Movie C = 1.25 hours = <<1.25*60=75>>75 minutes",
        ),
    ],
)
def test_a_conversion_by_a_factor_the_question_gives_is_annotated(
    prose: str, factors: set[int], recovered: str
) -> None:
    assert converted(prose, set(map(Fraction, factors))) == recovered


@pytest.mark.parametrize(
    ("prose", "factors"),
    [
        ("1 bug/2 ants * 50 ants = 25 bugs", {2}),  # the end of an expression, no conversion
        ("15 gallons = 120 pints", {4}),  # no factor gives it
        ("12 apples = 12 apples", {2}),  # no unit changes
        ("48 quarts = <<48/4=12>>12 gallons", {4}),  # annotated already
    ],
)
def test_a_conversion_no_single_factor_gives_stays_prose(prose: str, factors: set[int]) -> None:
    assert converted(prose, set(map(Fraction, factors))) == prose


def test_a_unit_converted_in_prose_is_recomputed() -> None:
    variant = new_numbers(GAS, random.Random(0))
    assert variant is not None
    gallons, containers = (int(n) for n in re.findall(r"\b\d+\b(?!/)", variant.question)[:2])
    assert (gallons, containers) != (15, 5)
    assert Fraction(gold_answer(variant.answer) or "") == Fraction(gallons * 8, containers * 4)


def test_the_cents_a_question_asks_for_follow_the_dollars_its_solution_ends_on() -> None:
    answer = in_cents(JERKY.answer or "", JERKY.question or "")
    assert answer.endswith("In cents: 0.5 * 100 = <<0.5*100=50>>50\n#### 50")
    variant = new_numbers(JERKY, random.Random(0))
    assert variant is not None
    sticks = re.search(r"(\d+) sticks", variant.question)
    assert sticks is not None, variant.question
    price, off = (Fraction(n) for n in re.findall(r"\$(\d+\.\d\d)", variant.question))
    assert Fraction(gold_answer(variant.answer) or "") == (price - off) / int(sticks[1]) * 100


def test_dollars_asked_in_dollars_or_already_in_cents_are_left_alone() -> None:
    dollars = "It costs 15/30 = $<<15/30=0.5>>0.50\n#### 0.5"
    assert in_cents(dollars, "How much in cents is it?") == dollars
    assert in_cents(JERKY.answer or "", "How many dollars does a stick cost?") == JERKY.answer
