"""Linear equations in one unknown from a worked solution (`Let x be ...`, `x+x+30=110`): the
value the solution then states (`x=<<40=40>>40`) gets the annotation that solves for it,
`<<(110-30)/(1+1)=40>>`, so that it is recomputed from the equation's numbers.

An unknown is one letter the solution introduces with "let"; its first equation that holds
it alone, linearly, writes only known numbers (the question's, a cue's, an earlier step's
result: never one combined in prose, as 8 = 13 - 5 would stay 8 when 13 changes) and gives a
value the solution then states, is the one solved.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

from agent_eval.perturb.arithmetic import ArithmeticSyntaxError, evaluate
from agent_eval.perturb.number_text import plain

_LET = re.compile(r"\blet\b[^.\n]{0,40}?\b(?P<letter>[A-Za-z])\b(?!')", re.IGNORECASE)
_SIDE = r"(?:\d+(?:\.\d+)?|[A-Za-z](?![A-Za-z'])|[-+*/()\u2013\u2212 ]){1,60}"
# The whole equation, never a piece of one: it starts a line or a clause ("so", "is", a colon)
# and ends one, or a unit word follows it ("= 304 humps"), never an operator word.
_EQUATION = re.compile(
    rf"(?:^|:|\b(?:is|are|then|so|get|gives|means|that)\s+)(?P<left>{_SIDE})=(?P<right>{_SIDE})"
    r"(?=$|[.,;]|\b(?!(?:times|plus|minus|divided|of|by)\b)[A-Za-z]{2,})",
    re.MULTILINE | re.IGNORECASE,
)
_RESULT = re.compile(r"<<[^<>=]*=(-?\d+(?:\.\d+)?)>>")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DASHES = str.maketrans({"\u2013": "-", "\u2212": "-"})


@dataclass(frozen=True)
class _Linear:
    """`coefficient * unknown + constant`, each as an expression and its value."""

    coefficient: str
    constant: str
    a: Fraction
    b: Fraction


class _NotLinear(Exception):
    """An equation that is not linear arithmetic in its one unknown."""


def solved(answer: str, known: set[Fraction]) -> str:
    """`answer` with each let-unknown's stated value annotated as its equation's solution,
    where that equation writes only `known` numbers or earlier steps' results."""
    for letter in dict.fromkeys(m.group("letter") for m in _LET.finditer(answer)):
        answer = _solve_for(answer, letter, known)
    return answer


def _solve_for(answer: str, letter: str, known: set[Fraction]) -> str:
    for match in _EQUATION.finditer(answer):
        results = {Fraction(r) for r in _RESULT.findall(answer, 0, match.start())}
        numbers = {
            Fraction(n) for n in _NUMBER.findall(match.group("left") + "=" + match.group("right"))
        }
        if not numbers <= known | results | {Fraction(0), Fraction(1)}:
            continue
        try:
            template, value = _solution(match.group("left"), match.group("right"), letter)
        except (_NotLinear, ArithmeticSyntaxError, ZeroDivisionError, SyntaxError):
            continue
        return _stated(answer, match.end(), letter, template, value)
    return answer


def _solution(left: str, right: str, letter: str) -> tuple[str, Fraction]:
    """The unknown's value as an expression of the equation's numbers, and that value."""
    sides = [_side(text, letter) for text in (left, right)]
    if letter not in left + right:
        raise _NotLinear(letter)
    l_side, r_side = sides
    if l_side.a == r_side.a:
        raise _NotLinear("the unknown cancels")
    numerator = _joined(r_side.constant, "-", l_side.constant)
    template = _joined(numerator, "/", _joined(l_side.coefficient, "-", r_side.coefficient))
    value = (r_side.b - l_side.b) / (l_side.a - r_side.a)
    if evaluate(template) != value:
        raise _NotLinear(template)
    return template, value


def _side(text: str, letter: str) -> _Linear:
    text = text.translate(_DASHES).strip()
    letters = set(re.findall(r"[A-Za-z]", text))
    if not letters <= {letter}:
        raise _NotLinear(text)
    text = re.sub(rf"(?<=[\d)])\s*(?=[{letter}(])|(?<=[{letter})])\s*(?=[\d(])", "*", text)
    tree = ast.parse(text.replace(letter, "u"), mode="eval")
    return _linear(tree.body, text.replace(letter, "u"))


def _linear(node: ast.expr, text: str) -> _Linear:
    if isinstance(node, ast.Name) and node.id == "u":
        return _Linear("1", "0", Fraction(1), Fraction(0))
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        number = ast.get_source_segment(text, node) or str(node.value)
        return _Linear("0", number, Fraction(0), Fraction(number))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _linear(node.operand, text)
        return _Linear(f"-({inner.coefficient})", f"-({inner.constant})", -inner.a, -inner.b)
    if isinstance(node, ast.BinOp):
        return _combined(node.op, _linear(node.left, text), _linear(node.right, text))
    raise _NotLinear(text)


def _combined(op: ast.operator, left: _Linear, right: _Linear) -> _Linear:
    if isinstance(op, ast.Add | ast.Sub):
        sign = "+" if isinstance(op, ast.Add) else "-"
        direction = 1 if isinstance(op, ast.Add) else -1
        return _Linear(
            _joined(left.coefficient, sign, right.coefficient),
            _joined(left.constant, sign, right.constant),
            left.a + direction * right.a,
            left.b + direction * right.b,
        )
    if isinstance(op, ast.Mult) and (left.coefficient == "0" or right.coefficient == "0"):
        number, term = (left, right) if left.coefficient == "0" else (right, left)
        return _Linear(
            _joined(number.constant, "*", term.coefficient),
            _joined(number.constant, "*", term.constant),
            number.b * term.a,
            number.b * term.b,
        )
    if isinstance(op, ast.Div) and right.coefficient == "0":
        return _Linear(
            _joined(left.coefficient, "/", right.constant),
            _joined(left.constant, "/", right.constant),
            left.a / right.b,
            left.b / right.b,
        )
    raise _NotLinear("not linear")


def _joined(left: str, sign: str, right: str) -> str:
    """`left sign right` as an expression, a term that is structurally 0 left out."""
    if sign in "+-" and right == "0":
        return left
    if sign == "+" and left == "0":
        return right
    if (sign == "*" and "0" in (left, right)) or (sign == "/" and left == "0"):
        return "0"
    return f"({left}){sign}({right})"


def _stated(answer: str, after: int, letter: str, template: str, value: Fraction) -> str:
    """`answer` with the first statement of `value` after `after` annotated by `template`."""
    number = re.escape(plain(value))
    # `x = 40`, `x = <<40=40>>40`, or `x = 48 / 3 = <<48/3=16>>16`, the arithmetic the prose
    # did on the equation's numbers then given the equation's own.
    said = re.compile(
        rf"\b{letter}\s*=\s*(?:[^=<>\n]{{0,40}}=\s*)?\$?"
        rf"(?:<<[^<>=]*={number}>>|(?={number}(?![\d.])))"
    )
    found = said.search(answer, after)
    if found is None:
        return answer
    annotation = f"<<{template}={plain(value)}>>"
    stated = found.group(0)
    if stated.endswith(">>"):
        stated = stated[: stated.rindex("<<")]
    return f"{answer[: found.start()]}{stated}{annotation}{answer[found.end() :]}"
