"""`numbers`: a GSM8K problem with new numbers, its gold recomputed along the solution.

GSM-Symbolic's variation without hand-written templates: the question's numbers that the
reference solution's calculator annotations (`<<48/2=24>>`) use get new values of a similar
size, and every annotation is evaluated again, in order, with them. A problem whose solution
cannot be recomputed, or whose numbers cannot be told apart, gets no variant, never a wrong gold.
"""

from __future__ import annotations

import itertools
import logging
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from fractions import Fraction

from agent_eval.data import Sample
from agent_eval.perturb.arithmetic import ArithmeticSyntaxError, evaluate
from agent_eval.perturb.base import Variant
from agent_eval.perturb.cues import cued_by, ordinals
from agent_eval.perturb.draws import every_nearby, every_similar, multiples, nearby
from agent_eval.perturb.number_text import (
    Mention,
    decimal_places,
    mentions,
    plain,
    rewritten,
    worked,
    written,
    written_values,
)
from agent_eval.perturb.prose import annotated
from agent_eval.perturb.readings import Source, plausible
from agent_eval.rewards import gsm8k_gold

logger = logging.getLogger(__name__)

_ANNOTATION = re.compile(r"<<(?P<expression>[^<>=]*)=(?P<result>[^<>=]*)>>")
_OPERAND = re.compile(r"\d+(?:\.\d+)?|\.\d+")
# A number after an equals sign that nothing further computes with, or a fraction there:
# `= 8/12` works out 8 and 12, `48 = 100% + 20%` nothing.
_WORKED_OUT = re.compile(
    r"=\s?\$?(?:(\d+(?:\.\d+)?)|(\d+)/(\d+))(?!\d|\.\d|>>|\s?<<|%?\s?[-+*x/()\u2013])"
)
_DRAWS = 200
"""Draws tried before giving up on a problem whose results keep coming out unreasonable."""
_RECONCILED = 4
"""Rounds of giving a question number the value of the earlier result it is read as."""
_TRIES = 400
"""Values tried for one number alone: every round one near it, for all but the largest, then
as many of any digits."""


class _NotRecomputable(Exception):
    """Why a problem gets no variant: its solution cannot be recomputed faithfully."""


@dataclass(frozen=True)
class _Annotation:
    start: int
    end: int
    expression: str
    result: Fraction
    operands: list[re.Match[str]]


@dataclass(frozen=True)
class _Step:
    """An annotation recomputed with new values: its expression, operands and result."""

    expression: str
    operands: list[Fraction]
    result: Fraction


@dataclass(frozen=True)
class _Plan:
    question: list[Mention]
    """The question's numbers to vary, each value once or more."""
    annotations: list[_Annotation]
    sources: list[list[tuple[Source, ...]]]
    """Each operand's possible sources: a draw stands only where they all give one value."""
    final: int
    """The annotation whose result is the gold."""
    ordered: list[Fraction]
    """Every value the question writes, smallest first: new ones drawn together keep this
    order, so that "increased from 47 to 52" stays an increase."""
    once: set[Fraction]
    """Varied numbers a cue word may bring too: a whole reading reads each once, the cue the
    rest ("2 inches on Monday" and "twice Monday's" in 2*2)."""
    steady: frozenset[int] = frozenset()
    """Steps whose results a draw must leave as they were: a constant is one off them."""


_Draw = tuple[dict[Fraction, Fraction], list[_Step]]
"""New values by old, and the solution's steps recomputed with them."""
_Recompute = Callable[[dict[Fraction, Fraction]], _Draw | None]
"""The solution recomputed with new values by old, or None where it would not be reasonable."""


def new_numbers(sample: Sample, rng: random.Random) -> Variant | None:
    """`sample` with new numbers and the gold its recomputed solution gives; None if it won't."""
    if not sample.question or not sample.answer or "####" not in sample.answer:
        return None
    answer = annotated(sample.answer, sample.question)
    try:
        plan = _plan(sample.question, answer)
    except _NotRecomputable as exc:
        logger.debug("%s: no numbers variant: %s", sample.id, exc)
        return None
    found = _read_alike(plan, rng) or _read_whole(plan, rng)
    if found is None:
        logger.debug("%s: no numbers variant: no draw keeps every step reasonable", sample.id)
        return None
    values, recomputed = found
    question = _rewrite_question(sample.question, plan.question, values)
    return Variant(question, _rewrite_answer(answer, plan, values, recomputed))


