"""`numbers` variants: every gold is what the variant's own rewritten annotations recompute to."""

from __future__ import annotations

import logging
import random
import re
from fractions import Fraction

from agent_eval.data import Sample
from agent_eval.perturb.base import Variant
from agent_eval.perturb.draws import multiples
from agent_eval.perturb.number_text import mentions
from agent_eval.perturb.numbers import new_numbers
from agent_eval.perturb.prose import annotated
from agent_eval.perturb.readings import Source, plausible
from agent_eval.run.scoring import gold_answer
from tests.helpers.gsm8k_variants import PerturbedGsm8k

WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ANNOTATION = re.compile(r"<<([^<>=]*)=([^<>=]*)>>")
TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+|\*\*|[-+*/()])")
QUESTION_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")

JANET = Sample(
    "gsm8k-0",
    "Janet\u2019s ducks lay 16 eggs per day. She eats three for breakfast every morning and bakes "
    "muffins for her friends every day with four. She sells the remainder at the farmers' market "
    "daily for $2 per fresh duck egg. How much in dollars does she make every day at the farmers' "
    "market?",
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\nShe makes 9 * 2 = $<<9*2=18>>18 "
    "every day at the farmer\u2019s market.\n#### 18",
)


def value(text: str) -> Fraction:
    """A recursive-descent evaluator of its own, so the check shares no code with the variant."""
    tokens = [t for t in TOKEN.findall(text)]
    assert "".join(tokens) == re.sub(r"\s", "", text), f"unexpected characters in {text!r}"
    position = 0

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def atom() -> Fraction:
        token = take()
        if token == "(":
            inner = total()
            assert take() == ")"
            return inner
        if token in "+-":
            return atom() if token == "+" else -atom()
        return Fraction(token)

    def power() -> Fraction:
        base = atom()
        return base ** int(power()) if peek() == "**" and take() else base

    def product() -> Fraction:
        result = power()
        while peek() in ("*", "/"):
            result = result * power() if take() == "*" else result / power()
        return result

    def total() -> Fraction:
        result = product()
        while peek() in ("+", "-"):
            result = result + product() if take() == "+" else result - product()
        return result

    result = total()
    assert peek() is None, f"trailing tokens in {text!r}"
    return result


def steps(answer: str) -> list[tuple[str, Fraction]]:
    return [
        (expr, Fraction(result.replace(",", ""))) for expr, result in ANNOTATION.findall(answer)
    ]


def operands(expression: str) -> list[Fraction]:
    return [Fraction(n) for n in re.findall(r"\d+(?:\.\d+)?|\.\d+", expression)]


def question_values(question: str) -> set[Fraction]:
    """The numbers a question writes in digits, and those it writes as words up to twenty."""
    digits = {Fraction(n.replace(",", "")) for n in QUESTION_NUMBER.findall(question)}
    words = {
        Fraction(WORDS.index(w) if w in WORDS else 20 + 10 * TENS.index(w))
        for w in re.findall(r"[a-z]+", question.lower())
        if w in WORDS or w in TENS
    }
    compounds = re.findall(rf"\b({'|'.join(TENS)})-({'|'.join(WORDS[1:10])})\b", question.lower())
    return (
        digits | words | {Fraction(10 * TENS.index(t) + 20 + WORDS.index(u)) for t, u in compounds}
    )


def check_variant(original: Sample, variant_question: str, variant_answer: str) -> None:
    """The variant's annotations recompute, its gold is the same step's result as the original's,
    and it writes new numbers in its question."""
    assert original.answer is not None and original.question is not None
    old_steps = steps(annotated(original.answer, original.question))
    new_steps = steps(variant_answer)
    assert len(new_steps) == len(old_steps)
    for expression, result in new_steps:
        assert value(expression) == result, f"{original.id}: {expression} is not {result}"
    given = question_values(variant_question)
    for index, ((old, _), (new, _)) in enumerate(zip(old_steps, new_steps, strict=True)):
        earlier = {result for _, result in new_steps[:index]}
        for was, now in zip(operands(old), operands(new), strict=True):
            # Each operand is the solution's own constant, a question number, or a result.
            known = {was} | given | {n / 100 for n in given} | earlier
            assert now in known, f"{original.id}: {now} in {new} comes from nowhere"
    old_gold = Fraction(gold_answer(original.answer) or "")
    final = max(i for i, (_, result) in enumerate(old_steps) if result == old_gold)
    assert Fraction(gold_answer(variant_answer) or "") == new_steps[final][1], original.id
    assert numbers_written(original.question) != numbers_written(variant_question), original.id


def checked_variants(sample: Sample, seeds: int = 3) -> list[Variant]:
    """The sample's variant with each seed, each checked to replay to its gold."""
    found = [new_numbers(sample, random.Random(seed)) for seed in range(seeds)]
    assert None not in found, sample.id
    variants = [variant for variant in found if variant is not None]
    for variant in variants:
        check_variant(sample, variant.question, variant.answer)
    return variants


