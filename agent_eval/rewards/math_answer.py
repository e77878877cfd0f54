"""GSM8K gold answers and the default reward: math-verify, gold first."""

from __future__ import annotations

import logging
import re
from typing import Any

from agent_eval.rewards.result import RewardResult

# With its timeouts off math-verify warns once in each process that parses; we enforce our own.
logging.getLogger("math_verify").setLevel(logging.ERROR)

_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d)")
_PLAIN_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def gsm8k_gold(answer: str) -> str:
    """The final answer after `####` in a GSM8K solution, without thousands commas."""
    _, marker, final = answer.rpartition("####")
    final = final.strip()
    if not marker or not final:
        snippet = answer[-80:].strip()
        raise ValueError(f"GSM8K answer has no final answer after '####': ...{snippet!r}")
    return _THOUSANDS_COMMA.sub("", final)


def score_math(prediction: str, gold: str) -> RewardResult:
    """Score `prediction` against `gold` with math-verify, gold first as its API requires."""
    from math_verify import verify

    gold_parsed = _parse(gold)
    if not gold_parsed:
        return RewardResult.failed("parse_failed", f"gold answer did not parse: {gold[:80]!r}")
    predicted = _parse(prediction)
    if not predicted:
        return RewardResult.failed("parse_failed", "no answer found in the prediction")
    correct = bool(verify(gold_parsed, predicted, timeout_seconds=None))
    return RewardResult(reward=float(correct), correct=correct, parsed=_canonical(predicted))


def math_gold_problem(gold: str) -> str | None:
    """Why `score_math` cannot read `gold` (it would score every answer 0), or None if it can."""
    # A plain number always parses: the usual gold is told apart without importing sympy.
    if _PLAIN_NUMBER.fullmatch(gold) or _parse(gold):
        return None
    return (
        "math-verify finds no number or expression in it: write it as a number or in LaTeX, "
        "or score with a reward of your own (reward.function)"
    )


def _parse(text: str) -> list[Any]:
    """math-verify's reading of `text`: empty when it finds no answer."""
    # Imported here: sympy costs most of a second, and the parent process needs it only to check
    # a gold that is not a plain number.
    from math_verify import parse

    # Timeouts off: math-verify's use SIGALRM; the scorer enforces its own from outside.
    return parse(text, parsing_timeout=None)


def _canonical(parsed: list[Any]) -> str:
    """Text for an extracted answer such that equal numbers vote together ("72.0" is "72")."""
    import sympy

    value = parsed[0]
    if isinstance(value, sympy.Float):
        value = sympy.nsimplify(value, rational=True)
    if isinstance(value, sympy.Integer):
        return str(int(value))
    return str(value)
