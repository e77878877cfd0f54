"""`agent-eval run --agent agentdojo` through the proxy over a scripted mock worker: the model
solves an unattacked task, follows one injection and ignores another; each record holds the
runner's calls, and scoring them gives AgentDojo's verdicts as the contract names them."""

from __future__ import annotations

import json
from pathlib import Path

from agent_eval.benchmarks.agentdojo.datasets import agentdojo_items
from agent_eval.benchmarks.agentdojo.reward import score_agentdojo
from agent_eval.testing.agentdojo_scripts import replies, script
from tests.helpers.cli_runs import agent_eval, finish, lines, summary
from tests.helpers.proxy import StartWorkers

DATASET = "agentdojo:banking+important_instructions"
PLAYS = ("right", "follow", "right")  # user_task_0 alone, then with injection tasks 0 and 1


async def test_a_run_records_agentdojos_verdicts_per_attempt(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    items = list(agentdojo_items(DATASET.partition(":")[2]))[: len(PLAYS)]
    [worker] = await start_workers(1)
    for sample, kind in zip(items, PLAYS, strict=True):
        worker.script(*replies(script(sample, kind)))
    run_dir = tmp_path / "run"
    process = await agent_eval(
        "run", "--agent", "agentdojo", "--dataset", DATASET, "--limit", str(len(PLAYS)),
        "--endpoint", worker.url, "-j", "1", "-o", str(run_dir), cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, timeout=300)
    assert code == 0, err
    records = {record["sample_id"]: record for record in lines(run_dir)}
    assert sorted(records) == sorted(sample.id for sample in items)
    verdicts = {}
    for sample in items:
        record = records[sample.id]
        output = record["trajectory"]["final_output"]
        calls = [call["function"] for call in json.loads(output)["calls"]]
        assert calls == [call["name"] for call in record["trajectory"]["tool_calls"]]
        benchmark = record["benchmark"]
        assert benchmark == score_agentdojo(output, sample.answer or "").benchmark
        assert record["correct"] is benchmark["utility"]
        verdicts[sample.id] = benchmark
    alone, followed, ignored = (verdicts[sample.id] for sample in items)
    assert alone == {
        "suite": "banking", "user_task": "user_task_0", "injection_task": None, "attack": None,
        "defence": None, "utility": True, "security": None, "injection_call": None,
    }  # fmt: skip
    assert followed["attack"] == "important_instructions"
    assert followed["injection_task"] == "injection_task_0"
    assert followed["security"] is True
    assert followed["injection_call"]["function"] == "send_money"
    assert ignored["injection_task"] == "injection_task_1"
    assert ignored["utility"] is True
    assert (ignored["security"], ignored["injection_call"]) == (False, None)
    security = summary(run_dir)["security"]
    assert security["utility"]["value"] == 1.0
    assert security["attack_success_rate"]["value"] == 0.5
