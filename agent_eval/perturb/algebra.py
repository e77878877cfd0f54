"""Linear equations from a worked solution (`Let x be ...`, `x+x+30=110`): the value the
solution then states (`x=<<40=40>>40`) gets the annotation that solves for it,
`<<(110-30)/(1+1)=40>>`, so that it is recomputed from the equation's numbers.

An unknown is one letter the solution introduces ("let x be", "where x is the number", "y
be the amount"). Its first equation that holds it alone, linearly, writes only known numbers
(the question's, a cue's, an earlier step's result: never one combined in prose, as 8 = 13 - 5
would stay 8 when 13 changes) and gives a value the solution then states, is the one solved;
two unknowns are solved together from the first two such equations that hold both
(`b = 5s - 4 and s + b = 116`). A chain (`V + 2V = 3V = 33`) is its first side and its last.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from fractions import Fraction

from agent_eval.perturb.arithmetic import ArithmeticSyntaxError, evaluate
from agent_eval.perturb.number_text import plain

_INTRODUCED = re.compile(
    r"\blet(?:'s)?\b(?!')[^.\n]{0,40}?\b(?P<letter>[A-Za-z])\b(?!')"
    # "where x is the number of", "and y be the amount": a letter alone, then what it names.
    r"|(?<![\w'])(?P<named>[B-HJ-Zb-z])\s(?:is|be|represents?|stands? for|=)\s(?:the|my|his|her)\b",
    re.IGNORECASE,
)
_NUMBER_TEXT = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?%?"
_SIDE = rf"(?:\$?{_NUMBER_TEXT}|[A-Za-z](?![A-Za-z'])|[-+*/()\[\]\u2013\u2212 ]){{1,60}}"
# The whole equation, never a piece of one: it starts where no word, number or bracket ends,
# and ends a clause, or a unit word follows it ("= 304 humps"), never an operator word.
_EQUATION = re.compile(
    rf"(?<![\w.)\]$%])(?=[^\s=])(?P<left>{_SIDE})(?:=(?:{_SIDE})){{0,3}}=(?P<right>{_SIDE})"
    r"(?=$|[.,;](?!\d)|\b(?!(?:times|plus|minus|divided|of|by)\b)[A-Za-z]{2,})",
    re.MULTILINE,
)
_RESULT = re.compile(r"<<[^<>=]*=(-?\d+(?:\.\d+)?)>>")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_SIGNS = str.maketrans({"\u2013": "-", "\u2212": "-", "[": "(", "]": ")", "$": None, ",": None})


@dataclass(frozen=True)
class _Term:
    """A number as an expression of the equation's numbers, and its value."""

    text: str
    value: Fraction


_ZERO, _ONE = _Term("0", Fraction(0)), _Term("1", Fraction(1))


@dataclass(frozen=True)
class _Linear:
    """`sum(coefficient * unknown) + constant`."""

    coefficients: dict[str, _Term]
    constant: _Term

    def of(self, letter: str) -> _Term:
        return self.coefficients.get(letter, _ZERO)


@dataclass(frozen=True)
class _Equation:
    """`left = right`, read as `a * unknown + ... = c`."""

    left: _Linear
    right: _Linear

    def a(self, letter: str) -> _Term:
        return _joined(self.left.of(letter), "-", self.right.of(letter))

    def c(self) -> _Term:
        return _joined(self.right.constant, "-", self.left.constant)

    def unknowns(self) -> list[str]:
        letters = dict.fromkeys([*self.left.coefficients, *self.right.coefficients])
        return sorted(letter for letter in letters if self.a(letter).value)


@dataclass(frozen=True)
class _Solution:
    letter: str
    template: str
    value: Fraction


class _NotLinear(Exception):
    """An equation that is not linear arithmetic in the solution's unknowns."""


def solved(answer: str, known: set[Fraction]) -> str:
    """`answer` with each unknown's stated value annotated as its equations' solution, where
    they write only `known` numbers or earlier steps' results."""
    letters = _unknowns(answer)
    while letters:
        found = _first_solved(answer, letters, known)
        if found is None:
            return answer
        answer = _all_stated(answer, found)
        letters -= {solution.letter for solution in found.solutions}
    return answer


def _unknowns(answer: str) -> set[str]:
    """The letters the solution introduces, each as it then writes it (`let X be`, `x=27`)."""
    letters = set()
    for match in _INTRODUCED.finditer(answer):
        letter, rest = match["letter"] or match["named"], answer[match.end() :]
        if not _lone(letter).search(rest) and _lone(letter.swapcase()).search(rest):
            letter = letter.swapcase()
        letters.add(letter)
    return letters


