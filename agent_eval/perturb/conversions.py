"""Steps a solution takes in words, made calculator annotations: a unit converted in prose
(`15 gallons = 120 pints`) and a price in dollars given as cents (`$0.25`, `#### 25`).

Each is annotated only where a factor the question writes or cues (8 pints a gallon, 100
cents a dollar) gives exactly the number written, so that it is recomputed with the rest.
"""

from __future__ import annotations

import re
from fractions import Fraction

from agent_eval.perturb.number_text import plain
from agent_eval.rewards import gsm8k_gold

_NUMBER = r"\d+(?:\.\d+)?|\.\d+"
# `48 quarts = 12 gallons`: one number and its unit on each side, starting a line or after
# an equals sign or a colon, so never the end of an expression (`1 bug/2 ants * 50 ants`).
_CONVERSION = re.compile(
    rf"(?:^|(?<=[=:] )|(?<=[=:]))\$?(?P<old>{_NUMBER})\s?(?P<from>[A-Za-z]{{3,12}})"
    rf"\s?=\s?(?P<new>{_NUMBER})\s?(?P<to>[A-Za-z]{{3,12}})\b(?!\s*<<)",
    re.MULTILINE,
)
_ANNOTATED = re.compile(r"<<[^<>=]*=(?P<result>[^<>=]*)>>")
_CENTS = re.compile(r"\b(?:in|how many) cents\b", re.IGNORECASE)
_CENT = Fraction(100)


def converted(answer: str, factors: set[Fraction]) -> str:
    """`answer` with each unit conversion that one of `factors` gives annotated."""
    return _CONVERSION.sub(lambda match: _conversion(match, factors), answer)


def _conversion(match: re.Match[str], factors: set[Fraction]) -> str:
    old, new = Fraction(match.group("old")), Fraction(match.group("new"))
    if match.group("from").rstrip("s").lower() == match.group("to").rstrip("s").lower():
        return match.group(0)
    by = [f"{match.group('old')}*{plain(f)}" for f in factors if f > 1 and old * f == new]
    by += [f"{match.group('old')}/{plain(f)}" for f in factors if f > 1 and old / f == new]
    if not by:
        return match.group(0)
    at = match.start("new") - match.start()
    return f"{match.group(0)[:at]}<<{by[0]}={plain(new)}>>{match.group(0)[at:]}"


def in_cents(answer: str, question: str) -> str:
    """`answer` with the step from its last result in dollars to the cents that its question
    asks for and its `####` gives, where the solution leaves that step out."""
    if _CENTS.search(question) is None or "####" not in answer:
        return answer
    try:
        gold = Fraction(gsm8k_gold(answer))
        results = [Fraction(m["result"].replace(",", "")) for m in _ANNOTATED.finditer(answer)]
    except ValueError:
        return answer
    if not results or gold in results or results[-1] * _CENT != gold:
        return answer
    body, _, final = answer.rpartition("####")
    dollars = plain(results[-1])
    step = f"In cents: {dollars} * 100 = <<{dollars}*100={plain(gold)}>>{plain(gold)}\n"
    return f"{body.rstrip()}\n{step}####{final}"
