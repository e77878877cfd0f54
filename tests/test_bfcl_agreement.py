"""score_bfcl gives BFCL's own verdict, item by item: scripted answers of every kind, as the
proxy returns them, scored by agent-eval's path (the runner's prediction document, then
score_bfcl) and by BFCL's (its OpenAI handler's kept answer and decode_ast, then its
eval_runner's evaluation of the entry), on entries of every single-turn category.

Shared by design: BFCL's `ast_checker` and its output-format helpers, which both call. Each
side's own: the entries and answers read (our loader, BFCL's), what is kept of the answer (our
runner's, BFCL's handler's) and how it is decoded and dispatched."""

from __future__ import annotations

import copy
import itertools
from collections import Counter
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from agent_eval.benchmarks.bfcl.categories import SINGLE_TURN
from agent_eval.benchmarks.bfcl.datasets import bfcl_items
from agent_eval.benchmarks.bfcl.reward import score_bfcl
from agent_eval.benchmarks.bfcl.single_turn import Mode, model_result, prediction
from agent_eval.data.records import Sample
from agent_eval.shims import bfcl_official
from agent_eval.shims.bfcl_checker import bfcl_module
from agent_eval.testing.bfcl_answers import answer_kinds, completion, python_text

PER_CATEGORY = 45  # spread over each category's file: 506 entries in all
_utils = bfcl_module("utils")
_paths = bfcl_module("constants.eval_config")
# The multi-turn categories have an agreement test of their own (test_bfcl_multi_turn_agreement).
CATEGORIES = SINGLE_TURN


@cache
def official_entries(category: str) -> tuple[dict[str, Any], ...]:
    """The category's entries as BFCL's evaluation loads them (no language hints)."""
    return tuple(_utils.load_file(_paths.PROMPT_PATH / _file(category), use_lock=False))


@cache
def official_answers(category: str) -> dict[str, Any]:
    """Possible answers by entry id, read by BFCL's own loader."""
    path = _paths.POSSIBLE_ANSWER_PATH / _file(category)
    return {a["id"]: a["ground_truth"] for a in _utils.load_file(path, use_lock=False)}


def _file(category: str) -> str:
    return f"{_paths.VERSION_PREFIX}_{category}.json"


def chosen(category: str) -> list[Sample]:
    samples = list(bfcl_items(category))
    step = max(1, len(samples) // PER_CATEGORY)
    return samples[::step][:PER_CATEGORY]


def cases() -> Iterator[tuple[str, Sample, str, Mode, dict[str, Any]]]:
    """(category, sample, kind, mode, completion body) for every chosen entry and answer kind."""
    for category in CATEGORIES:
        relevance = _utils.is_relevance_or_irrelevance(category)
        for sample in chosen(category):
            entry = _entry(category, sample.id)
            truth = None if relevance else official_answers(category)[sample.id]
            for kind, answer in answer_kinds(entry, truth):
                yield category, sample, kind, "fc", completion(answer)
                if isinstance(answer, list) and answer and kind != "malformed_arguments":
                    yield category, sample, kind, "prompt", completion(python_text(answer))


def _entry(category: str, entry_id: str) -> dict[str, Any]:
    return next(e for e in official_entries(category) if e["id"] == entry_id)


Verdict = tuple[bool, str | None]
"""Whether the answer is right, and the checker's error type when it is not."""


def ours(sample: Sample, mode: Mode, body: dict[str, Any]) -> Verdict:
    message = ChatCompletion.model_validate(body).choices[0].message
    document = prediction(sample.metadata["bfcl_category"], mode, model_result(message, mode))
    assert sample.answer is not None
    scored = score_bfcl(document, sample.answer)
    assert scored.benchmark is not None
    assert scored.benchmark["category"] == sample.metadata["bfcl_category"]
    return scored.correct, scored.benchmark["error_type"]


def theirs(category: str, sample: Sample, mode: Mode, body: dict[str, Any]) -> Verdict:
    handler = bfcl_official.openai_handler(fc=mode == "fc")
    kept = bfcl_official.kept_answer(handler, ChatCompletion.model_validate(body))
    entry = copy.deepcopy(_entry(category, sample.id))
    truth = None
    if not _utils.is_relevance_or_irrelevance(category):
        truth = copy.deepcopy(official_answers(category)[sample.id])
    found = bfcl_official.evaluate(handler, kept, entry, truth, category)
    return bool(found["valid"]), found.get("error_type")


def test_item_counts_equal_the_packages_files() -> None:
    for category in SINGLE_TURN:
        assert sum(1 for _ in bfcl_items(category)) == len(official_entries(category)), category
    simple = [s.id for s in bfcl_items("simple")]
    assert simple == [e["id"] for e in official_entries("simple_python")]
    # `all` starts with every single-turn entry, in BFCL's order of categories and lines.
    every = [e["id"] for category in SINGLE_TURN for e in official_entries(category)]
    assert [s.id for s in itertools.islice(bfcl_items("all"), len(every))] == every


def test_every_verdict_and_error_type_equals_bfcls_own_on_500_entries_of_every_category() -> None:
    verdicts: Counter[tuple[str, bool]] = Counter()
    disagreements = []
    entries = set()
    for category, sample, kind, mode, body in cases():
        entries.add(sample.id)
        mine, official = ours(sample, mode, body), theirs(category, sample, mode, body)
        verdicts[(kind, official[0])] += 1
        if mine != official:
            disagreements.append((sample.id, kind, mode, mine, official))
    assert disagreements == []
    assert len(entries) >= 500
    # The answers are what they claim to be: the gold is mostly right, a wrong call never is.
    right = verdicts[("right", True)] / (verdicts[("right", True)] + verdicts[("right", False)])
    assert right > 0.95
    for kind in ("wrong_function", "extra_call", "malformed_arguments", "wrong_value"):
        assert verdicts[(kind, False)] > verdicts[(kind, True)], kind


@pytest.mark.parametrize(
    ("category", "answer", "correct"),
    [("irrelevance", None, True), ("irrelevance", [], True), ("live_relevance", [], False)],
)
def test_relevance_counts_an_answer_without_calls_as_no_call(
    category: str, answer: Any, correct: bool
) -> None:
    sample = next(bfcl_items(category))
    assert ours(sample, "fc", completion(answer))[0] is correct
    assert theirs(category, sample, "fc", completion(answer))[0] is correct


def test_a_wrong_answer_says_bfcls_error_and_a_malformed_one_failed_to_parse() -> None:
    sample = next(bfcl_items("simple"))
    document = prediction("simple_python", "fc", [{"calculate_triangle_area": '{"base": 1}'}])
    assert sample.answer is not None
    wrong = score_bfcl(document, sample.answer)
    assert not wrong.correct and wrong.status == "ok"
    assert wrong.benchmark == {
        "category": "simple_python",
        "error_type": "simple_function_checker:missing_required",
        "error": "Missing required parameter: 'height'.",
    }
    assert wrong.detail == "simple_function_checker:missing_required: " + wrong.benchmark["error"]
    broken = score_bfcl(prediction("simple_python", "fc", [{"f": "{"}]), sample.answer)
    assert broken.status == "parse_failed" and broken.benchmark is not None
    assert broken.benchmark["error_type"] == "ast_decoder:decoder_failed"
    assert score_bfcl("not json", sample.answer).status == "parse_failed"
