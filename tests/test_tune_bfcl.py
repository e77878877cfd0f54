"""`agent-eval tune` on a benchmark's dataset as users run it: BFCL's simple category over a
mock worker scripted to answer each drawn entry right or wrong, every trial scored by BFCL's
checker, and best.yaml a run of the same benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from agent_eval.data import load_dataset
from agent_eval.data.subset import seeded_subset
from agent_eval.testing.bfcl_answers import answer_kinds
from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.cli_runs import agent_eval, finish, lines, summary
from tests.helpers.proxy import StartWorkers

SUBSET, TRIALS = 4, 2


def reply(gold: str, kind: str) -> Reply:
    """The entry's ground-truth calls ("right") or one of its values spoilt ("wrong_value")."""
    truth = json.loads(gold)
    entry = {"id": "simple_python_0", "function": truth["functions"]}
    calls = dict(answer_kinds(entry, truth["ground_truth"]))[kind]
    assert isinstance(calls, list)
    return Reply(tool_calls=[ToolCall(name, arguments) for name, arguments in calls])


async def test_tune_on_bfcl_simple_scores_each_trial_by_bfcls_checker(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    drawn = list(seeded_subset(load_dataset("bfcl:simple"), SUBSET, 0))
    kinds = ["right", "wrong_value"] * (SUBSET // 2)
    answers = [reply(item.answer or "", kind) for item, kind in zip(drawn, kinds, strict=True)]
    worker.script(*answers * TRIALS)
    (tmp_path / "space.yaml").write_text("sampling.temperature: {float: [0.0, 1.0]}\n")
    command = [
        "tune", "--agent", "bfcl", "--dataset", "bfcl:simple", "--space", "space.yaml",
        "--endpoint", worker.url, "--trials", str(TRIALS), "--subset", str(SUBSET),
        "--pruner", "none", "-j", "1", "-o", "tune",
    ]  # fmt: skip
    code, out, err = await finish(await agent_eval(*command, cwd=tmp_path), 300)
    assert code == 0, out + err
    worker.assert_script_used_up()
    for trial in range(TRIALS):
        run_dir = tmp_path / "tune" / f"trial-{trial}"
        assert summary(run_dir)["quality"]["accuracy"]["value"] == 0.5
        records = {record["sample_id"]: record for record in lines(run_dir)}
        assert list(records) == [item.id for item in drawn]
        for item, kind in zip(drawn, kinds, strict=True):
            found = records[item.id]["benchmark"]
            assert found["category"] == "simple_python"
            assert (found["error_type"] is None) is (kind == "right"), found
    best = yaml.safe_load((tmp_path / "tune" / "best.yaml").read_text())
    assert best["agent"]["name"] == "bfcl" and best["dataset"]["name"] == "bfcl:simple"