def numbers_written(question: str) -> list[str]:
    """The question's numbers in order, in digits or as words: a variant changes one at least."""
    return re.findall(rf"\d[\d.,]*|\.\d+|\b(?:{'|'.join(WORDS + TENS)})\b", question.lower())


def test_every_gsm8k_variant_replays_to_its_gold(gsm8k_variants: PerturbedGsm8k) -> None:
    originals = {sample.id: sample for sample in gsm8k_variants.originals}
    variants = gsm8k_variants.variants("numbers")
    for variant in variants:
        assert variant.variant_of is not None and variant.question and variant.answer
        check_variant(originals[variant.variant_of], variant.question, variant.answer)
    refusals = gsm8k_variants.refusals
    logging.getLogger(__name__).info(
        "%d of %d recomputed; the rest: %s", len(variants), len(originals), refusals
    )
    assert len(variants) + sum(refusals.values()) == len(originals)
    assert len(variants) >= 1_173, refusals.most_common(5)


def test_the_same_seed_gives_the_same_variant_and_another_seed_other_numbers(
    gsm8k_variants: PerturbedGsm8k,
) -> None:
    samples = gsm8k_variants.originals[:120]
    first = [new_numbers(s, random.Random(7)) for s in samples]
    assert first == [new_numbers(s, random.Random(7)) for s in samples]
    other = [new_numbers(s, random.Random(8)) for s in samples]
    pairs = [(a, b) for a, b in zip(first, other, strict=True) if a and b]
    assert len(pairs) > 50
    assert sum(a.question != b.question for a, b in pairs) > 0.6 * len(pairs)


def test_janets_ducks_get_their_gold_recomputed() -> None:
    variant = new_numbers(JANET, random.Random(0))
    assert variant is not None
    eggs, eaten, baked, price = (
        int(n) if n.isdigit() else WORDS.index(n.lower())
        for n in re.search(
            r"lay (\d+) eggs.*eats (\w+) for.*with (\w+)\..*for \$(\d+) per", variant.question
        ).groups()  # type: ignore[union-attr]
    )
    assert (eggs, eaten, baked, price) != (16, 3, 4, 2)
    assert gold_answer(variant.answer) == str((eggs - eaten - baked) * price)
    assert f"<<{eggs}-{eaten}-{baked}={eggs - eaten - baked}>>" in variant.answer


def test_a_solution_that_does_not_replay_gets_no_variant() -> None:
    wrong = Sample("x", "Tom has 5 apples and buys 7 more. How many?", "5+7=<<5+7=13>>13\n#### 13")
    unworked = Sample("y", "Tom has 5 apples and buys 7 more. How many?", "He has 12.\n#### 12")
    other_final = Sample(
        "z", "Tom has 5 apples and buys 7 more. How many?", "<<5+7=12>>12\n#### 11"
    )
    for sample in (wrong, unworked, other_final):
        assert new_numbers(sample, random.Random(0)) is None


def test_numbers_keep_their_form_in_the_question() -> None:
    sample = Sample(
        "x",
        "A house costs $80,000 and rises by 25% after repairs of $12.50 a day for 14 days. "
        "What is it worth?",
        "80000*25/100=<<80000*25/100=20000>>20000\n12.50*14=<<12.50*14=175>>175\n"
        "80000+20000+175=<<80000+20000+175=100175>>100175\n#### 100175",
    )
    variant = new_numbers(sample, random.Random(3))
    assert variant is not None
    found = re.search(
        r"\$(\d{2},000) and rises by (\d+)% after repairs of \$(\d+\.\d\d) a day for (\d+) days",
        variant.question,
    )
    assert found is not None, variant.question
    check_variant(sample, variant.question, variant.answer)


def test_the_gold_is_the_step_the_final_answer_names_not_the_last() -> None:
    checked = Sample(
        "x",
        "Tom has 5 apples and buys 7 more. How many apples does he have?",
        "5+7=<<5+7=12>>12 apples\nCheck: 12-7=<<12-7=5>>5\n#### 12",
    )
    variant = new_numbers(checked, random.Random(0))
    assert variant is not None
    bought = [int(n) for n in re.findall(r"\d+", variant.question)]
    assert gold_answer(variant.answer) == str(sum(bought))
    check_variant(checked, variant.question, variant.answer)


def test_a_number_read_both_as_the_questions_and_as_a_result_keeps_the_two_alike() -> None:
    # 20 is the weekday's miles and 2 x 10, the weekend's: whichever 100 + 20 adds, it holds.
    pancho = Sample(
        "x",
        "Pancho walks 20 miles a day. Except on weekends when he walks 10 miles. How many miles "
        "does he walk in a week?",
        "He walks 100 miles during the weekdays because 5 x 20 = <<5*20=100>>100\n"
        "He walks 20 miles on the weekend because 2 x 10 = <<2*10=20>>20\n"
        "He walks 120 miles total because 100 + 20 = <<100+20=120>>120\n#### 120",
    )
    variant = new_numbers(pancho, random.Random(0))
    assert variant is not None
    found = re.search(r"walks (\d+) miles a day.*walks (\d+) miles", variant.question)
    assert found is not None, variant.question
    weekday, weekend = (int(n) for n in found.groups())
    assert (weekday, weekend) != (20, 10) and weekday == 2 * weekend
    assert gold_answer(variant.answer) == str(5 * weekday + 2 * weekend)
    check_variant(pancho, variant.question, variant.answer)


