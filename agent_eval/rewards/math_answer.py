"""GSM8K gold answers and the default reward: math-verify, gold first."""

from __future__ import annotations

import re
from typing import Any

from agent_eval.rewards.result import RewardResult

_THOUSANDS_COMMA = re.compile(r"(?<=\d),(?=\d)")


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
    # Imported here: sympy costs the parent process most of a second and only workers need it.
    from math_verify import parse, verify

    # Timeouts off: math-verify's use SIGALRM; the scorer enforces its own from outside.
    gold_parsed = parse(gold, parsing_timeout=None)
    if not gold_parsed:
        return RewardResult.failed("parse_failed", f"gold answer did not parse: {gold[:80]!r}")
    predicted = parse(prediction, parsing_timeout=None)
    if not predicted:
        return RewardResult.failed("parse_failed", "no answer found in the prediction")
    correct = bool(verify(gold_parsed, predicted, timeout_seconds=None))
    return RewardResult(reward=float(correct), correct=correct, parsed=_canonical(predicted))


def _canonical(parsed: list[Any]) -> str:
    """Text for an extracted answer such that equal numbers vote together ("72.0" is "72")."""
    import sympy

    value = parsed[0]
    if isinstance(value, sympy.Float):
        value = sympy.nsimplify(value, rational=True)
    if isinstance(value, sympy.Integer):
        return str(int(value))
    return str(value)
