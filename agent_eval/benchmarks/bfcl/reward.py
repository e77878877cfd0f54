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
from agent_eval.benchmarks.bfcl.decoding import Calls, decode_calls
from agent_eval.benchmarks.bfcl.findings import right, wrong
from agent_eval.benchmarks.bfcl.multi_turn.checker import score_multi_turn
from agent_eval.rewards.result import RewardResult
from agent_eval.shims.bfcl_checker import MODEL_NAME, bfcl_module

_utils = bfcl_module("utils")
_ast = bfcl_module("eval_checker.ast_eval.ast_checker")

# BFCL's eval_runner's messages for the failures it finds itself, before its checkers.
_DECODED = "Valid syntax. Successfully decode AST when it should not."
_UNDECODED = "Invalid syntax. Failed to decode AST when it should have."
_UNDECODABLE = "Invalid syntax. Failed to decode AST."
_WRONG_FORMAT = "Did not output in the specified format."


def score_bfcl(prediction: str, gold: str) -> RewardResult:
    """1.0 when BFCL's checker accepts the answer; `benchmark` holds the category and, when
    wrong, the checker's error type and message (`detail` says both)."""
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
    if "irrelevance" in category:
        if not called:
            return right(category, None)
        return wrong(category, "irrelevance_error:decoder_success", _DECODED)
    if called:
        return right(category, _canonical(calls))
    return wrong(category, "relevance_error:decoder_failed", _UNDECODED)


def _checked(answer: dict[str, Any], truth: dict[str, Any], category: str) -> RewardResult:
    """BFCL's AST checker's verdict on the decoded calls."""
    try:
        calls = decode_calls(answer["mode"], answer["result"], return_format(category))
    except Exception as exc:  # BFCL counts any decoding error as a failed decoding
        return wrong(
            category, "ast_decoder:decoder_failed", f"{_UNDECODABLE} {exc}", status="parse_failed"
        )
    if not _utils.is_function_calling_format_output(calls):
        kind = "ast_decoder:decoder_wrong_output_format"
        return wrong(category, kind, _WRONG_FORMAT, status="parse_failed")
    verdict = _ast.ast_checker(
        truth["functions"], calls, truth["ground_truth"], language(category), category, MODEL_NAME
    )
    if verdict["valid"]:
        return right(category, _canonical(calls))
    message = "; ".join(map(str, verdict["error"]))
    return wrong(category, verdict["error_type"], message, _canonical(calls))


def _canonical(calls: Calls | None) -> str:
    return json.dumps(calls, default=str)