def _drawn(plan: _Plan, rng: random.Random, recompute: _Recompute) -> _Draw | None:
    """New values for the varied numbers that `recompute` finds reasonable, if any."""
    return (
        _all_at_once(plan, rng, recompute)
        or _one_at_a_time(plan, recompute, lambda mention: every_nearby(mention, rng)[:_TRIES], rng)
        or _one_at_a_time(plan, recompute, lambda mention: every_similar(mention, rng, _TRIES), rng)
    )


def _read_alike(plan: _Plan, rng: random.Random) -> _Draw | None:
    """New values where each operand's possible sources agree. A number a cue word may bring
    too keeps its value here, where its two readings could only disagree: whole readings may
    vary it."""
    steady = {value: value for value in plan.once}
    alike = replace(plan, question=[m for m in plan.question if m.value not in plan.once])
    return _drawn(alike, rng, lambda values: _recomputed(plan, {**steady, **values}))


def _read_whole(plan: _Plan, rng: random.Random) -> _Draw | None:
    """New values that every whole reading of the solution recomputes alike, drawn as above,
    else one number at a time among its multiples (a number steps must divide exactly)."""
    recompute = _in_every_reading(plan)
    return _drawn(plan, rng, recompute) or _one_at_a_time(plan, recompute, multiples, rng)


def _all_at_once(plan: _Plan, rng: random.Random, recompute: _Recompute) -> _Draw | None:
    """New values for every varied number at once, if a draw of them recomputes reasonably."""
    for _ in range(_DRAWS):
        values = {mention.value: nearby(mention, rng) for mention in plan.question}
        new = [values.get(value, value) for value in plan.ordered]
        if all(low < high for low, high in itertools.pairwise(new)):
            found = recompute(values)
            if found is not None and _changes(found[0]):
                return found
    return None


def _one_at_a_time(
    plan: _Plan,
    recompute: _Recompute,
    candidates: Callable[[Mention], list[Fraction]],
    rng: random.Random,
) -> _Draw | None:
    """New values for the numbers one by one, each the first of its `candidates` that
    recomputes reasonably: for problems whose numbers rarely fit together at random (the price
    that 60% of stays whole). Their order may change here, as a box's sides may; a value the
    question writes is not taken twice."""
    values = {mention.value: mention.value for mention in plan.question}
    found = None
    varied = list({mention.value: mention for mention in plan.question}.values())
    rng.shuffle(varied)
    for mention in varied:
        for new in candidates(mention):
            if new in plan.ordered or new in values.values():
                continue
            trial = recompute({**values, mention.value: new})
            if trial is not None and _changes(trial[0]):
                values, found = trial[0], trial
                break
    return found


def _changes(values: dict[Fraction, Fraction]) -> bool:
    """Whether new values change a number at all (agreeing readings may take one back)."""
    return any(old != new for old, new in values.items())


def _plan(question: str, answer: str) -> _Plan:
    """The numbers to vary and each operand's sources. A number that a constant is one off
    stays instead, as does a step's result (the 4 friends who share the guns beside Richard's
    5 stay 4, the 7 gaps between the 24 / 3 bottles stay 7): the constant then holds whether
    the solution brought it or took it from that number plus or minus 1."""
    annotations = _annotations(answer)
    final = _final(annotations, answer)
    pinned: set[Fraction] = set()
    steady: set[int] = set()
    while True:
        try:
            plan = _planned(question, answer, annotations, final, pinned, steady)
        except _OneOff as off:
            if off.numbers <= pinned and off.results <= steady:
                raise
            pinned |= off.numbers
            steady |= off.results
            continue
        return replace(plan, steady=frozenset(steady))


def _planned(
    question: str,
    answer: str,
    annotations: list[_Annotation],
    final: int,
    pinned: set[Fraction],
    steady: set[int],
) -> _Plan:
    written_in_question = mentions(question)
    sure, once = _variables(question, written_in_question, annotations)
    once -= pinned
    variables = (sure | once) - pinned
    fixed = (written_values(question) | set(map(Fraction, cued_by(question)))) - variables
    derived = _in_prose(answer, fixed)
    sources = _sources(annotations, variables, once, written_in_question, fixed, derived, steady)
    used = {
        s.key for row in sources for each in row for s in each if s.kind in ("question", "percent")
    }
    if not used:
        raise _NotRecomputable("the solution uses none of the question's numbers that may vary")
    varied = [m for m in written_in_question if m.value in used]
    ordered = sorted({m.value for m in written_in_question})
    return _Plan(varied, annotations, sources, final, ordered, once)


