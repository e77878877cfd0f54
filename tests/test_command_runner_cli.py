"""`agent-eval run --agent command` as users type it, over mock workers: a real program calling
the proxy with the openai client, check commands that rescoring keeps (200 programs at once
and Ctrl-C among many: tests/test_command_scale.py).
"""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import orjson

from agent_eval.rescore import rescore
from tests.helpers.cli_runs import agent_eval, finish, lines, summary, write_dataset
from tests.helpers.proxy import StartWorkers

OPENAI_AGENT = """import json, os, sys
from openai import OpenAI

sample = json.load(sys.stdin)
client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY name the proxy
reply = client.chat.completions.create(
    model=os.environ["AGENT_EVAL_MODEL"],
    messages=[{"role": "user", "content": sample["question"]}],
)
print("asked:", sample["question"])
print(reply.choices[0].message.content)
"""
"""An agent program as anyone writes one: the mock worker's reply repeats its question."""
PROGRAMS = 4
"""Questions the openai program answers, twice each: each run of it imports the openai client,
a second of CPU on a busy machine."""


def write_rows(path: Path, rows: int, golds: tuple[str, ...] = ("42", "7")) -> Path:
    """`rows` questions whose golds take turns from `golds`."""
    data = [
        {"question": f"Task {i}", "answer": f"#### {golds[i % len(golds)]}"} for i in range(rows)
    ]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in data))
    return path


def shell_agent(path: Path, body: str) -> Path:
    """A shell script agent, executable."""
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


async def test_a_program_using_the_openai_client_is_evaluated_through_the_proxy(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    (tmp_path / "agent.py").write_text(OPENAI_AGENT)
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    cmd = shlex.join([sys.executable, str(tmp_path / "agent.py")])
    process = await agent_eval(
        "run", "--agent", "command", f"agent.options.cmd={cmd}", "--dataset", str(data),
        "--endpoint", worker.url, "--limit", str(PROGRAMS), "-n", "2", "-o", str(run_dir),
        cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 0, err
    records = lines(run_dir)
    assert len(records) == PROGRAMS * 2 and all(r["error"] is None for r in records)
    # The dataset's reward on the program's answer ("Say i" gives i): right on even i only.
    assert summary(run_dir)["quality"]["accuracy"]["value"] == 0.5
    assert all(r["correct"] == (int(r["answer"]) % 2 == 0) for r in records)
    program = records[0]["trajectory"]["program"]
    assert program["exit_code"] == 0 and "mock reply from w0: Say" in program["stdout_tail"]
    assert worker.state.stats.requests["/v1/chat/completions"] == PROGRAMS * 2


async def test_a_check_scores_the_run_and_rescoring_keeps_its_verdict(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    (worker,) = await start_workers(1)
    data, run_dir = write_rows(tmp_path / "tasks.jsonl", 4, ("1",)), tmp_path / "run"
    agent = shell_agent(tmp_path / "agent.sh", "echo 1 > out.txt\necho 1\n")
    # The check gives half marks, though the text answer matches every gold.
    check = shell_agent(tmp_path / "check.sh", """test -f out.txt && echo '{"score": 0.5}'\n""")
    process = await agent_eval(
        "run", "--agent", "command", f"agent.options.cmd={agent}", f"agent.options.check={check}",
        "--dataset", str(data), "--endpoint", worker.url, "-o", str(run_dir), cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process)
    assert code == 0, err
    assert [r["reward"] for r in lines(run_dir)] == [0.5] * 4
    assert summary(run_dir)["quality"]["accuracy"]["value"] == 0.0
    rescored = await asyncio.to_thread(rescore, run_dir, None, tmp_path / "again")
    assert rescored.changes.changed == 0
    assert [r["reward"] for r in lines(tmp_path / "again")] == [0.5] * 4