def _lone(letter: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w']){letter}(?![\w'])")


@dataclass(frozen=True)
class _Found:
    after: int
    """Where the equation that solves them ends."""
    solutions: list[_Solution]
    equation: _Equation


def _first_solved(answer: str, letters: set[str], known: set[Fraction]) -> _Found | None:
    """The first equation (or pair) that solves unknowns, and their solutions."""
    pending: list[_Equation] = []
    for match in _EQUATION.finditer(answer):
        equation = _equation(answer, match, letters, known)
        if equation is None:
            continue
        unknowns = equation.unknowns()
        if len(unknowns) == 1:
            return _Found(match.end(), [_alone(equation, unknowns[0])], equation)
        for earlier in pending:
            pair = _pair(earlier, equation, unknowns) if len(unknowns) == 2 else None
            if pair is not None:
                return _Found(match.end(), pair, equation)
        pending.append(equation)
    return None


def _all_stated(answer: str, found: _Found) -> str:
    """Each solution's statement annotated; of a pair, the one stated second follows from the
    value of the first (`b = 5s - 4` with s = 20), as the solution works it out."""
    first, *rest = sorted(found.solutions, key=lambda s: _statement(answer, found.after, s))
    answer, end = _stated(answer, found.after, first)
    for other in rest:
        if end is not None:
            other = _substituted(found.equation, first, other.letter)
        answer, _ = _stated(answer, found.after if end is None else end, other)
    return answer


def _substituted(equation: _Equation, known: _Solution, letter: str) -> _Solution:
    """`letter` from `equation` once the other unknown is `known`: `(c - a * known) / b`."""
    value = _Term(plain(known.value), known.value)
    numerator = _joined(equation.c(), "-", _joined(equation.a(known.letter), "*", value))
    template = _joined(numerator, "/", equation.a(letter))
    return _Solution(letter, template.text, template.value)


def _equation(
    answer: str, match: re.Match[str], letters: set[str], known: set[Fraction]
) -> _Equation | None:
    """An equation linear in `letters` over known numbers, else None."""
    left, right = match["left"].translate(_SIGNS), match["right"].translate(_SIGNS)
    results = {Fraction(r) for r in _RESULT.findall(answer, 0, match.start())}
    numbers = {Fraction(n) for n in _NUMBER.findall(f"{left}={right}")}
    if not numbers <= known | results | {Fraction(0), Fraction(1)}:
        return None
    try:
        equation = _Equation(_side(left, letters), _side(right, letters))
    except (_NotLinear, ArithmeticSyntaxError, ZeroDivisionError, SyntaxError):
        return None
    return equation if equation.unknowns() else None


def _alone(equation: _Equation, letter: str) -> _Solution:
    """`a * u = c` solved: `u = c / a`."""
    template = _joined(equation.c(), "/", equation.a(letter))
    return _Solution(letter, template.text, template.value)


def _pair(first: _Equation, second: _Equation, letters: list[str]) -> list[_Solution] | None:
    """Two equations in the same two unknowns solved by Cramer's rule; None if dependent."""
    if first.unknowns() != letters:
        return None
    p, q = letters
    a1, b1, c1 = first.a(p), first.a(q), first.c()
    a2, b2, c2 = second.a(p), second.a(q), second.c()
    determinant = _joined(_joined(a1, "*", b2), "-", _joined(a2, "*", b1))
    if determinant.value == 0:
        return None
    on_p = _joined(_joined(c1, "*", b2), "-", _joined(c2, "*", b1))
    on_q = _joined(_joined(a1, "*", c2), "-", _joined(a2, "*", c1))
    return [
        _Solution(letter, solved.text, solved.value)
        for letter, numerator in ((p, on_p), (q, on_q))
        for solved in [_joined(numerator, "/", determinant)]
    ]


def _side(text: str, letters: set[str]) -> _Linear:
    text = text.strip()
    if not set(re.findall(r"[A-Za-z]", text)) <= letters:
        raise _NotLinear(text)
    text = re.sub(r"(\d+(?:\.\d+)?)%", r"(\1/100)", text)
    # Each unknown stands as a name of its own (u_x), so that `2x` reads as a product.
    for letter in letters:
        text = re.sub(rf"(?<=[\d)])\s*(?={letter}|\()|(?<={letter}|\))\s*(?=[\d(])", "*", text)
        text = re.sub(rf"(?<=[{letter}])\s*(?={letter})", "*", text)
    text = re.sub(r"([A-Za-z])", r"u_\1", text)
    return _linear(ast.parse(text, mode="eval").body, text)


