"""Annotations recovered from a solution's prose: only equations whose arithmetic computes."""

from __future__ import annotations

import random
import re
from fractions import Fraction

import pytest

from agent_eval.data import Sample
from agent_eval.perturb.numbers import new_numbers
from agent_eval.perturb.prose import annotated, arithmetic
from agent_eval.run.scoring import gold_answer


@pytest.mark.parametrize(
    ("prose", "recovered"),
    [
        ("the boots cost 99 + 5 = $104.", "the boots cost 99 + 5 = $<<99+5=104>>104."),
        ("Charlie has 54 \u2212 37 = 17 left", "Charlie has 54 \u2212 37 = <<54-37=17>>17 left"),
        ("the team won 22 \u2013 7 = 15 games", "the team won 22 \u2013 7 = <<22-7=15>>15 games"),
        ("1/2*400 = 200 pounds", "1/2*400 = <<1/2*400=200>>200 pounds"),
        ("20 x 3 = 60", "20 x 3 = <<20*3=60>>60"),
        ("(3 + 4) * 2 = 14 apples", "(3 + 4) * 2 = <<(3+4)*2=14>>14 apples"),
        ("$20/hour * 35 hours = $700", "$20/hour * 35 hours = $<<20*35=700>>700"),
        ("80 GB / 2 GB/minute = 40 minutes", "80 GB / 2 GB/minute = <<80/2=40>>40 minutes"),
        ("1,200 + 300 = 1,500", "1,200 + 300 = <<1200+300=1500>>1,500"),
        ("it is 12/20 x 100% = 60% of them", "it is 12/20 x 100% = <<12/20*100=60>>60% of them"),
        ("200 GB * 40% = 80 GB", "200 GB * 40% = <<200*40/100=80>>80 GB"),
        ("200 minus 174 equals 26.", "200 minus 174 equals <<200-174=26>>26."),
        ("the perimeter is 2(40+9) = 98", "the perimeter is 2(40+9) = <<2*(40+9)=98>>98"),
        ("(1/4)24 = 6 pints", "(1/4)24 = <<(1/4)*24=6>>6 pints"),
        ("1/2 (68) + 10 = 44 points", "1/2 (68) + 10 = <<1/2*(68)+10=44>>44 points"),
        ("Harry:5+2(3)=5+6=11 trees", "Harry:5+2(3)=5+6=<<5+2*(3)=11>>11 trees"),
        ("(1/2) 278 + 11 = 150 points", "(1/2) 278 + 11 = <<(1/2)*278+11=150>>150 points"),
        ("3 friends x 8 slices of pizza = 24", "3 friends x 8 slices of pizza = <<3*8=24>>24"),
        ("lost 9% per hour * 5 hours = 45%.", "lost 9% per hour * 5 hours = <<9*5=45>>45%."),
        ("2 years * 12 months per year = 24", "2 years * 12 months per year = <<2*12=24>>24"),
        ("65+94+81 = <<240=240>>240", "65+94+81 = <<65+94+81=240>>240"),
        ("5,000 + 1,000 = <<6000=6000>>6,000", "5,000 + 1,000 = <<5000+1000=6000>>6,000"),
        # A product of percents is a percent of the whole: each a hundredth, and the result too.
        ("20% * 40% = 8%", "20% * 40% = <<(20/100*40/100)*100=8>>8%"),
        ("100% - 80% = 20%", "100% - 80% = <<100-80=20>>20%"),
        # 120 begins a fraction there, no result: the chain ends at the percent.
        (
            "48 = 100% + 20% = 120% of the actual number = 120/100 of it",
            "48 = 100% + 20% = <<100+20=120>>120% of the actual number = 120/100 of it",
        ),
        (
            "160 used pieces of straw \u2013 70 pieces of straw for the hamsters and rabbits = 90",
            "160 used pieces of straw \u2013 70 pieces of straw for the hamsters and rabbits = "
            "<<160-70=90>>90",
        ),
    ],
)
def test_a_prose_equation_that_computes_gets_its_annotation(prose: str, recovered: str) -> None:
    assert annotated(prose) == recovered