def test_a_value_the_question_writes_in_a_ratio_or_fraction_stays_a_constant() -> None:
    ratio = Sample(
        "x",
        "Darrell and Allen's ages are in the ratio of 7:11. If their total age now is 162, "
        "calculate Allen's age 10 years from now.",
        "The total ratio is 7+11= <<7+11=18>>18\nAllen is 11/18*162 = <<11/18*162=99>>99\n"
        "In 10 years he will be 99+10 = <<99+10=109>>109 years old\n#### 109",
    )
    variant = new_numbers(ratio, random.Random(0))
    assert variant is not None
    found = re.search(
        r"ratio of 7:11\. If their total age now is (\d+).* (\d+) years", variant.question
    )
    assert found is not None, variant.question
    total, later = (int(n) for n in found.groups())
    assert gold_answer(variant.answer) == str(Fraction(11, 18) * total + later)
    check_variant(ratio, variant.question, variant.answer)


def test_a_percent_of_a_number_that_stays_is_a_constant_and_cents_give_their_hundredth() -> None:
    trees = Sample(
        "x",
        "Tom plants 12 trees a year. He starts with 50 trees. After 10 years 30% of the trees "
        "die. How many trees does he have left?",
        "He gets 12*10=<<12*10=120>>120 new trees\nSo he had 120+50=<<120+50=170>>170 trees\n"
        "He lost 170*.3=<<170*.3=51>>51 trees\nHe has 170-51=<<170-51=119>>119 trees\n#### 119",
    )
    apples = Sample(
        "y",
        "Becky bought 20 apples for 45 cents each. How many dollars did she pay?",
        "She paid 20 x $0.45 = $<<20*0.45=9>>9\n#### 9",
    )
    for sample in (trees, apples):
        variant = new_numbers(sample, random.Random(1))
        assert variant is not None, sample.id
        check_variant(sample, variant.question, variant.answer)
    assert "30% of the trees" in new_numbers(trees, random.Random(1)).question  # type: ignore[union-attr]
    bought = new_numbers(apples, random.Random(1))
    assert bought is not None
    count, cents = (int(n) for n in re.findall(r"\d+", bought.question))
    assert Fraction(gold_answer(bought.answer) or "") == Fraction(count * cents, 100)


def test_a_number_written_against_its_unit_varies() -> None:
    prince = Sample(
        "x",
        "Prince sells 15kg of meat every hour he works, and he works 10 hours a day. A bull "
        "weighs 750kg. How many days will it take Prince to sell the meat from the bull?",
        "In a day he sells 15 * 10 = <<15*10=150>>150kg of meat.\n"
        "It takes 750 / 150 = <<750/150=5>>5 days.\n#### 5",
    )
    variant = new_numbers(prince, random.Random(0))
    assert variant is not None
    found = re.search(r"sells (\d+)kg.*works (\d+) hours.*weighs (\d+)kg", variant.question)
    assert found is not None, variant.question
    meat, hours, bull = (int(n) for n in found.groups())
    assert Fraction(gold_answer(variant.answer) or "") == Fraction(bull, meat * hours)
    check_variant(prince, variant.question, variant.answer)


def test_a_day_or_a_dollar_alone_no_longer_keeps_30_24_or_100_from_varying() -> None:
    gerald = Sample(
        "x",
        "Gerald earns $30 every day. He worked for an entire week and spent a total of $100. "
        "How much does he have left?",
        "He earns $30*7 = $<<30*7=210>>210\nHe is left with $210-$100 = $<<210-100=110>>110\n"
        "#### 110",
    )
    variant = new_numbers(gerald, random.Random(0))
    assert variant is not None
    earned, spent = (int(n) for n in re.findall(r"\$(\d+)", variant.question))
    assert (earned, spent) != (30, 100)
    assert gold_answer(variant.answer) == str(7 * earned - spent)
    check_variant(gerald, variant.question, variant.answer)


