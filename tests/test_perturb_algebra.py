"""Unknowns solved from a solution's linear equation: recomputed only from known numbers."""

from __future__ import annotations

import random
import re
from fractions import Fraction

import pytest

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


def test_an_unknown_named_without_let_in_a_chain_is_solved() -> None:
    # "where X is the number of guests" names it; the equation starts after "equation".
    venues = "A costs 200 + 5*X, where X is the number of guests.\nWe get the equation "
    venues += "200 + 5*X = 25*X.\nSo 200 = 20*X.\nThen, X = 200/20 = 10 guests.\n#### 10"
    assert "X = 200/20 = <<((0)-(200))/(((5)*(1))-((25)*(1)))=10>>10 guests" in solved(
        venues, {Fraction(200), Fraction(5), Fraction(25)}
    )
    # A chain is its first side and its last: the 3 of 3V is the prose's own.
    votes = "Let V be the votes against.\nSo V + 2V = 3V = 33.\nThus V = 33 / 3 = <<33/3=11>>11"
    assert solved(votes, {Fraction(2), Fraction(33)}).endswith(
        "V = 33 / 3 = <<(33)/((1)+((2)*(1)))=11>>11"
    )


def test_a_dollar_and_a_percent_in_an_equation_are_numbers() -> None:
    book = "Let X be the original price. X - X*25% = $19.50.\nSo .75X = $19.50\nX = $26.\n#### 26"
    assert "X = $<<(19.50)/((1)-(((25)/(100))*(1)))=26>>26." in solved(
        book, {Fraction(25), Fraction("19.5"), Fraction(100)}
    )


def test_two_unknowns_are_solved_together_and_the_second_from_the_first() -> None:
    cubes = (
        "Let s be the strawberry cubes and b be the blueberry cubes. We know that b = 5s - 4 and "
        "s + b = 116.\nCombining, 6s - 4 = 116\nSo s = 20\nBack into b = 5s - 4, we get b = 96\n"
        "#### 96"
    )
    answer = solved(cubes, {Fraction(5), Fraction(4), Fraction(116)})
    p = "(((1)*(116))-((1)*((0)-(4))))/(((1)*(1))-((1)*((0)-((5)*(1)))))"
    assert f"So s = <<{p}=20>>20" in answer
    # b follows from the value s was given, as the solution works it out.
    assert "we get b = <<((116)-((1)*(20)))/(1)=96>>96" in answer


def test_a_multiple_of_the_unknown_stated_on_the_way_is_prose() -> None:
    insects = "Let B = Bodhi's insects\nB + B + 7 = 43\n2B = <<36=36>>36\nB = <<18=18>>18\n#### 18"
    assert solved(insects, {Fraction(7), Fraction(43)}).endswith(
        "2B = 36\nB = <<((43)-(7))/((1)+(1))=18>>18\n#### 18"
    )


@pytest.mark.parametrize(
    ("answer", "known"),
    [
        # 2 of x/2 is the question's 50% worked out in prose: it would stay when 50% changes.
        (
            "Let's say the dress was x cm.\nwhich is x+x/2 = 120\nThe length is x= 80 cm\n#### 80",
            (120, 20, 50, 100),
        ),
        # Two unknowns in one equation only: nothing to solve them together.
        ("Let x be Sam's and y be Harry's. We know that y + x = 100.\nSo x=20.\n#### 20", (100,)),
        # A thousands comma is part of its number: the equation is not m + h = 80.
        (
            "Let m be hers and h be his. We know m + h = 80,000 and m = 7h.\nSo h = 10\n#### 10",
            (80, 80000, 7),
        ),
        # The value the solution states is not what its equations give.
        (
            "Let c be the cupcakes and b be the brownies. b = 3c - 2, b + c = 10\nSo c = 4\n#### 4",
            (3, 2, 10),
        ),
    ],
)
def test_equations_that_do_not_give_the_stated_value_from_known_numbers_stay_prose(
    answer: str, known: tuple[int, ...]
) -> None:
    assert solved(answer, {Fraction(n) for n in known}) == answer


def test_a_two_unknown_solution_gets_numbers_variants_with_their_gold() -> None:
    fence = Sample(
        "x",
        "If Sam and Harry have 100 feet of fence between them, and they agree to split it with "
        "Harry getting 60 feet more than Sam, how much is left over for Sam?",
        "Let x be the amount of fence Sam gets and y be the amount Harry gets. We know that y = "
        "x + 60, and y + x = 100.\nSubstituting, we get 2x+60=100\nSo 2x=40\nleaving x=20. This "
        "means Sam has 20 feet of fence left over.\n#### 20",
    )
    variant = new_numbers(fence, random.Random(0))
    assert variant is not None
    total, more = (int(n) for n in re.findall(r"\d+", variant.question))
    assert (total, more) != (100, 60)
    assert Fraction(gold_answer(variant.answer) or "") == Fraction(total - more, 2)


def test_an_unknown_introduced_in_one_case_and_written_in_the_other_is_solved() -> None:
    fries = "If we let X be the fries Ginger gave, then 24-5-10-2+x=27\nThus, she gave x=20 fries"
    assert solved(fries, {Fraction(n) for n in (24, 5, 27)} | {Fraction(10), Fraction(2)}).endswith(
        "x=<<((27)-((((24)-(5))-(10))-(2)))/(1)=20>>20 fries"
    )


@pytest.mark.parametrize(
    "tail", ["(x " * 3000, "1 x " * 3000 + "= 3", "x+" * 3000 + "1 = x", "x = 1 = " * 2000]
)
def test_a_long_line_that_is_no_equation_stays_prose(tail: str) -> None:
    # Sides and chains are bounded, so such a line costs time in proportion to its length.
    answer = "Let x be the number. " + tail
    assert solved(answer, {Fraction(1), Fraction(3)}) == answer
