"""The robustness group: variants set against their originals, attempt by attempt, by hand."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from agent_eval.metrics import (
    AttemptScore,
    Pair,
    Summary,
    mcnemar_exact,
    paired_differences,
    summarize,
)
from agent_eval.metrics.base import is_higher_better
from agent_eval.metrics.robustness import by_kind, original_accuracy, robust_accuracy
from agent_eval.metrics.summary import DIRECTIONS
from tests.helpers.records import attempt

T, F, U = True, False, None
"""Right, wrong, unscored (stopped by the infrastructure)."""

PLAYED: dict[str, list[bool | None]] = {
    "g1": [T, T],
    "g1~numbers": [T, F],
    "g1~names": [T, T],
    "g1~distractor": [T, F],
    "g2": [T, F],
    "g2~numbers": [F, T],
    "g2~names": [T, F],
    "g2~distractor": [F, F],
    "g3": [F, F],
    "g3~numbers": [F, F],
    "g3~names": [T, F],
    "g4": [T, T],
    "g4~names": [F, U],
    "g4~distractor": [F, F],
    "g5": [F, U],
}
"""Each sample's attempts 0 and 1. g4 has no numbers variant (say its solution failed to recompute),
g3 no distractor; g5 has none at all."""


def scores(played: dict[str, list[bool | None]]) -> list[AttemptScore]:
    found = []
    for sample_id, outcomes in played.items():
        original, _, kind = sample_id.partition("~")
        variant = {"variant_of": original, "perturbation": kind} if kind else {}
        for index, outcome in enumerate(outcomes):
            stopped: dict[str, Any] = {"scored": False, "error_kind": "timeout"}
            fields = stopped if outcome is None else {}
            found.append(attempt(sample_id, index, bool(outcome), "x", **variant, **fields))
    return found


def test_by_kind_gives_exactly_the_figures_worked_out_by_hand() -> None:
    kinds = summarize(scores(PLAYED), 1.0).by_kind
    assert list(kinds) == ["distractor", "names", "numbers"]
    numbers, names, distractor = kinds["numbers"], kinds["names"], kinds["distractor"]
    # numbers: 2 of 6 right; pairs g1 (T,T) (T,F), g2 (T,F) (F,T), g3 (F,F) (F,F).
    assert (numbers.accuracy.value, numbers.accuracy.n) == (2 / 6, 6)
    assert (numbers.variants, numbers.skipped) == (3, 2)  # g4 and g5 have none
    assert (numbers.pairs, numbers.broke, numbers.fixed) == (6, 2, 1)
    assert numbers.drop.value == pytest.approx(3 / 6 - 2 / 6)
    assert numbers.mcnemar_p == mcnemar_exact(2, 1) == 1.0
    # names: g4's attempt 1 is unscored, so no pair; g3 attempt 0 is fixed, g4 attempt 0 broke.
    assert (names.accuracy.value, names.accuracy.n) == (4 / 7, 7)
    assert (names.variants, names.skipped, names.pairs) == (4, 1, 7)
    assert (names.broke, names.fixed, names.drop.value) == (1, 1, 0.0)
    # distractor: 1 of 6 right; broken at g1#1, g2#0, g4#0 and g4#1; p = 2 / 2**4.
    assert (distractor.accuracy.value, distractor.variants, distractor.skipped) == (1 / 6, 3, 2)
    assert (distractor.pairs, distractor.broke, distractor.fixed) == (6, 4, 0)
    assert distractor.drop.value == pytest.approx(5 / 6 - 1 / 6)
    assert distractor.mcnemar_p == mcnemar_exact(4, 0) == 0.125


def test_the_drop_interval_is_the_paired_bootstrap_turned_round() -> None:
    drop = summarize(scores(PLAYED), 1.0).by_kind["distractor"].drop
    # Original as A and variant as B: B - A is minus the drop, its interval the drop's mirrored.
    by_sample = [
        [Pair(T, T, 1.0, 1.0), Pair(T, F, 1.0, 0.0)],
        [Pair(T, F, 1.0, 0.0), Pair(F, F, 0.0, 0.0)],
        [Pair(T, F, 1.0, 0.0), Pair(T, F, 1.0, 0.0)],
    ]
    changed = paired_differences(by_sample).accuracy
    assert (drop.value, drop.low, drop.high) == (-changed.value, -changed.high, -changed.low)
    assert 0 < drop.low < drop.value < drop.high <= 1


def test_robust_accuracy_needs_the_original_and_every_variant_right_at_that_attempt() -> None:
    summary = summarize(scores(PLAYED), 1.0)
    # Units: g1#0 (all right), g1#1, g2#0, g2#1, g3#0, g3#1, g4#0; g4#1 is undecided (names
    # unscored) and g5 has no variant.
    assert (summary.robust_accuracy.value, summary.robust_accuracy.n) == (1 / 7, 7)


def test_quality_counts_the_originals_and_efficiency_every_attempt() -> None:
    played = scores(PLAYED)
    summary = summarize(played, 1.0, ks=(1, 2))
    originals = summarize([s for s in played if s.variant_of is None], 1.0, ks=(1, 2))
    assert (summary.accuracy.value, summary.accuracy.n) == (5 / 9, 9)
    assert summary.original_accuracy == summary.accuracy
    assert summary.samples == 5 and summary.pass_at_k == originals.pass_at_k
    for name in ("mean_reward", "maj_at_k", "pass_hat_k", "consistency", "reward_variance"):
        assert getattr(summary, name) == getattr(originals, name), name
    assert (summary.attempts, summary.scored, summary.unscored) == (30, 28, 2)
    assert summary.tokens.total == 30 * 15 and summary.latency_s.n == 30


def test_the_figures_do_not_depend_on_the_order_the_attempts_arrive_in() -> None:
    played = scores(PLAYED)
    shuffled = random.Random(3).sample(played, len(played))
    first, second = summarize(played, 1.0).to_dict(), summarize(shuffled, 1.0).to_dict()
    assert first["robustness"] == second["robustness"]


def test_without_variants_the_group_is_quality_accuracy_and_nothing_else() -> None:
    summary = summarize(scores({"a": [T, F], "b": [T, U]}), 1.0)
    assert summary.original_accuracy == summary.accuracy and summary.accuracy.n == 3
    assert summary.robust_accuracy.n == 0 and summary.by_kind == {}
    data = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    assert data["robustness"]["robust_accuracy"]["value"] is None
    assert data["robustness"]["by_kind"] == {}


def test_summary_json_has_the_group_and_reads_back() -> None:
    summary = summarize(scores(PLAYED), 1.0)
    data = json.loads(json.dumps(summary.to_dict(), allow_nan=False))
    group = data["robustness"]
    assert list(group) == ["original_accuracy", "robust_accuracy", "by_kind", "flip_rate"]
    assert group["by_kind"]["numbers"]["drop"].keys() == {"value", "low", "high"}
    assert set(group["by_kind"]["names"]) == {
        *("accuracy", "variants", "skipped", "pairs", "broke", "fixed", "drop", "mcnemar_p")
    }
    assert data["higher_is_better"]["robustness"] == {
        "original_accuracy": True,
        "robust_accuracy": True,
        "by_kind": True,
        "flip_rate": False,
    }
    read = Summary.read(data)
    assert read is not None and read.by_kind == summary.by_kind
    assert read.to_dict() == summary.to_dict()


def test_a_summary_written_before_the_group_still_reads() -> None:
    session = {"turn_rewards": [1.0, 0.0], "turn_answers": ["4", "5"], "challenge_turns": [1]}
    data = summarize([attempt("s", 0, True, "4", **session)], 1.0).to_dict()
    old = json.loads(json.dumps(data, allow_nan=False))
    old["stability"]["flip_rate"] = old.pop("robustness")["flip_rate"]
    del old["higher_is_better"]["robustness"]
    read = Summary.read(old)
    assert read is not None and read.flip_rate == 1.0
    assert read.original_accuracy == read.accuracy and read.accuracy.value == 1.0
    assert read.by_kind == {} and read.robust_accuracy.n == 0


def test_each_metric_of_the_group_declares_its_direction() -> None:
    assert all(is_higher_better(fn) for fn in (original_accuracy, robust_accuracy, by_kind))
    assert DIRECTIONS["robustness"]["flip_rate"] is False
    assert "flip_rate" not in DIRECTIONS["stability"]