def test_a_number_a_cue_word_may_bring_too_is_read_once_as_the_questions() -> None:
    # 30 pages and June's 30 days, 24 hours a candle burns and a week's 7 days, $100 and the
    # 100 cents a dollar: the question's number is read once, the cue's value the rest.
    june = Sample(
        "x",
        "Ana reads 30 pages every day in June. How many pages does she read?",
        "She reads 30*30=<<30*30=900>>900 pages\n#### 900",
    )
    hours = Sample(
        "y",
        "A candle burns 24 hours a day. How many hours does it burn in a week?",
        "It burns 24*7=<<24*7=168>>168 hours\n#### 168",
    )
    cents = Sample(
        "z",
        "Ben has $100. How many cents does he have?",
        "He has 100*100=<<100*100=10000>>10000 cents\n#### 10000",
    )
    # gsm8k-1224: Monday's 2 inches and "twice" in 2*2, then 1 more inch.
    rain = Sample(
        "w",
        "It rained 2 inches on Monday and is expected to rain 1 more inch than twice of "
        "Monday's total on Tuesday. How many inches of rain will there be on Tuesday?",
        "Twice as much rain as Monday is 2 inches * 2 = <<2*2=4>>4 inches\n"
        "It will rain 1 more inch than this value on Tuesday so 4 inches + 1 = <<4+1=5>>5 "
        "inches on Tuesday\n#### 5",
    )
    golds = {"x": lambda n: n * 30, "y": lambda n: n * 7, "z": lambda n: n * 100}
    golds["w"] = lambda n: 2 * n + 1
    for sample in (june, hours, cents, rain):
        for seed in range(3):
            variant = new_numbers(sample, random.Random(seed))
            assert variant is not None, sample.id
            (given,) = (int(n) for n in re.findall(r"\d+", variant.question) if n != "1")
            assert given != int(re.findall(r"\d+", sample.question or "")[0]), sample.id
            assert gold_answer(variant.answer) == str(golds[sample.id](given)), variant
            check_variant(sample, variant.question, variant.answer)


def test_a_number_a_cue_word_may_bring_stays_refused_where_readings_differ() -> None:
    # gsm8k-1: 2/2 then 2+1, the robe's 2 bolts read twice and half's 2 once: readings that
    # read the question's 2 once disagree on every new value.
    robe = Sample(
        "x",
        "A robe takes 2 bolts of blue fiber and half that much white fiber.  How many bolts in "
        "total does it take?",
        "It takes 2/2=<<2/2=1>>1 bolt of white fiber\nSo the total amount of fabric is "
        "2+1=<<2+1=3>>3 bolts of fabric\n#### 3",
    )
    # gsm8k-372: Thursday's 2 hours in 1+2 and "twice" in 2*1 cannot be told apart.
    dance = Sample(
        "y",
        "Hallie had dance practice for 1 hour on Tuesdays and 2 hours on Thursdays.  On "
        "Saturdays, she had dance practice that lasted twice as long as Tuesday's night class.  "
        "How many hours a week did she have dance practice?",
        "She practiced for 1+2 = <<1+2=3>>3 hours\nOn Saturday she danced 2*1 = <<2*1=2>>2 "
        "hours\nIn all 3+2 = <<3+2=5>>5 hours\n#### 5",
    )
    # .4 is 1 - 60%: a derived value, not the question's, so the item is refused.
    men = Sample(
        "w",
        "Of 80 riders, 60% are women. How many are men?",
        "80 x .4 = <<80*.4=32>>32\n#### 32",
    )
    for sample in (robe, dance, men):
        assert all(new_numbers(sample, random.Random(seed)) is None for seed in range(5))


def test_a_constant_a_varied_number_may_have_given_is_refused() -> None:
    # Each gold was wrong while these constants were taken as the solution's own: 24 is
    # 18 + 6 worked in prose, 10 is 2 * 5 stated after algebra.
    squares = Sample(
        "y",
        "A quilt has 14 red squares, 4 more blue squares than red ones, and 6 more green "
        "squares than blue ones. How many squares are blue or green?",
        "There are 14+4=<<14+4=18>>18 blue squares.\nThere are 24 green squares.\n"
        "In all 18+24 = <<18+24=42>>42 squares\n#### 42",
    )
    jerry = Sample(
        "z",
        "Jerry is twice as old as he was 5 years ago. How old will Jerry be in 3 years?",
        "Jerry's Age = 2 Jerry's age - 10\nTherefore Jerry's Age = <<10=10>>10\n"
        "In three years Jerry will be 10 + 3 = <<10+3=13>>13\n#### 13",
    )
    for sample in (squares, jerry):
        assert new_numbers(sample, random.Random(0)) is None, sample.id


def test_a_knowledge_constant_a_word_cues_stays_and_the_rest_varies() -> None:
    # 5 weekdays and 2 weekend days: a question number 5 stays, as it may be either.
    carrots = Sample(
        "x",
        "Mason eats 4 carrots each on weekdays and 5 carrots each on Saturday and Sunday. How "
        "many carrots does he eat a week?",
        "He eats 4 x 5 =<<4*5=20>>20 on weekdays.\nHe eats 5 x 2= <<5*2=10>>10 over weekends.\n"
        "So he eats 20 + 10 = <<20+10=30>>30 a week\n#### 30",
    )
    variant = new_numbers(carrots, random.Random(0))
    assert variant is not None
    weekday, weekend = (int(n) for n in re.findall(r"\d+", variant.question))
    assert weekend == 5 and weekday != 4
    assert gold_answer(variant.answer) == str(weekday * 5 + weekend * 2)
    check_variant(carrots, variant.question, variant.answer)