def _annotations(answer: str) -> list[_Annotation]:
    """The solution's annotations, each checked to reproduce the result it writes."""
    annotations = []
    for match in _ANNOTATION.finditer(answer):
        expression, result = match.group("expression"), match.group("result")
        try:
            value = evaluate(expression)
            claimed = Fraction(result.strip().replace(",", ""))
        except (ArithmeticSyntaxError, ValueError, ZeroDivisionError) as exc:
            raise _NotRecomputable(f"annotation <<{match.group(0)}>> is not arithmetic") from exc
        if value != claimed:
            raise _NotRecomputable(f"annotation {match.group(0)} does not reproduce its result")
        operands = list(_OPERAND.finditer(expression))
        annotations.append(_Annotation(*match.span(), expression, value, operands))
    if not annotations:
        raise _NotRecomputable("no calculator annotations")
    return annotations


def _final(annotations: list[_Annotation], answer: str) -> int:
    gold = gsm8k_gold(answer)
    try:
        value = Fraction(gold)
    except ValueError as exc:
        raise _NotRecomputable(f"the final answer {gold!r} is not a number") from exc
    matching = [i for i, annotation in enumerate(annotations) if annotation.result == value]
    if not matching:
        raise _NotRecomputable("the final answer is no annotation's result")
    return matching[-1]


def _variables(
    question: str, written_in_question: list[Mention], annotations: list[_Annotation]
) -> tuple[set[Fraction], set[Fraction]]:
    """The question's values that may vary: not 0 or 1, not a value an ordinal names, not
    naming a group ("the three"), not a share of a whole, used, and, if a small count, written
    once and used once, but where an earlier result gives it too (written twice, as 4 dogs of
    which the second walks 4 miles, one new value for every mention may change what the
    problem is; used twice, as 3*3 or the 2 popcorns beside the solution's 2 parents, a use
    may be the solution's own count; a larger
    one is the question's each time: 20*20 for a square's side). Its mentions all take
    one new value, so each use follows. Those a cue word of the question may bring come apart,
    where written once: an operand with their value may be either, as whole readings decide."""
    cued = set(map(Fraction, cued_by(question)))
    # "The next three days" after "her third eight days": the solution's 3 may count either.
    named = ordinals(question)
    counts = Counter(mention.value for mention in written_in_question)
    referring = {mention.value for mention in written_in_question if mention.referring}
    # Digits a question writes other than as a quantity: the 6 of 1/6, the 3 of 3:30.
    stray = Counter(Fraction(d) for d in _OPERAND.findall(question.replace(",", "")))
    stray.subtract(Counter(m.value for m in written_in_question if not m.word))
    percents = {m.value / 100: m.value for m in written_in_question if m.hundredths}
    uses: Counter[Fraction] = Counter()
    # Uses in all steps, but those an earlier result gives as well, whose readings must agree.
    bare: Counter[Fraction] = Counter()
    results: set[Fraction] = set()
    for annotation in annotations:
        used = Counter(percents.get(v, v) for v in _values(annotation.operands))
        uses |= used
        bare.update(v for v in used.elements() if v not in results)
        results.add(annotation.result)
    candidates = {
        value
        for value, count in counts.items()
        if value > 1
        and uses[value] >= 1
        and value not in _shares(written_in_question)
        and stray[value] <= 0
        and value not in named | referring
    }
    sure = {v for v in candidates - cued if not _small(v) or counts[v] == uses[v] == 1 >= bare[v]}
    return sure, {v for v in candidates & cued if counts[v] == 1}


def _shares(written_in_question: list[Mention]) -> set[Fraction]:
    """Percents that make up a whole (50% boys and 50% girls): they stay, as new ones would
    not add up."""
    percents = [m.value for m in written_in_question if m.percent]
    return set(percents) if sum(percents) == 100 else set()


def _in_prose(answer: str, fixed: set[Fraction]) -> set[Fraction]:
    """Values the solution's prose works out with no annotation (`2/3 x 4/4 = 8/12`): such a
    value is derived, never a constant, even one the question also writes; a fraction's
    terms the question writes or cues (`1 - 3/4 = 1/4`) are its own."""
    found = _WORKED_OUT.findall(answer)
    fractions = {Fraction(n) for _, *terms in found for n in terms if n} - fixed
    return {Fraction(number) for number, *_ in found if number} | fractions


