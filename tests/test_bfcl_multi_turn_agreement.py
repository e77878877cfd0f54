"""BFCL's multi-turn verdicts: ours and the package's own, item by item, on the same answers.

Every entry of the four categories (800) gets one scripted answer, the kinds taken in turn:
the ground truth itself, a wrong argument, a missing call, an extra call (the turn's last call
again), malformed arguments, a turn answered without any call. Our checker and BFCL's own
evaluation (its eval runner's per-entry evaluation with its OpenAI handler's decoder) judge the
same raw answers; every eighth entry is judged again with its answers written as prompt-mode
text. Playing 800 entries through a proxy would take minutes, so 24 of them, six a category
with every kind, are played through a proxy and a mock worker scripted with those answers,
and the play's own final output is what our checker judges there."""

from __future__ import annotations

import json
from collections import Counter
from types import SimpleNamespace
from typing import Any

import pytest

from agent_eval.agents import RunContext, Sampling
from agent_eval.benchmarks.bfcl.multi_turn.checker import score_multi_turn
from agent_eval.benchmarks.bfcl.multi_turn.data import multi_turn_items
from agent_eval.benchmarks.bfcl.multi_turn.package import CATEGORIES
from agent_eval.benchmarks.bfcl.multi_turn.play import play_multi_turn
from agent_eval.data.errors import DataError
from tests.helpers.bfcl_multi_turn import (
    KINDS,
    as_prompt,
    bfcl_entries,
    bfcl_evaluation,
    bfcl_verdict,
    script,
)
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers

FC = SimpleNamespace(mode="fc")


def test_item_counts_are_the_packages() -> None:
    for category in CATEGORIES:
        ids = [sample.id for sample in multi_turn_items(category)]
        assert ids == list(bfcl_entries(category)) and len(set(ids)) == len(ids) == 200


def test_an_unknown_category_names_the_ones_there_are() -> None:
    with pytest.raises(DataError, match="multi_turn_base, multi_turn_miss_func"):
        next(multi_turn_items("multi_turn_composite"))


def error_type(evaluation: dict[str, Any]) -> str | None:
    """BFCL's error type: at the top where its runner finds it, in `error` where its checker."""
    error = evaluation.get("error")
    return evaluation.get("error_type") or (error or {}).get("error_type")


def test_every_entry_is_judged_as_bfcl_judges_it_with_its_error_type() -> None:
    verdicts: Counter[tuple[str, bool]] = Counter()
    disagreements = []
    for category in CATEGORIES:
        for index, sample in enumerate(multi_turn_items(category)):
            gold = json.loads(sample.answer or "")
            kind = KINDS[index % len(KINDS)]
            result = script(gold, kind).result
            ours = score_multi_turn({"mode": "fc", "result": result}, gold)
            theirs = bfcl_evaluation(sample.id, category, result)
            verdicts[kind, ours.correct] += 1
            found = ours.benchmark or {}
            mine = (ours.correct, found.get("category"), found.get("error_type"))
            if mine != (theirs["valid"], category, error_type(theirs)):
                disagreements.append((sample.id, kind, ours.detail))
    assert disagreements == []
    assert sum(verdicts.values()) == 800
    # The answers were really told apart: every right one holds, the spoilt ones mostly fail.
    assert verdicts["right", False] == 0 and verdicts["right", True] > 130
    for kind in ("missing_call", "malformed", "no_call"):
        assert verdicts[kind, True] == 0, kind
    assert verdicts["wrong_argument", False] > 3 * verdicts["wrong_argument", True]


def test_prompt_mode_answers_are_judged_as_bfcl_judges_them() -> None:
    """Every eighth entry, its answer written as text, decoded by BFCL's prompt-mode decoder."""
    verdicts: Counter[bool] = Counter()
    for category in CATEGORIES:
        for index, sample in list(enumerate(multi_turn_items(category)))[::8]:
            gold = json.loads(sample.answer or "")
            result = as_prompt(script(gold, KINDS[index // 8 % len(KINDS)]).result)
            ours = score_multi_turn({"mode": "prompt", "result": result}, gold).correct
            assert ours == bfcl_verdict(sample.id, category, result, fc=False), sample.id
            verdicts[ours] += 1
    assert verdicts[True] > 10 and verdicts[False] > 50


def test_a_wrong_verdict_says_bfcls_error() -> None:
    sample = next(multi_turn_items("multi_turn_base"))
    gold = json.loads(sample.answer or "")
    verdict = score_multi_turn({"mode": "fc", "result": script(gold, "no_call").result}, gold)
    assert not verdict.correct and verdict.reward == 0.0
    assert verdict.benchmark is not None
    assert verdict.benchmark["category"] == "multi_turn_base"
    assert verdict.benchmark["error_type"] == "multi_turn:empty_turn_model_response"
    assert verdict.detail == f"multi_turn:empty_turn_model_response: {verdict.benchmark['error']}"
    stopped = score_multi_turn({"mode": "fc", "result": [[]]}, gold)
    assert stopped.benchmark is not None
    assert stopped.benchmark["error_type"] == "multi_turn:force_terminated"


@pytest.mark.parametrize("category", CATEGORIES)
async def test_plays_through_the_proxy_are_judged_as_bfcl_judges_them(
    category: str, start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    base_url = await start_proxy([worker])
    samples = list(multi_turn_items(category))[: len(KINDS)]
    for kind, sample in zip(KINDS, samples, strict=True):
        gold = json.loads(sample.answer or "")
        scripted = script(gold, kind)
        worker.script(*scripted.replies)
        ctx = RunContext(make_client(base_url, sample.id), "mock-model", sample.id, 7, Sampling())
        trajectory = await play_multi_turn(sample, ctx, FC)
        worker.assert_script_used_up()
        assert trajectory.error is None and trajectory.final_output is not None
        played = json.loads(trajectory.final_output)
        assert played["result"] == scripted.result
        ours = score_multi_turn(played, gold).correct
        assert ours == bfcl_verdict(sample.id, category, scripted.result), (sample.id, kind)
        assert ours is (kind == "right") or kind in ("extra_call", "wrong_argument")
