"""score_bfcl: the verdict BFCL's own evaluation gives an answer.

AST categories: BFCL's `ast_checker` over the decoded calls, with the entry's functions,
possible answers, language and category; irrelevance: right when no call could be decoded,
relevance the opposite (as its eval_runner's `relevance_file_runner` decides); multi-turn
entries go to `multi_turn.checker`. Runs in the scoring processes.
"""

from __future__ import annotations

import json
from typing import Any

from agent_eval.benchmarks.bfcl.categories import language, return_format, scoring
from agent_eval.benchmarks.bfcl.decoding import decode_calls
from agent_eval.benchmarks.bfcl.multi_turn.checker import score_multi_turn
from agent_eval.rewards.result import RewardResult
from agent_eval.shims.bfcl_checker import MODEL_NAME, bfcl_module

_utils = bfcl_module("utils")
_ast = bfcl_module("eval_checker.ast_eval.ast_checker")


def score_bfcl(prediction: str, gold: str) -> RewardResult:
    """1.0 when BFCL's checker accepts the answer; detail says its error type and message."""
    try:
        answer, truth = json.loads(prediction), json.loads(gold)
        category = _category(truth) or answer["bfcl_category"]
    except (ValueError, TypeError, AttributeError, KeyError) as exc:
        return RewardResult.failed("parse_failed", f"not a bfcl prediction document: {exc}")
    kind = scoring(category)
    if kind == "multi_turn":
        return score_multi_turn(answer, truth)
    if kind == "relevance":
        return _relevance(answer, category)
    return _checked(answer, truth, category)


def _category(truth: dict[str, Any]) -> str | None:
    """The entry's category, as its gold names it (multi-turn golds say `category`)."""
    return truth.get("bfcl_category") or truth.get("category")


def _relevance(answer: dict[str, Any], category: str) -> RewardResult:
    """Irrelevance: right when the answer holds no call; relevance: when it holds one."""
    try:
        calls = decode_calls(answer["mode"], answer["result"], return_format(category))
        called = not _utils.is_empty_output(calls)
    except Exception:  # BFCL counts any decoding error as no call
        called = False
    expected = "irrelevance" not in category
    if called == expected:
        return _right(calls if called else None)
    said = "called a function" if called else "called no function"
    return RewardResult(0.0, False, None, detail=f"{category}: the model {said}")


def _checked(answer: dict[str, Any], truth: dict[str, Any], category: str) -> RewardResult:
    """BFCL's AST checker's verdict on the decoded calls."""
    try:
        calls = decode_calls(answer["mode"], answer["result"], return_format(category))
    except Exception as exc:  # BFCL counts any decoding error as a failed decoding
        return RewardResult.failed("parse_failed", f"ast_decoder:decoder_failed: {exc}")
    if not _utils.is_function_calling_format_output(calls):
        return RewardResult.failed("parse_failed", "ast_decoder:decoder_wrong_output_format")
    verdict = _ast.ast_checker(
        truth["functions"], calls, truth["ground_truth"], language(category), category, MODEL_NAME
    )
    if verdict["valid"]:
        return _right(calls)
    detail = f"{verdict['error_type']}: {'; '.join(map(str, verdict['error']))}"
    return RewardResult(0.0, False, json.dumps(calls, default=str), detail=detail)


def _right(calls: list[dict[str, Any]] | None) -> RewardResult:
    return RewardResult(1.0, True, json.dumps(calls, default=str) if calls is not None else None)