def _values(operands: list[re.Match[str]]) -> list[Fraction]:
    return [Fraction(operand.group(0)) for operand in operands]


def _sources(
    annotations: list[_Annotation],
    variables: set[Fraction],
    once: set[Fraction],
    written_in_question: list[Mention],
    fixed: set[Fraction],
    derived: set[Fraction],
    steady: set[int],
) -> list[list[tuple[Source, ...]]]:
    """Each operand's possible sources. A value that stays (`fixed`: one the question writes
    and does not vary, the 13 of 7/13, or one its words cue) is a constant, as its percent is;
    one the prose works out (`derived`) is none; a varied one a cue word may bring (`once`) is
    either; the solution's own is one off no varied number or result (but `steady` ones)."""
    percents = {m.value / 100: m.value for m in written_in_question if m.hundredths}
    sources: list[list[tuple[Source, ...]]] = []
    for index, annotation in enumerate(annotations):
        earlier: dict[Fraction, list[Fraction]] = {}
        for i, done in reversed(list(enumerate(annotations[:index]))):
            earlier.setdefault(done.result, []).append(Fraction(i))
        values = _values(annotation.operands)
        row = [
            _source(v, variables, percents, earlier, fixed | derived)
            + ((Source("constant", v),) if v in once else ())
            for v in values
        ]
        for v in {v for r, v in zip(row, values, strict=True) if r == (Source("constant", v),)}:
            if v not in fixed | derived:
                _check_one_off(v, variables, earlier, steady)
        if any(r[0].kind == "constant" and v in derived for r, v in zip(row, values, strict=True)):
            # `2/3 x 4/4 = 8/12` in words, then 3 x 8: the 8 would stay when the 12 changes.
            raise _NotRecomputable("a constant is worked out in the solution's prose")
        if _stated(annotation) and row[0][0].kind == "constant" and annotation.result not in fixed:
            # `Jerry's Age = <<10=10>>10` after algebra: a value no arithmetic gives stays put.
            raise _NotRecomputable(f"{annotation.result} is stated, not computed")
        sources.append(row)
    return sources


def _stated(annotation: _Annotation) -> bool:
    """Whether an annotation writes its result alone (`<<10=10>>`): no arithmetic."""
    return len(annotation.operands) == 1 and annotation.expression.strip().lstrip("+") == (
        annotation.operands[0].group(0)
    )


def _source(
    value: Fraction,
    variables: set[Fraction],
    percents: dict[Fraction, Fraction],
    earlier: dict[Fraction, list[Fraction]],
    fixed: set[Fraction],
) -> tuple[Source, ...]:
    """Where an operand may come from. A question number that is also an earlier result may be
    either, as may a value several earlier steps gave (the $5 of half a pound of almonds and of
    a third of one of walnuts): all are kept, and only draws where they agree are taken."""
    found = [Source("result", index) for index in earlier.get(value, [])]
    if value in variables:
        found.append(Source("question", value))
    elif percents.get(value) in variables:
        found.append(Source("percent", percents[value]))
    elif found and value in fixed:
        # The 3 visits a year the question writes twice, and the $3 a step gave: the constant
        # reading stands only where the result stays 3.
        found.append(Source("constant", value))
    if found:
        return tuple(found)
    if percents.get(value) in fixed:
        return (Source("constant", value),)
    if value not in fixed and not _small(value):
        raise _NotRecomputable(f"{value} comes from neither the question nor an earlier result")
    return (Source("constant", value),)


def _check_one_off(
    value: Fraction,
    variables: set[Fraction],
    earlier: dict[Fraction, list[Fraction]],
    steady: set[int],
) -> None:
    """ "4 times as much" splits 100 in 5, "3 friends and him" are 4, 8 bottles leave 7 gaps
    between them: a constant above 2 one off a varied number or a result may be it plus or
    minus one (1 and 2 are the solution's own too often: one each, a round trip), and one a
    negative result is the minus of (`11 - 20 = -9`, then `9 / 3`).

    Raises: _OneOff naming the numbers and the results (but `steady` ones) it may be.
    """
    near = (value - 1, value + 1)
    numbers = {n for n in near if n in variables}
    results = {int(i) for n in (*near, -value) for i in earlier.get(n, [])} - steady
    if value > 2 and (numbers or results):
        raise _OneOff(value, numbers, results)


class _OneOff(_NotRecomputable):
    """A constant one off varied `numbers` or earlier steps' `results`, or a result's minus:
    it may be any of them, so they must stay as they are."""

    def __init__(self, value: Fraction, numbers: set[Fraction], results: set[int]) -> None:
        super().__init__(f"{value} may be a varied number or a result plus or minus 1")
        self.numbers, self.results = numbers, results


