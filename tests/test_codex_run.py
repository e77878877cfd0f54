"""OpenAI's Codex CLI evaluated by `agent-eval run --agent command` over two mock workers: a
row's files and check score the fix, and its calls, which carry no session id, are one
attempt's by its key and stay on one worker."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.agent_programs import RESPONSES, python_example
from tests.helpers.codex import codex_bin
from tests.helpers.command_runs import (
    assert_trajectory_is_what_the_worker_saw,
    dataset,
    run_command,
)
from tests.helpers.proxy import StartWorkers

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX = ToolCall("exec_command", json.dumps({"cmd": "sed -i 's/a - b/a + b/' calc.py"}))
DONE = "Fixed: add() in calc.py now returns a + b."


async def test_codex_fixes_a_rows_files_and_its_check_scores_it(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    codex = codex_bin()
    workers = await start_workers(2, responses_api=True)
    for worker in workers:
        worker.script(Reply(tool_calls=[FIX]), Reply(DONE))
    check = shlex.join([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"])
    row = {
        "question": "The test in test_calc.py fails. Fix calc.py so that it passes.",
        "files": {"calc.py": BUGGY, "test_calc.py": TEST},
        "check": check,
    }
    data = dataset(tmp_path / "bugs.jsonl", row)
    program = ["env", f"CODEX_BIN={codex}", *python_example("codex_cli.py")]
    code, err, [record] = await run_command(program, data, workers, tmp_path / "run")
    assert code == 0, err
    assert (record["error"], record["answer"], record["reward"], record["correct"]) == (
        None, DONE, 1.0, True
    )  # fmt: skip
    trajectory = record["trajectory"]
    assert trajectory["program"]["check"]["exit_code"] == 0
    assert "+    return a + b" in trajectory["program"]["diff"]
    # Both its calls went to one worker, the other was never asked.
    [used] = [worker for worker in workers if worker.served()]
    used.assert_script_used_up()
    assert [len(worker.served()) for worker in workers if worker is not used] == [0]
    assert_trajectory_is_what_the_worker_saw(trajectory, used, RESPONSES)
    [fix] = trajectory["tool_calls"]
    assert (fix["name"], json.loads(fix["arguments"])) == (FIX.name, json.loads(FIX.arguments))
