"""Calculator annotations recovered from a solution's prose: `99 + 5 = $104` becomes
`99 + 5 = $<<99+5=104>>104`, as GSM8K writes the steps it annotates.

An equation is annotated only when its left side is plain arithmetic (numbers, each with one
unit word at most, percents, `+ - * / x` or their words, parentheses) that gives exactly the
number written on its right; anything else (an unknown `x`, a rounded result) stays prose, and
the `numbers` perturbation then refuses a problem that needed it.
"""

from __future__ import annotations

import re
from fractions import Fraction

from agent_eval.perturb.algebra import solved
from agent_eval.perturb.arithmetic import ArithmeticSyntaxError, evaluate
from agent_eval.perturb.conversions import converted, in_cents
from agent_eval.perturb.cues import cued_by
from agent_eval.perturb.number_text import plain, written_values

_DIGITS = r"(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
# Up to eight unit words after a number, per unit or not ("12 miles", "$20/hour", "35
# hours/week", "9% per hour", "70 pieces of straw for the hamsters and rabbits"); never one
# letter, so that "20 x 3" stays a product, nor an operator's word. Its letters are taken
# atomically, never given back to split a word another way: a failed match would otherwise
# try each split of each word (minutes of CPU on one long GSM8K solution line).
_WORD = r"(?!(?:plus|minus|times|divided|by|equals)\b)(?>[A-Za-z]{2,12})"
_UNIT = rf"(?:\s?/?{_WORD}(?:/{_WORD})?){{1,8}}"
_WORDS = {" plus ": "+", " minus ": "-", " times ": "*", " divided by ": "/"}
_OPERATOR = (
    rf"\s?[-+*/x\u00d7\u00f7\u2013\u2212]\s?|{'|'.join(_WORDS)}"
    r"|(?<=\d)\s?(?=\()|(?<=\))\s?(?=[\d(])"  # 2(40+9), (1/4) 24: a product without its sign
)
# Bounded, so that a long line costs time in proportion to its length: no step of a word
# problem nests deeper or chains more terms.
_TERM = rf"(?:\(\s?){{0,4}}\$?{_DIGITS}%?(?:{_UNIT})?(?:\s?\)){{0,4}}"
_EQUALS = r"\s*(?:=|\bequals\b)\s*"
# `5+2(3) = 5+6 = 11`: the steps between the arithmetic and its result stay prose.
_BETWEEN = rf"(?:{_TERM}(?:(?:{_OPERATOR}){_TERM}){{0,24}}{_EQUALS}){{0,3}}"
_LEFT = (
    rf"(?<![\w.,$/])(?P<expression>{_TERM}(?:(?:{_OPERATOR}){_TERM}){{1,24}}){_EQUALS}{_BETWEEN}"
)
_EQUATION = re.compile(rf"{_LEFT}\$?(?P<result>{_DIGITS})(?P<percent>%)?(?!\w|[.,/]\d|\s*<<)")
_ANNOTATION = re.compile(r"(<<[^<>]*>>)")
_BARE = re.compile(rf"{_LEFT}\$?<<(?P<result>{_DIGITS})=(?P=result)>>")
"""`60+30=<<90=90>>90`: an annotation that writes its result alone, the prose its arithmetic."""
_ARITHMETIC = str.maketrans({"x": "*", "\u00d7": "*", "\u00f7": "/", "\u2013": "-", "\u2212": "-"})


def annotated(answer: str, question: str | None = None) -> str:
    """`answer` with an annotation before the result of each prose equation that computes,
    and, given its `question`, before each unknown's value its equation solves for, each unit
    its factors convert and the cents it asks for."""
    if question is not None:
        known = written_values(question) | set(map(Fraction, cued_by(question)))
        answer = converted(solved(answer, known), known)
    pieces = _ANNOTATION.split(_BARE.sub(_completed, answer))
    recovered = "".join(
        piece if _ANNOTATION.fullmatch(piece) else _EQUATION.sub(_annotate, piece)
        for piece in pieces
    )
    return recovered if question is None else in_cents(recovered, question)


def _annotate(match: re.Match[str]) -> str:
    result = Fraction(match.group("result").replace(",", ""))
    expression = _computing(match.group("expression"), result, bool(match.group("percent")))
    if expression is None:
        return match.group(0)
    at = match.start("result") - match.start()
    return f"{match.group(0)[:at]}<<{expression}={plain(result)}>>{match.group(0)[at:]}"


def _completed(match: re.Match[str]) -> str:
    """A bare annotation with the prose's arithmetic before it, if it computes its result."""
    prose = match.group(0)[: match.start("result") - match.start() - 2]
    expression = arithmetic(match.group("expression"))
    result = Fraction(match.group("result").replace(",", ""))
    if expression is None or not _computes(expression, result):
        return match.group(0)
    return f"{prose}<<{expression}={plain(result)}>>"


def _computing(prose: str, result: Fraction, percent: bool) -> str | None:
    """The arithmetic of `prose` if it gives `result`. Where the result is a percent, its
    percents are read as whole numbers (`12/20 x 100% = 60%`), else all as hundredths and the
    result a hundredth too (`20% * 40% = 8%`)."""
    readings = [arithmetic(prose, percent)]
    if percent and "%" in prose and (hundredths := arithmetic(prose)) is not None:
        readings.append(f"({hundredths})*100")
    return next((r for r in readings if r is not None and _computes(r, result)), None)


def _computes(expression: str, result: Fraction) -> bool:
    try:
        return evaluate(expression) == result
    except (ArithmeticSyntaxError, ZeroDivisionError):
        return False


def arithmetic(prose: str, percent: bool = False) -> str | None:
    """A prose expression as a calculator writes it (`$20/hour * 35 hours` is `20*35`); None
    when something other than numbers and operators is left. A percent is a hundredth, save
    where the result is a percent too (`12/20 x 100% = 60%` is `12/20*100=60`)."""
    for word, sign in _WORDS.items():
        prose = prose.replace(word, sign)
    calculator = re.sub(rf"(?<=[\d%]){_UNIT}", "", prose).replace("$", "").replace(",", "")
    calculator = calculator.replace("%", "" if percent else "/100")
    calculator = re.sub(r"\s+", "", calculator.translate(_ARITHMETIC))
    calculator = re.sub(r"(?<=[\d)])(?=\()|(?<=\))(?=[\d(])", "*", calculator)
    return calculator if re.fullmatch(r"[\d.+\-*/()]+", calculator) else None