def _small(value: Fraction) -> bool:
    """A constant a solution brings itself without a cue: a small count or simple fraction."""
    return (value <= 10 and (value * 4).denominator == 1) or value in (
        Fraction(1, 10),
        Fraction(1, 100),
    )


def _recomputed(plan: _Plan, values: dict[Fraction, Fraction]) -> _Draw | None:
    """The solution recomputed with the new values. A question number read also as an earlier
    result takes that result's new value, so that both readings agree (the 20 miles a day
    that 2*10 also gives); None when no such values give what a problem would."""
    for _ in range(_RECONCILED):
        try:
            steps = _steps(plan, values)
        except _Disagreement as clash:
            if not _may_become(clash.key, clash.wanted) or values[clash.key] == clash.wanted:
                return None
            values = {**values, clash.key: clash.wanted}
            continue
        return None if steps is None else (values, steps)
    return None


def _in_every_reading(plan: _Plan) -> _Recompute:
    """Recomputes the solution in every plausible whole reading of its operands, and takes a
    draw only where all give every step the same result: where readings disagree (the 6 of
    `6+4` both the 6 tickets a ride costs and the 2+4 rides), the draw must not tell them
    apart, but a reading in which a step's result or a question number goes unused is none."""
    varied = {mention.value for mention in plan.question}
    kept = set(plan.ordered) - varied
    readings = plausible(plan.sources, plan.final, (varied, plan.once), kept)
    plans = [replace(plan, sources=r) for r in readings]

    def recompute(values: dict[Fraction, Fraction]) -> _Draw | None:
        first = _steps(plans[0], values) if plans else None
        if first is None:
            return None
        results = [step.result for step in first]
        for other in plans[1:]:
            steps = _steps(other, values)
            if steps is None or [step.result for step in steps] != results:
                return None
        return values, first

    return recompute


def _may_become(old: Fraction, new: Fraction) -> bool:
    """Whether a question number may take `new` in place of `old`: as whole, more than 1."""
    return new > 1 and (old.denominator != 1 or new.denominator == 1)


def _steps(plan: _Plan, values: dict[Fraction, Fraction]) -> list[_Step] | None:
    """Each annotation's expression with the new values and its new result; None when a draw
    gives something a problem would not (a negative count, a fraction of a whole).

    Raises: _Disagreement when a question number and an earlier result read alike disagree.
    """
    if any(m.percent and m.value <= 100 < values[m.value] for m in plan.question):
        return None
    recomputed: list[_Step] = []
    for index, (annotation, sources) in enumerate(zip(plan.annotations, plan.sources, strict=True)):
        operands = _agreed(sources, values, recomputed)
        if operands is None:
            return None
        expression = _substituted(annotation, operands)
        try:
            result = evaluate(expression)
        except ZeroDivisionError:
            return None
        if not _reasonable(annotation.result, result) or (
            index in plan.steady and result != annotation.result
        ):
            return None
        recomputed.append(_Step(expression, operands, result))
    return recomputed


class _Disagreement(Exception):
    """An operand read as the question number `key` and as an earlier result, now `wanted`."""

    def __init__(self, key: Fraction, wanted: Fraction) -> None:
        super().__init__(f"{key} now reads as {wanted}")
        self.key, self.wanted = key, wanted


def _agreed(
    sources: list[tuple[Source, ...]], values: dict[Fraction, Fraction], recomputed: list[_Step]
) -> list[Fraction] | None:
    """Each operand's new value; None if an operand's possible sources now disagree.

    Raises: _Disagreement when they are a question number and one earlier result.
    """
    operands = []
    for candidates in sources:
        new = {source: _operand(source, values, recomputed) for source in candidates}
        if len(set(new.values())) > 1:
            kinds = {source.kind: value for source, value in new.items()}
            if len(new) == 2 and {"question", "result"} == set(kinds):
                key = next(s.key for s in new if s.kind == "question")
                raise _Disagreement(key, kinds["result"])
            return None
        operands.append(next(iter(new.values())))
    return operands


def _operand(source: Source, values: dict[Fraction, Fraction], recomputed: list[_Step]) -> Fraction:
    if source.kind == "question":
        return values[source.key]
    if source.kind == "percent":
        return values[source.key] / 100
    if source.kind == "result":
        return recomputed[int(source.key)].result
    return source.key