def _linear(node: ast.expr, text: str) -> _Linear:
    if isinstance(node, ast.Name) and re.fullmatch(r"u_[A-Za-z]", node.id):
        return _Linear({node.id[2:]: _ONE}, _ZERO)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        number = ast.get_source_segment(text, node) or str(node.value)
        return _Linear({}, _Term(number, Fraction(number)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _linear(node.operand, text)
        return _Linear(
            {k: _negated(t) for k, t in inner.coefficients.items()}, _negated(inner.constant)
        )
    if isinstance(node, ast.BinOp):
        return _combined(node.op, _linear(node.left, text), _linear(node.right, text))
    raise _NotLinear(text)


def _combined(op: ast.operator, left: _Linear, right: _Linear) -> _Linear:
    if isinstance(op, ast.Add | ast.Sub):
        sign = "+" if isinstance(op, ast.Add) else "-"
        letters = dict.fromkeys([*left.coefficients, *right.coefficients])
        return _Linear(
            {k: _joined(left.of(k), sign, right.of(k)) for k in letters},
            _joined(left.constant, sign, right.constant),
        )
    if isinstance(op, ast.Mult) and not (_has_unknown(left) and _has_unknown(right)):
        number, term = (left, right) if not _has_unknown(left) else (right, left)
        return _scaled(term, number.constant, "*")
    if isinstance(op, ast.Div) and not _has_unknown(right):
        return _scaled(left, right.constant, "/")
    raise _NotLinear("not linear")


def _has_unknown(side: _Linear) -> bool:
    return any(term.text != "0" for term in side.coefficients.values())


def _scaled(side: _Linear, by: _Term, sign: str) -> _Linear:
    """`side` multiplied or divided by a number."""
    if sign == "/" and by.value == 0:
        raise ZeroDivisionError(by.text)
    coefficients = {
        k: _joined(t, sign, by) if sign == "/" else _joined(by, sign, t)
        for k, t in side.coefficients.items()
    }
    constant = _joined(side.constant, sign, by) if sign == "/" else _joined(by, sign, side.constant)
    return _Linear(coefficients, constant)


def _negated(term: _Term) -> _Term:
    return _ZERO if term.text == "0" else _Term(f"-({term.text})", -term.value)


def _joined(left: _Term, sign: str, right: _Term) -> _Term:
    """`left sign right` as an expression, a term that is structurally 0 left out."""
    value = _VALUES[sign](left.value, right.value)
    if sign in "+-" and right.text == "0":
        return left
    if sign == "+" and left.text == "0":
        return right
    if (sign == "*" and "0" in (left.text, right.text)) or (sign == "/" and left.text == "0"):
        return _ZERO
    return _Term(f"({left.text}){sign}({right.text})", value)


_VALUES = {
    "+": Fraction.__add__,
    "-": Fraction.__sub__,
    "*": Fraction.__mul__,
    "/": Fraction.__truediv__,
}


def _said(solution: _Solution) -> re.Pattern[str]:
    """`x = 40`, `x = <<40=40>>40`, or `x = 48 / 3 = <<48/3=16>>16`, the arithmetic the prose
    did on the equation's numbers then given the equation's own."""
    letter, number = solution.letter, re.escape(plain(solution.value))
    return re.compile(
        rf"\b{letter}\s*=\s*(?:[^=<>\n]{{0,40}}=\s*)?\$?"
        rf"(?:<<[^<>=]*={number}>>|(?={number}(?!\d|[.,]\d)))"
    )


def _statement(answer: str, after: int, solution: _Solution) -> int:
    """Where the solution states the value after `after`; the text's end if it does not."""
    found = _said(solution).search(answer, after)
    return len(answer) if found is None else found.start()


def _stated(answer: str, after: int, solution: _Solution) -> tuple[str, int | None]:
    """`answer` with the first statement of the solved value after `after` annotated by its
    template, and where that annotation ends; the unknown's multiples stated on the way
    (`2B = <<36=36>>36`) are prose."""
    found = _said(solution).search(answer, after)
    if found is None or evaluate(solution.template) != solution.value:
        return answer, None
    annotation = f"<<{solution.template}={plain(solution.value)}>>"
    stated = found.group(0)
    if stated.endswith(">>"):
        stated = stated[: stated.rindex("<<")]
    letter = solution.letter
    between = re.sub(
        rf"(\b\d*{letter}\s*=\s*\$?)<<(?P<v>[\d.]+)=(?P=v)>>", r"\1", answer[after : found.start()]
    )
    head = f"{answer[:after]}{between}{stated}{annotation}"
    return head + answer[found.end() :], len(head)
