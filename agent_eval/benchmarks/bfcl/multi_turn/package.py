"""The parts of BFCL's package the multi-turn categories reuse, imported through the shim.

Each is imported on first use: bfcl-eval is an optional extra, and its model-handler
utilities take a fraction of a second to import.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType

from agent_eval.shims.bfcl_checker import bfcl_module

CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)


@cache
def bfcl_utils() -> ModuleType:
    """`bfcl_eval.utils`: its data files, read and completed as its generation step does."""
    return bfcl_module("utils")


@cache
def handler_utils() -> ModuleType:
    """`bfcl_eval.model_handler.utils`: tools, prompts and decoders of its model handlers."""
    return bfcl_module("model_handler.utils")


@cache
def executor() -> ModuleType:
    """`multi_turn_utils`: the executable backends' loader and call executor."""
    return bfcl_module("eval_checker.multi_turn_eval.multi_turn_utils")


@cache
def checker() -> ModuleType:
    """`multi_turn_checker`: BFCL's state-based and response-based verdict."""
    return bfcl_module("eval_checker.multi_turn_eval.multi_turn_checker")


@cache
def constants(name: str) -> ModuleType:
    """`bfcl_eval.constants.<name>`: prompts, limits, enums, type tables, backend paths."""
    return bfcl_module(f"constants.{name}")


def is_long_context(category: str) -> bool:
    """Whether BFCL loads the category's backends with their long-context scenario."""
    return "long_context" in category or "composite" in category
