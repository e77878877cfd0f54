"""BFCL's own evaluation of one answer, step by step as its code does it: its OpenAI handler
keeps the model's answer (`_parse_query_response_FC` or `_prompting`) and decodes it
(`decode_ast`), its eval_runner judges the entry (`_evaluate_single_ast_entry`,
`_evaluate_single_relevance_entry`). For the agreement test and the scoring benchmark, which
compare agent-eval's scoring against it; the functions named are BFCL's private ones.

The handler is made without the OpenAI client its constructor makes (which wants an API key):
nothing here calls a model. Checked against bfcl-eval 2026.3.23.
"""

from __future__ import annotations

from typing import Any

from agent_eval.shims.bfcl_checker import MODEL_NAME, bfcl_module

_runner = bfcl_module("eval_checker.eval_runner")
_openai = bfcl_module("model_handler.api_inference.openai_completion")
_base = bfcl_module("model_handler.base_handler")
_utils = bfcl_module("utils")
_enums = bfcl_module("constants.enums")


def openai_handler(fc: bool) -> Any:
    """BFCL's OpenAI Chat Completions handler, function-calling (`fc`) or prompting."""
    handler = _openai.OpenAICompletionsHandler.__new__(_openai.OpenAICompletionsHandler)
    _base.BaseHandler.__init__(handler, MODEL_NAME, 0, MODEL_NAME, fc)
    return handler


def kept_answer(handler: Any, completion: Any) -> Any:
    """What BFCL writes to its result file for a Chat Completions answer."""
    if handler.is_fc_model:
        return handler._parse_query_response_FC(completion)["model_responses"]
    return handler._parse_query_response_prompting(completion)["model_responses"]


def evaluate(
    handler: Any, result: Any, entry: dict[str, Any], ground_truth: Any, category: str
) -> dict[str, Any]:
    """BFCL's verdict on one kept answer, as its eval_runner gives it: {"valid": bool, ...}."""
    if _utils.is_relevance_or_irrelevance(category):
        return dict(
            _runner._evaluate_single_relevance_entry(
                handler, entry["id"], result, entry, MODEL_NAME, category
            )
        )
    language, return_format = _formats(category)
    return dict(
        _runner._evaluate_single_ast_entry(
            handler, entry["id"], result, ground_truth, entry, MODEL_NAME, category,
            language, return_format,
        )
    )  # fmt: skip


def _formats(category: str) -> tuple[Any, Any]:
    """The language and return format `ast_file_runner` picks for a category."""
    if _utils.is_java(category):
        return _enums.Language.JAVA, _enums.ReturnFormat.JAVA
    if _utils.is_js(category):
        return _enums.Language.JAVASCRIPT, _enums.ReturnFormat.JAVASCRIPT
    return _enums.Language.PYTHON, _enums.ReturnFormat.PYTHON
