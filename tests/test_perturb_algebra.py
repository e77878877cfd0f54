"""Unknowns solved from a solution's linear equation: recomputed only from known numbers."""

from __future__ import annotations

import random
import re
from fractions import Fraction

from agent_eval.data import Sample
from agent_eval.perturb.algebra import solved
from agent_eval.perturb.numbers import new_numbers
from agent_eval.run.scoring import gold_answer

GRETCHEN = Sample(
    "x",
    "Gretchen has 110 coins. There are 30 more gold coins than silver coins. How many gold coins "
    "does Gretchen have?",
    "Let x be the number of silver coins Gretchen has\nGretchen has x+30 gold coins.\n"
    "x+x+30=110\n2*x=80\nx=<<40=40>>40\nGretchen has 40+30=<<40+30=70>>70 gold coins\n#### 70",
)


def test_the_stated_value_gets_the_annotation_that_solves_the_first_equation() -> None:
    answer = solved(GRETCHEN.answer or "", {Fraction(110), Fraction(30)})
    assert "x=<<((110)-(30))/((1)+(1))=40>>40" in answer
    assert "2*x=80" in answer


def test_a_value_stated_in_prose_is_annotated_and_both_sides_may_hold_the_unknown() -> None:
    answer = "Let x be his age.\n(x+9)*5=(x+47)*3\n5*x+45=3*x+141\nso x = 48 years."
    assert solved(answer, {Fraction(n) for n in (9, 5, 47, 3)}).endswith(
        "so x = <<(((3)*(47))-((5)*(9)))/(((5)*(1))-((3)*(1)))=48>>48 years."
    )


def test_an_equation_with_a_number_combined_in_prose_or_two_unknowns_is_not_solved() -> None:
    # 8 is 13 - 5 combined in prose: it would stay 8 when 13 changes.
    derived = "Let x be Adel's.\nStan: 4x-13\nTotal: x+4x-13+4x-8=339\nx=<<40=40>>40\n#### 40"
    assert solved(derived, {Fraction(n) for n in (4, 13, 5, 339)}) == derived
    two = "Let b be the big pool.\nb + 16 = 2*s\ns=<<8=8>>8\n#### 8"
    assert solved(two, {Fraction(16), Fraction(2)}) == two
    words = "Let x be the price.\nHalf of x+3 = 10 times 2\nx=<<17=17>>17\n#### 17"
    assert solved(words, {Fraction(3), Fraction(10), Fraction(2)}) == words


def test_an_algebra_solution_gets_numbers_variants_with_their_gold() -> None:
    variant = new_numbers(GRETCHEN, random.Random(0))
    assert variant is not None
    found = re.search(r"has (\d+) coins\. There are (\d+) more", variant.question)
    assert found is not None, variant.question
    total, more = (int(n) for n in found.groups())
    assert (total, more) != (110, 30)
    assert Fraction(gold_answer(variant.answer) or "") == Fraction(total - more, 2) + more


def test_an_algebra_solution_whose_equation_combines_question_numbers_is_refused() -> None:
    pokemon = Sample(
        "x",
        "Together they have caught 339 Pokemon. Alex has caught 5 more than Stan, and Stan has "
        "caught 13 less than 4 times as many as Adelwolfe has caught. How many has Stan caught?",
        "Let x represent the number of Pokemon Adelwolfe caught\nStan: 4x-13\n"
        "Alex: 5+(4x-13)=4x-8\nTotal: x+4x-13+4x-8=339\n9x-21=339\n9x=360\nx=<<40=40>>40 Pokemon\n"
        "Stan:4(40)-13=147 Pokemon\n#### 147",
    )
    assert new_numbers(pokemon, random.Random(0)) is None


def test_a_value_stated_after_prose_arithmetic_takes_the_equations_template() -> None:
    books = Sample(
        "x",
        "Together, Sofie, Anne, and Fawn have 85 books. If Sofie has 25 more books than Anne, and "
        "Anne has 12 fewer books than Fawn does, how many books does Fawn have?",
        "Let x = the number of books Anne has.\nThen x + 25 + x + 12 + x = 85\n3x + 37 = 85\n"
        "3x = 48\nx = 48 / 3 = <<48/3=16>>16 books\nFawn has 16 + 12 = <<16+12=28>>28 books.\n"
        "#### 28",
    )
    assert "x = 48 / 3 = <<((85)-((25)+(12)))/(((1)+(1))+(1))=16>>16 books" in solved(
        books.answer or "", {Fraction(n) for n in (85, 25, 12)}
    )
    variant = new_numbers(books, random.Random(0))
    assert variant is not None
    total, more, fewer = (int(n) for n in re.findall(r"\d+", variant.question))
    assert (total, more, fewer) != (85, 25, 12)
    assert Fraction(gold_answer(variant.answer) or "") == Fraction(total - more - fewer, 3) + fewer
