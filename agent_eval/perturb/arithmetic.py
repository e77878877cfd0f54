"""Exact arithmetic on calculator annotations (`48/2`): an AST walker over fractions, never eval."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from fractions import Fraction

_BINARY: dict[type[ast.operator], Callable[[Fraction, Fraction], Fraction]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type[ast.unaryop], Callable[[Fraction], Fraction]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_MAX_EXPONENT = 64
"""Larger powers are no arithmetic a word problem does, and would cost unbounded time."""


class ArithmeticSyntaxError(ValueError):
    """An expression that is not plain arithmetic on numbers."""


def evaluate(expression: str) -> Fraction:
    """The exact value of `+ - * / **` and parentheses over decimal numbers.

    Raises: ArithmeticSyntaxError for anything else; ZeroDivisionError on a division by zero.
    """
    expression = expression.strip()
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ArithmeticSyntaxError(f"not arithmetic: {expression!r}") from exc
    return _value(tree.body, expression)


def _value(node: ast.expr, expression: str) -> Fraction:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        # The source text, not the float: 0.1 stays exactly one tenth.
        return Fraction(ast.get_source_segment(expression, node) or str(node.value))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(_value(node.left, expression), _value(node.right, expression), expression)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left, expression), _value(node.right, expression)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_value(node.operand, expression))
    raise ArithmeticSyntaxError(f"not arithmetic: {expression!r}")


def _power(base: Fraction, exponent: Fraction, expression: str) -> Fraction:
    if exponent.denominator != 1 or abs(exponent) > _MAX_EXPONENT:
        raise ArithmeticSyntaxError(f"only small whole powers: {expression!r}")
    return base ** int(exponent)