@pytest.mark.parametrize(
    "prose",
    [
        "so 2+2 = 5 here",  # does not compute
        "4 + 4 = 8.5",
        "x+x+30=110",  # algebra: an unknown is no number
        "2*x=80",
        "3 times a week = 5",
        "5+2(3)=5+6=12",  # a chain whose arithmetic does not give its end
        "60g * 4/5 = 240g/5 = 48 grams",  # a chain through a one-letter unit
        "16 - 3 - 4 = <<16-3-4=9>>9 eggs",  # annotated already
        "5 x 10 = <<51=51>>51",  # a bare annotation the prose before it does not compute
        "x=<<40=40>>40",
        "He has 12 apples.",
        "5 / 0 = 0",
    ],
)
def test_an_equation_that_does_not_compute_stays_prose(prose: str) -> None:
    assert annotated(prose) == prose


def test_only_numbers_and_operators_make_arithmetic() -> None:
    assert arithmetic("$600/month * 12 months") == "600*12"
    assert arithmetic("3 hours - 1 hour") == "3-1"
    assert arithmetic("2 * L") is None


def test_a_solution_worked_in_prose_gets_numbers_variants_with_their_gold() -> None:
    sample = Sample(
        "x",
        "Gloria's first pair of heels costs $33 and the second $47. The boots cost $5 more than "
        "both pairs together. How many dollars are the boots?",
        "Both pairs cost 33 + 47 = $80.\nThe boots cost 80 + 5 = $85.\n#### 85",
    )
    variant = new_numbers(sample, random.Random(0))
    assert variant is not None
    first, second, more = (int(n) for n in _dollars(variant.question))
    assert (first, second, more) != (33, 47, 5)
    assert gold_answer(variant.answer) == str(first + second + more)
    total = first + second
    assert f"{first} + {second} = $<<{first}+{second}={total}>>{total}." in variant.answer


def test_a_solution_with_a_step_by_algebra_gets_no_variant() -> None:
    sample = Sample(
        "x",
        "Gretchen has 110 coins. There are 30 more gold coins than silver coins. How many gold "
        "coins does Gretchen have?",
        "x+x+30=110\n2*x=80\nx=<<40=40>>40\nGretchen has 40+30=<<40+30=70>>70 gold coins\n#### 70",
    )
    assert new_numbers(sample, random.Random(0)) is None


def test_a_percent_of_a_percent_is_recomputed_not_read_as_the_questions_hundredth() -> None:
    # 1% * 5% = 0.05% stayed prose, and 0.05 was read as the 5%'s hundredth: 7% gave 0.07.
    candles = Sample(
        "x",
        "Marcy makes candles that she markets as 99% guaranteed not to explode. 5% of the more "
        "dangerous candles also smell like wet dog. If she makes 50000 candles, how many of "
        "them will both smell like wet dog and explode?",
        "First find what percentage of the candles explode: 100% - 99% = 1%\nThen multiply: "
        "1% * 5% = 0.05%\nThen 0.05% * 50000 candles = <<0.05*0.01*50000=25>>25 candles\n#### 25",
    )
    variant = new_numbers(candles, random.Random(0))
    assert variant is not None
    found = re.search(r"as (\d+)% guaranteed.*\. (\d+)% of.*makes (\d+) candles", variant.question)
    assert found is not None, variant.question
    safe, smelly, made = (Fraction(n) for n in found.groups())
    assert (safe, smelly, made) != (99, 5, 50000)
    assert Fraction(gold_answer(variant.answer) or "") == (100 - safe) / 100 * smelly / 100 * made


def _dollars(question: str) -> list[str]:
    return [word.strip("$.,") for word in question.split() if word.startswith("$")]


@pytest.mark.parametrize(
    "line", ["1+" * 3000 + "1 = x", "(" * 3000 + "1", "1 + " + "1 abcd " * 3000 + "= 3"]
)
def test_a_long_line_that_is_no_step_stays_prose(line: str) -> None:
    # Terms and parentheses are bounded, so such a line costs time in proportion to its length.
    assert annotated(line) == line