def test_a_number_no_round_neighbour_fits_is_drawn_with_any_digits() -> None:
    # $30 to $90 in tens: none is whole both in quarters and in thirds; $36, $48, $72 ... are.
    money = Sample(
        "x",
        "Maggie spent a quarter of her money, while Riza spent one-third of her money. They each "
        "had $60. How much money do the two of them have left?",
        "Maggie spent $60/4 = $<<60/4=15>>15.\nSo, Maggie is left with $60 - $15 = $<<60-15=45>>45."
        "\nRiza spent $60/3 = $<<60/3=20>>20.\nSo, Riza is left with $60 - $20 = $<<60-20=40>>40.\n"
        "Thus, they have a total of $45 + $40 = $<<45+40=85>>85 left.\n#### 85",
    )
    variant = new_numbers(money, random.Random(0))
    assert variant is not None
    (each,) = (int(n) for n in re.findall(r"\$(\d+)", variant.question))
    assert each != 60 and each % 12 == 0 and 30 <= each <= 99
    assert gold_answer(variant.answer) == str(each - each // 4 + each - each // 3)
    check_variant(money, variant.question, variant.answer)


def test_a_number_a_constant_is_one_off_stays_and_the_rest_vary() -> None:
    # 100 / 5 when Jeff gets 4 times as much: 5 may be 4 + 1, so the 4 stays (5 became 8 when
    # 4 became 7 while the 5 was taken for the solution's own). gsm8k-334: the 4 who share the
    # guns is one off Richard's 5, which stays; the 4 holds whichever it is.
    shares = Sample(
        "x",
        "Jeff and Brad divide 100 dollars. Jeff gets 4 times as much as Brad. What does Jeff get?",
        "Brad gets 100/5=<<100/5=20>>20 dollars.\nJeff gets 20*4=<<20*4=80>>80 dollars.\n#### 80",
    )
    guns = Sample(
        "y",
        "Nick, Richard, Jason and DJ each have paintball guns. DJ has 8 guns, Nick has 10 guns, "
        "RJ has 1 gun and Richard has 5 guns. If they were to share their guns equally, how "
        "many guns would each of them have?",
        "The total number of guns is 8+10+1+5=<<8+10+1+5=24>>24 guns.\n"
        "They would each have 24/4=<<24/4=6>>6 guns.\n#### 6",
    )
    for split in checked_variants(shares):
        total, times = (int(n) for n in re.findall(r"\d+", split.question))
        assert times == 4 and total != 100
        assert gold_answer(split.answer) == str(total * 4 // 5)
    for shared in checked_variants(guns):
        dj, nick, rj, richard = (int(n) for n in re.findall(r"\d+", shared.question))
        assert (rj, richard) == (1, 5) and (dj, nick) != (8, 10)
        assert gold_answer(shared.answer) == str((dj + nick + rj + richard) // 4)


def test_a_constant_one_off_an_earlier_result_keeps_that_result() -> None:
    # 8 bottles leave 7 gaps: 7 stayed 7 when 24 / 3 gave 6 bottles, a wrong gold. Now 24 / 3
    # must still give 8, so that 7 holds whether the solution counted it or took 8 - 1.
    bottles = Sample(
        "x",
        "Richard's driveway is 24 feet wide and he puts a bottle of soda every 3 feet. It takes "
        "him 5 seconds to go from one bottle to the next. How many seconds does it take?",
        "There are 24 / 3 feet between each bottle = <<24/3=8>>8 bottles.\n"
        "It will take him 5 seconds x 7 bottles = 35 seconds total.\n#### 35",
    )
    variants = [new_numbers(bottles, random.Random(seed)) for seed in range(10)]
    found = [variant for variant in variants if variant is not None]
    assert found
    for variant in found:
        wide, every, seconds = (int(n) for n in re.findall(r"\d+", variant.question))
        assert wide == 8 * every and (wide, every, seconds) != (24, 3, 5)
        assert gold_answer(variant.answer) == str(seconds * 7)
        check_variant(bottles, variant.question, variant.answer)


def test_a_value_written_twice_takes_one_new_value_everywhere() -> None:
    # Tim's 12 more and Sam's 12: 12 + 12 may read either, so both take one new value (a tie)
    # and every reading gives the same gold.
    marbles = Sample(
        "x",
        "Sam has 12 marbles. Tim has 12 more marbles than Sam. How many marbles do they have?",
        "Tim has 12+12=<<12+12=24>>24 marbles.\nTogether they have 12+24=<<12+24=36>>36 marbles."
        "\n#### 36",
    )
    for variant in checked_variants(marbles):
        sam, more = (int(n) for n in re.findall(r"\d+", variant.question))
        assert sam == more != 12
        assert gold_answer(variant.answer) == str(3 * sam)


def test_a_small_count_the_solution_reads_twice_stays() -> None:
    # gsm8k-1274: 12*2 is the solution's 2 parents, 2*3 the question's 2 popcorns; varying the
    # 2 made 11*3 for the parents. gsm8k-1300: 7-2 is Sunday and Wednesday, 60*2 the 2 weeks.
    cinema = Sample(
        "x",
        "A family of parents and a child go to the cinema. The cost of an adult ticket is $12 "
        "and a child ticket is $8. Then they buy 2 popcorns for $3 each. How many dollars do "
        "they pay in total?",
        "Adult tickets cost 12*2=$<<12*2=24>>24\nPopcorns cost 2*3=$<<2*3=6>>6\n"
        "They pay 24+8+6=$<<24+8+6=38>>38 in total.\n#### 38",
    )
    for variant in checked_variants(cinema):
        adult, child, popcorns, each = (int(n) for n in re.findall(r"\d+", variant.question))
        assert popcorns == 2 and (adult, child, each) != (12, 8, 3)
        assert gold_answer(variant.answer) == str(2 * adult + child + 2 * each)


def test_a_constant_a_negative_result_may_be_the_minus_of_is_refused() -> None:
    # gsm8k-1042: 9 / 3 divides the 9 that 11 - 20 = -9 lost: it stayed 9 when -9 became -5.
    races = Sample(
        "x",
        "On the first race, he lost $5. On the second race, he won $1 more than twice the "
        "amount he previously lost. On the third race, he lost 1.5 times as much as he won in "
        "the second race. How much did he lose on average?",
        "He won $11 because 1+ 5 x 2 = <<1+5*2=11>>11\nHe lost $15 because 10 x 1.5 = "
        "<<10*1.5=15>>15\nHe lost $20 because 15 + 5 = <<15+5=20>>20\nHe lost $9 because "
        "11 - 20 = <<11-20=-9>>-9\nHe lost $3 per race because 9 / 3 = <<9/3=3>>3\n#### 3",
    )
    assert all(new_numbers(races, random.Random(seed)) is None for seed in range(5))


def test_a_constant_the_prose_works_out_is_refused() -> None:
    # 8 is 2/3 of 12 worked out in words: it would stay 8 when the 12 slices change.
    pizza = Sample(
        "x",
        "Bryce and four of his friends each ordered a pizza. Each pizza had 12 slices. Bryce and "
        "two friends ate 2/3 of their pizzas. How many slices were left?",
        "There were 5 pizzas x 12 slices per pizza = <<5*12=60>>60 slices.\n"
        "2/3 of a pizza with 12 slices is 8/12 because 2/3 x 4/4 = 8/12.\n"
        "So 3 friends x 8 slices = <<3*8=24>>24 slices.\n60 - 24 = <<60-24=36>>36 left.\n#### 36",
    )
    # 1 is $1.17 rounded in words: 117 cents = $1.
    lollipops = Sample(
        "y",
        "Marisa gets $5 every day. She buys 4 lollipops worth 25 cents each every day and saves "
        "the change. How much does she save in 5 days?",
        "4 lollipops cost 4 * 25 cents = <<4*25=100>>100 cents\nSince 100 cents = $1 she spends "
        "$1 everyday.\nShe saves $5 - $1 = $<<5-1=4>>4\nIn 5 days: $4 * 5 = $<<4*5=20>>20\n#### 20",
    )
    for sample in (pizza, lollipops):
        assert new_numbers(sample, random.Random(0)) is None, sample.id


def test_a_small_count_written_twice_stays() -> None:
    # The guests' 2 bottles are worked as 70+70: varying both 2s alike gave 50+50 for 3 each.
    water = Sample(
        "x",
        "Bill started out with 2 cases of water which have 24 bottles each. He has 70 guests, "
        "and he wants to have 2 bottles of water for each guest. How many more bottles does he "
        "need?",
        "Bill has 24 * 2 = <<2*24=48>>48 bottles of water\nHe needs 70+70 = <<70+70=140>>140 "
        "bottles of water.\nHe needs to buy 140- 48 = <<140-48=92>>92 bottles of water.\n#### 92",
    )
    variant = new_numbers(water, random.Random(0))
    assert variant is not None
    cases, bottles, guests, each = (int(n) for n in re.findall(r"\d+", variant.question))
    assert (cases, each) == (2, 2) and (bottles, guests) != (24, 70)
    assert gold_answer(variant.answer) == str(guests * 2 - cases * bottles)
    check_variant(water, variant.question, variant.answer)


def test_shares_of_a_whole_and_a_count_an_ordinal_names_stay() -> None:
    # 50% boys and 50% girls: new percents would not add up to the school.
    school = Sample(
        "x",
        "Each class in a school has 20 students. There are 3 classes. The school as a whole is "
        "50% boys and 50% girls. The first class has 15 girls. The second class has 12 girls. "
        "How many boys are in the third class?",
        "The school has 60 students because 3 x 20 = <<3*20=60>>60\n"
        "The school has 30 girls because 60 x .5 = <<60*.5=30>>30\n"
        "The third class has 3 girls because 30 - 15 - 12 = <<30-15-12=3>>3\n"
        "The third class has 17 boys because 20 - 3 = <<20-3=17>>17\n#### 17",
    )
    variant = new_numbers(school, random.Random(0))
    assert variant is not None
    assert "50% boys and 50% girls" in variant.question
    size, classes, first, second = (
        int(n) for n in re.findall(r"\d+", variant.question.replace("50%", ""))
    )
    assert classes == 3  # the "third class" counts them too
    assert gold_answer(variant.answer) == str(size - (size * classes // 2 - first - second))
    check_variant(school, variant.question, variant.answer)


def test_a_count_written_twice_with_two_meanings_keeps_both() -> None:
    # 4 dogs and the second's 4 miles: 7 dogs of which the last walks 21 - 11 was a wrong gold.
    dogs = Sample(
        "x",
        "Bernie has 4 dogs. The first needs to walk 1 mile. The second needs to walk 4 miles. The "
        "third needs to walk 3 miles. On average, they need to walk 3 miles per day. How many "
        "miles does the last dog need?",
        "The total walk distance must be 12 miles because 4 x 3 = <<4*3=12>>12\n"
        "The first three walk a total of 8 miles because 1 + 4 + 3 = <<1+4+3=8>>8\n"
        "The last one needs 4 miles because 12 - 8 = <<12-8=4>>4\n#### 4",
    )
    assert new_numbers(dogs, random.Random(0)) is None


def test_a_value_that_stays_and_is_also_a_result_must_keep_both_readings() -> None:
    # James's "four times" is the 4 that 12 / 3 also gives: it became 8 * 8 when 12 became 16.
    # Read whole, 4 * 4 is Dorothy's friends times the question's four, in either order.
    friends = Sample(
        "x",
        "Charlie has three times as many Facebook friends as Dorothy. James has four times as "
        "many friends on Facebook as Dorothy. If Charlie has 12 friends on Facebook, how many "
        "Facebook friends does James have?",
        "Dorothy has 12 / 3 = <<12/3=4>>4 Facebook friends.\n"
        "James has 4 * 4 = <<4*4=16>>16 Facebook friends.\n#### 16",
    )
    for seed in range(5):
        variant = new_numbers(friends, random.Random(seed))
        assert variant is not None
        found = re.search(r"has (\w+) times.*four times.*has (\d+) friends", variant.question)
        assert found is not None, variant.question
        times, charlie = WORDS.index(found[1].lower()), int(found[2])
        assert gold_answer(variant.answer) == str(4 * charlie // times)
        check_variant(friends, variant.question, variant.answer)


def test_a_reading_that_leaves_a_result_unused_is_dropped() -> None:
    # 6+4 reads the 2+4 rides and the 2+2 luge rides, never the 6 tickets: in any other
    # reading a result goes unused, so the tickets vary apart from the rides.
    carnival = Sample(
        "x",
        "Pam and Fred went to a carnival. Pam rode the roller coaster 2 times while Fred rode it "
        "4 times. After that, each of them decided to ride the luge 2 times. If each ride cost 6 "
        "tickets, how many tickets did they use that day?",
        "The total times that they ride the roller coaster is 2+4=<<2+4=6>>6 times.\n"
        "The total times that they ride the luge is 2+2=<<2+2=4>>4 times.\n"
        "The total times they ride that day is 6+4=<<6+4=10>>10 times.\n"
        "So, Pam and Fred used 10x6=<<10*6=60>>60 tickets that day.\n#### 60",
    )
    # 4*7 reads the 6+1 hours, not a week's 7 days, which would leave 6+1 unused; but
    # Monday's 8 hours are read twice (8-2, 8+12+28), where a solution's own 8 could be one
    # of them, so the 8 stays and nothing varies.
    sleep = Sample(
        "y",
        "Sadie slept 8 hours on Monday. For the next two days, she slept 2 hours less, each. If "
        "the rest of the week she slept 1 hour more than those two days, how many hours did she "
        "sleep in total throughout the week?",
        "She slept 8-2 = <<8-2=6>>6 hours on each of the next two days.\n"
        "The two days make 6*2 = <<6*2=12>>12 hours.\nEach day after she slept 6+1 = <<6+1=7>>7 "
        "hours.\nThe rest of the week makes 4*7 = <<4*7=28>>28 hours.\n"
        "In all 8+12+28 = <<8+12+28=48>>48 hours.\n#### 48",
    )
    for seed in range(3):
        rides = new_numbers(carnival, random.Random(seed))
        assert rides is not None
        pam, fred, luge, tickets = (int(n) for n in re.findall(r"\d+", rides.question))
        assert (pam, luge) == (2, 2) and (fred, tickets) != (4, 6)
        assert gold_answer(rides.answer) == str((pam + fred + 2 * luge) * tickets)
        check_variant(carnival, rides.question, rides.answer)
        assert new_numbers(sleep, random.Random(seed)) is None


def test_whole_readings_keep_each_result_used_and_each_question_number_read() -> None:
    question, result = Source("question", Fraction(6)), Source("result", Fraction(0))
    constant = Source("constant", Fraction(6))
    # Step 0 gives 6; steps 1 and 2 read a 6 as that result or the question's, step 2 step 1's.
    two, first = (Source("constant", Fraction(2)),), (Source("result", Fraction(1)),)
    sources: list[list[tuple[Source, ...]]] = [
        [two],
        [(result, question)],
        [(result, question), first],
    ]
    found = plausible(sources, 2, ({Fraction(6)}, set()), set())
    assert sorted([r[1][0][0].kind, r[2][0][0].kind] for r in found) == [
        ["question", "result"],
        ["result", "question"],
    ]
    assert plausible([[(constant,)], [(result, constant)]], 1, (set(), set()), set()) == [
        [[(constant,)], [(result,)]]
    ]
    # A result that no reading can use: the rule does not describe this solution.
    assert plausible([[(constant,)], [(constant,)], [(result,)]], 2, (set(), set()), set()) == []
    # 12 / 3 then 4 * 4: the question's four is read once, the result once, in either order.
    four = Source("constant", Fraction(4))
    times: list[list[tuple[Source, ...]]] = [
        [(Source("question", Fraction(12)),), (Source("question", Fraction(3)),)]
    ]
    sources = [*times, [(result, four), (result, four)]]
    assert len(plausible(sources, 1, ({Fraction(12), Fraction(3)}, set()), set())) == 3
    assert plausible(sources, 1, ({Fraction(12), Fraction(3)}, set()), {Fraction(4)}) == [
        [*times, [(result,), (four,)]],
        [*times, [(four,), (result,)]],
    ]
    # 2 * 2 of Monday's 2 inches and "twice": the question's 2 is read exactly once.
    two_inches, twice = Source("question", Fraction(2)), Source("constant", Fraction(2))
    either: list[list[tuple[Source, ...]]] = [[(two_inches, twice), (two_inches, twice)]]
    assert plausible(either, 0, (set(), {Fraction(2)}), set()) == [
        [[(two_inches,), (twice,)]],
        [[(twice,), (two_inches,)]],
    ]


def test_an_operand_that_several_earlier_results_give_reads_as_any_of_them() -> None:
    # $5 is both 10/2 (half a pound of almonds) and 15/3: reading only the later one, 10/5 took
    # the almonds' 5 for a fifth's and 30/15 became the price of a fifth of a pound: wrong golds.
    almonds = Sample(
        "x",
        "A pound of almonds costs $10 while a pound of walnuts costs $15. How much more does it "
        "cost for a mixture of 1/2 pound almonds and 1/3 pound walnuts than a mixture of 1/5 "
        "pound almonds and 1/3 pound walnuts?",
        "One-half pound of almonds cost $10/2 = $<<10/2=5>>5.\n"
        "One-fifth pound of almonds cost $10/5 = $<<10/5=2>>2.\n"
        "A one-third pound of walnuts costs $15/3 = $<<15/3=5>>5.\n"
        "So, 1/2 pound almonds and 1/3 pound walnuts cost $5 + $5 = $10.\n"
        "And 1/5 pound almonds and 1/3 pound walnuts cost $2 + $5 = $7.\n"
        "Therefore, they cost $10 - $7 = $3 more.\n#### 3",
    )
    # $36 the order and 36 bagels: 36/36 stayed 1 when 6 bagels a pack made 24 of them.
    bagels = Sample(
        "y",
        "Each pack of bagels costs $10.00 and has 9 bagels in the pack. If he orders 4 packs of "
        "bagels, he will receive a 10% discount. After ordering 4 bags, how much will each "
        "single bagel cost?",
        "4 packs cost 4*10 = $<<4*10=40.00>>40.00\nHis discount is 40*.10 = $4.00\n"
        "His total is 40-4 = $<<40-4=36.00>>36.00\nHe gets 9*4 = <<9*4=36>>36 bagels\n"
        "Each bagel costs 36/36 = $<<36/36=1.00>>1.00\n#### 1",
    )
    for sample in (almonds, bagels):
        assert all(new_numbers(sample, random.Random(seed)) is None for seed in range(5))


def test_a_number_steps_must_divide_exactly_takes_a_multiple() -> None:
    # 2/5 of 80, half the rest, 5/8 of what is left: only a multiple of 80 keeps all whole.
    cards = Sample(
        "x",
        "Carly had 80 cards, 2/5 of the cards had the letter A on them, 1/2 of the remaining had "
        "the letter B, 5/8 of the rest had the letter C on them, and the others had the letter "
        "D. How many of the cards had the letter D on them?",
        "The number of cards with the letter A on them is 2/5*80 = <<2/5*80=32>>32 cards.\n"
        "There were 80-32 = <<80-32=48>>48 cards with no letter on them.\n"
        "Half of the remaining cards had the letter B on them, 1/2*48 = <<1/2*48=24>>24 cards.\n"
        "The rest is 48-24 = <<48-24=24>>24\n"
        "5/8 of them had the letter C on them, 5/8*24 = <<5/8*24=15>>15 cards.\n"
        "The number that had the letter D on them is 24-15 = <<24-15=9>>9\n#### 9",
    )
    variant = new_numbers(cards, random.Random(0))
    assert variant is not None
    had = int(re.findall(r"had (\d+) cards", variant.question)[0])
    assert had % 80 == 0 and had != 80
    assert gold_answer(variant.answer) == str(had * 3 // 5 // 2 * 3 // 8)
    check_variant(cards, variant.question, variant.answer)
    (eighty,) = mentions("80 cards")
    assert multiples(eighty) == [160, 240, 40]
