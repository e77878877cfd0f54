"""`agent-eval perturb`: the variants each perturbation gives a dataset, counted with no model."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from agent_eval.cli import app
from agent_eval.data import Sample
from agent_eval.perturb.coverage import Coverage, coverage
from agent_eval.perturb.expand import perturbed
from tests.helpers.gsm8k_variants import KINDS, PerturbedGsm8k

QUESTION = "Tom has 3 apples and buys 4 more. How many?"
REPLAYABLE = {"question": QUESTION, "answer": "3+4=<<3+4=7>>7\n#### 7"}
UNWORKED = {"question": QUESTION, "answer": "He has 7.\n#### 7"}


def test_each_kind_counts_its_variants_against_the_originals() -> None:
    samples = [Sample("a", **REPLAYABLE), Sample("b", **UNWORKED)]
    counted = coverage(
        perturbed(samples, ["numbers", "distractor"], seed=0), ["numbers", "distractor"]
    )
    assert counted == [Coverage("numbers", 1, 2), Coverage("distractor", 2, 2)]
    assert [c.share for c in counted] == [0.5, 1.0]
    assert coverage([], ["numbers"])[0].share == 0.0


def test_the_command_prints_one_row_per_kind(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(row) + "\n" for row in (REPLAYABLE, UNWORKED)))
    args = ["perturb", "--dataset", "gsm8k", "--data-file", str(rows), "--perturb", "numbers,names"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    assert re.search(r"numbers\s+1\s+2\s+50\.0%", result.output), result.output
    assert re.search(r"names\s+2\s+2\s+100\.0%", result.output), result.output


def test_the_command_asks_for_the_perturbations_to_count(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(REPLAYABLE) + "\n")
    result = CliRunner().invoke(app, ["perturb", "--dataset", str(rows)])
    assert result.exit_code != 0
    assert "--perturb numbers,names,distractor" in result.output


def test_a_dataset_that_cannot_be_read_is_one_message(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    args = ["perturb", "--dataset", "gsm8k", "--data-file", str(missing), "--perturb", "names"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert str(missing) in result.output and "Traceback" not in result.output


def test_gsm8k_gets_a_variant_of_each_kind_for_most_problems(
    gsm8k_variants: PerturbedGsm8k,
) -> None:
    numbers, names, distractor = coverage(gsm8k_variants.items, KINDS)
    assert numbers.originals == 1319
    assert numbers.share >= 0.85, numbers
    assert names.share >= 0.39, names
    assert distractor.share == 1.0, distractor
