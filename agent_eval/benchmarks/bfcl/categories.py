"""BFCL's categories as its own table names them, and what each needs: how it is scored, in what
language its calls are written."""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from agent_eval.shims.bfcl_checker import bfcl_module

_mapping = bfcl_module("constants.category_mapping")
_utils = bfcl_module("utils")
_enums = bfcl_module("constants.enums")

SINGLE_TURN: list[str] = list(_mapping.SINGLE_TURN_CATEGORY)
MULTI_TURN: list[str] = list(_mapping.MULTI_TURN_CATEGORY)
VERSION_PREFIX: str = _mapping.VERSION_PREFIX
ALIASES = {"simple": "simple_python"}
"""Short names agent-eval accepts beside BFCL's own."""
ALL = "all"

Scoring = Literal["ast", "relevance", "multi_turn"]


def parts() -> list[str]:
    """Every part `bfcl:PART` names: BFCL's categories, their short names and `all`."""
    return [*ALIASES, *SINGLE_TURN, *MULTI_TURN, ALL]


def categories(part: str) -> list[str] | None:
    """The BFCL categories a part stands for; None for a part BFCL does not have."""
    if part == ALL:
        return SINGLE_TURN + MULTI_TURN
    category = ALIASES.get(part, part)
    return [category] if category in SINGLE_TURN + MULTI_TURN else None


@cache  # a few names, asked for once per answer scored
def scoring(category: str) -> Scoring:
    """How BFCL's eval_runner scores a category's entries."""
    if _utils.is_multi_turn(category):
        return "multi_turn"
    return "relevance" if _utils.is_relevance_or_irrelevance(category) else "ast"


@cache
def language(category: str) -> Any:
    """The `Language` BFCL's AST checker checks a category's values in."""
    if _utils.is_java(category):
        return _enums.Language.JAVA
    return _enums.Language.JAVASCRIPT if _utils.is_js(category) else _enums.Language.PYTHON


@cache
def return_format(category: str) -> Any:
    """The `ReturnFormat` BFCL decodes a category's prompt-mode answers in (relevance: Python)."""
    return _enums.ReturnFormat[language(category).name]


def is_multi_turn(category: str) -> bool:
    return scoring(category) == "multi_turn"