def _substituted(annotation: _Annotation, values: Iterable[Fraction]) -> str:
    text, cursor = "", 0
    for operand, value in zip(annotation.operands, values, strict=True):
        number = plain(value)
        text += annotation.expression[cursor : operand.start()]
        text += f"({number})" if value < 0 else number
        cursor = operand.end()
    return text + annotation.expression[cursor:]


def _reasonable(old: Fraction, new: Fraction) -> bool:
    places = decimal_places(new)
    if places is None or places > max(decimal_places(old) or 0, 2):
        return False
    if old.denominator == 1 and new.denominator != 1:
        return False
    return not (old >= 0 > new or (old != 0 and new == 0))


def _rewrite_question(
    question: str, varied: list[Mention], values: dict[Fraction, Fraction]
) -> str:
    for mention in reversed(varied):
        number = rewritten(mention, question, values[mention.value])
        question = question[: mention.start] + number + question[mention.end :]
    return question


def _rewrite_answer(
    answer: str,
    plan: _Plan,
    values: dict[Fraction, Fraction],
    recomputed: list[_Step],
) -> str:
    """The solution with its annotations recomputed, its prose numbers following them where
    they can be told apart, and the new gold after `####`."""
    body = answer.rpartition("####")[0]
    everywhere = _Renaming(_global_pairs(plan, values, recomputed))
    text, cursor = "", 0
    for index, annotation in enumerate(plan.annotations):
        text += _rewrite_prose(body, cursor, annotation.start, plan, recomputed, everywhere)
        step = recomputed[index]
        text += f"<<{step.expression}={plain(step.result)}>>"
        cursor = annotation.end
    text += _rewrite_prose(body, cursor, len(body), plan, recomputed, everywhere)
    return f"{text}#### {plain(recomputed[plan.final].result)}"


def _rewrite_prose(
    body: str,
    start: int,
    end: int,
    plan: _Plan,
    recomputed: list[_Step],
    everywhere: _Renaming,
) -> str:
    """The prose between two annotations, its numbers renamed as its own line's annotations
    rename them first, as the whole solution does next, else left as they are."""
    line_start = body.rfind("\n", 0, start) + 1
    line_end = body.find("\n", end)
    line_end = len(body) if line_end < 0 else line_end
    on_line = [
        i for i, a in enumerate(plan.annotations) if line_start <= a.start and a.end <= line_end
    ]
    here = _Renaming(pair for i in on_line for pair in _annotation_pairs(plan, i, recomputed))
    piece = body[start:end]
    after = [i for i, a in enumerate(plan.annotations) if a.end == start]
    for mention in reversed(worked(piece)):
        if after and mention.start == 0:
            # The number an annotation is written right before is its result: ">>9 eggs".
            new: Fraction | None = recomputed[after[0]].result
        else:
            renaming = here if mention.value in here else everywhere
            new = renaming.get(mention.value)
        new = mention.value if new is None else new
        piece = (
            piece[: mention.start]
            + written(new, mention.places, mention.commas)
            + piece[mention.end :]
        )
    return piece


def _annotation_pairs(
    plan: _Plan, index: int, recomputed: list[_Step]
) -> list[tuple[Fraction, Fraction]]:
    annotation, step = plan.annotations[index], recomputed[index]
    pairs = list(zip(_values(annotation.operands), step.operands, strict=True))
    return [*pairs, (annotation.result, step.result)]


def _global_pairs(
    plan: _Plan, values: dict[Fraction, Fraction], recomputed: list[_Step]
) -> list[tuple[Fraction, Fraction]]:
    pairs = [
        pair
        for i in range(len(plan.annotations))
        for pair in _annotation_pairs(plan, i, recomputed)
    ]
    pairs += [(old, new) for old, new in values.items()]
    pairs += [(m.value / 100, values[m.value] / 100) for m in plan.question if m.hundredths]
    return pairs


class _Renaming:
    """Old value to new, for the values every pair agrees on; the rest stay as written."""

    def __init__(self, pairs: Iterable[tuple[Fraction, Fraction]]) -> None:
        self._new: dict[Fraction, Fraction | None] = {}
        for old, new in pairs:
            self._new[old] = new if self._new.get(old, new) == new else None

    def get(self, old: Fraction) -> Fraction | None:
        """The new value of `old`; None when unknown or when the pairs disagree on it."""
        return self._new.get(old)

    def __contains__(self, old: Fraction) -> bool:
        return old in self._new
