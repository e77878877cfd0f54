"""A perturbed run end to end on mock workers whose right and wrong answers are known per
original and per variant: summary.json's robustness figures, exactly."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from agent_eval.data import Sample
from agent_eval.metrics.accuracy import accuracy
from agent_eval.metrics.paired import mcnemar_exact
from agent_eval.perturb import Variant
from agent_eval.progress.stats import RunStats
from agent_eval.run.config import load_run_config
from agent_eval.run.engine import Progress
from agent_eval.run.evaluation import evaluate, plan
from tests.helpers.observer import QuietObserver
from tests.helpers.proxy import StartWorkers
from tests.helpers.tune_jobs import two_step_workers, write_sums

SHIFT = "tests.test_robustness_run:shift"
LEAD = "tests.test_robustness_run:lead"
ROWS = 8
OFF = frozenset({7, 8})
"""Rows whose gold is off by one: the mock's right sum is marked wrong on the original."""


def _numbers(sample: Sample) -> tuple[int, int]:
    a, b = re.findall(r"\d+", sample.question or "")[:2]
    return int(a), int(b)


def shift(sample: Sample, rng: random.Random) -> Variant:
    """New numbers, gold recomputed: the two-step mock adds them, rightly, on every row."""
    a, b = _numbers(sample)
    return Variant(f"What is {a + 1} plus {b}?", str(a + 1 + b))


def lead(sample: Sample, rng: random.Random) -> Variant | None:
    """A number before the question, gold unchanged: the mock adds the wrong two numbers.
    Only rows 1-4 have one; the rest are skipped."""
    a, _ = _numbers(sample)
    if a > 4:
        return None
    return Variant(f"Tom has 50 stickers. {sample.question}", sample.answer or "")


class LastProgress(QuietObserver):
    """Keeps the engine's last progress: what the live view showed at the end."""

    last: Progress | None = None

    def on_progress(self, progress: Progress) -> None:
        self.last = progress


async def test_a_perturbed_run_gives_exactly_the_expected_robustness(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await two_step_workers(start_workers)
    data = write_sums(tmp_path / "sums.jsonl", rows=ROWS, wrong_gold=OFF)
    settings = [
        f"dataset.name={data}", f"rollout.endpoints=[{worker.url}]", "eval.n_samples=2",
        f"dataset.perturb=[{SHIFT}, {LEAD}]", f"output.dir={tmp_path / 'run'}",
    ]  # fmt: skip
    seen = LastProgress()
    await evaluate(plan(load_run_config(None, {}, settings)), seen)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # The live view's accuracy is the summary's: the originals' only.
    assert seen.last is not None and seen.last.played.attempts == 40
    counts = seen.last.run
    assert (counts.correct, counts.scored - counts.original_scored) == (12, 24)
    stats = RunStats()
    stats.update(seen.last)
    assert stats.snapshot().accuracy == accuracy(12, 16)

    # Originals: rows 1-6 right, 7-8 wrong (their gold is off), 2 attempts each.
    assert summary["quality"]["accuracy"]["value"] == 12 / 16
    assert summary["quality"]["accuracy"]["n"] == 16  # the variants are not in it
    robustness = summary["robustness"]
    assert robustness["original_accuracy"]["value"] == 12 / 16
    shifted, led = robustness["by_kind"][SHIFT], robustness["by_kind"][LEAD]
    # shift: every variant right; rows 7-8 go from wrong to right.
    assert shifted["accuracy"]["value"] == 1.0 and shifted["variants"] == ROWS
    counts = ("skipped", "pairs", "broke", "fixed")
    assert [shifted[name] for name in counts] == [0, 16, 0, 4]
    assert shifted["drop"]["value"] == pytest.approx(-0.25)
    assert shifted["mcnemar_p"] == pytest.approx(mcnemar_exact(0, 4))
    # lead: rows 1-4 only, every one wrong; their originals were right.
    assert led["accuracy"]["value"] == 0.0 and led["variants"] == 4
    assert [led[name] for name in counts] == [4, 8, 8, 0]
    assert led["drop"]["value"] == pytest.approx(1.0)
    assert led["mcnemar_p"] == pytest.approx(mcnemar_exact(8, 0))
    # Right on the original and on every variant it has: rows 5-6 (no lead), both attempts.
    assert robustness["robust_accuracy"]["value"] == 4 / 16
    assert robustness["robust_accuracy"]["n"] == 16
    # Efficiency counts every attempt played: 16 originals and 24 variants, 2 calls each.
    assert summary["efficiency"]["calls"]["model_calls"] == (16 + 24) * 2
