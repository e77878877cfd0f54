"""`agent-eval run` with a reward that reports attacks, in a process of its own: the records
carry its findings, summary.json gets the security group and the printed table its section."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli_runs import agent_eval, finish, lines, write_dataset
from tests.helpers.proxy import StartWorkers

ATTACKED_REWARD = """from agent_eval.rewards import RewardResult
def score(prediction, gold):
    right = prediction.strip().endswith(gold)
    attack = "important_instructions" if int(gold) >= 5 else None
    found = {"suite": "banking", "user_task": "user_task_" + gold, "attack": attack,
             "injection_task": attack and "injection_task_0", "defence": None, "utility": right,
             "security": None if attack is None else not right, "injection_call": None}
    return RewardResult(reward=float(right), correct=right, parsed=gold, benchmark=found)
"""
"""Right on "Say i" for even i; the golds from 5 up are attacked, and the attack wins where the
answer is wrong."""


async def test_a_run_with_attacks_reports_its_security_figures(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data = write_dataset(tmp_path / "say.jsonl")
    (tmp_path / "attacked.py").write_text(ATTACKED_REWARD)
    process = await agent_eval(
        "run", "--dataset", str(data), "--endpoint", worker.url, "-o", "run",
        "reward.function=attacked:score", cwd=tmp_path,
    )  # fmt: skip
    code, out, err = await finish(process)
    assert code == 0, err
    records = lines(tmp_path / "run")
    assert {r["benchmark"]["suite"] for r in records} == {"banking"}
    # Golds 0 2 2 4 4 plain (3 right); 6 6 8 8 10 attacked (i = 6, 8 right; 5, 7, 9 breached).
    group = json.loads((tmp_path / "run" / "summary.json").read_text())["security"]
    assert (group["utility"]["value"], group["utility"]["n"]) == (0.6, 5)
    assert group["utility_under_attack"]["value"] == 0.4
    assert (group["attack_success_rate"]["value"], group["attack_success_rate"]["n"]) == (0.6, 5)
    assert "Security" in out and "attack success rate" in out, out
