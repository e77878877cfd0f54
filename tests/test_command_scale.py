"""200 command-runner attempts at once through `agent-eval run` over two mock workers, their
programs speaking through all three carriers of a key (OpenAI's header, Anthropic's, the
/a/KEY/v1 base path): no call recorded under the wrong attempt, none lost, no attempt left open
in the proxy and no process left, after the run and after a Ctrl-C mid-run and its resume.
"""

from __future__ import annotations

import random
import re
import shlex
import signal
import sys
from collections import Counter
from pathlib import Path

import orjson

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import agent_eval, finish, lines, summary
from tests.helpers.processes import running_with
from tests.helpers.proxy import StartWorkers
from tests.helpers.waits import eventually

SAMPLES = 200

AGENT = """import json, os, random, subprocess, sys

sample = json.load(open(os.environ["AGENT_EVAL_SAMPLE_FILE"]))
sid, model = sample["id"], os.environ["AGENT_EVAL_MODEL"]
# A grandchild that would outlive the program if the harness stopped only the program.
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]])
rng = random.Random(sid)
calls, carrier = rng.randint(1, 4), int(sid[1:]) % 3
if carrier == 1:
    from anthropic import Anthropic
    client = Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY
else:
    from openai import OpenAI
    if carrier == 2:  # the key in the base path, as a client that cannot set a key would
        base = os.environ["ANTHROPIC_BASE_URL"] + "/a/" + os.environ["OPENAI_API_KEY"] + "/v1"
        client = OpenAI(base_url=base, api_key="no-key", max_retries=0)
    else:
        client = OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY

def say(history, stream):
    if carrier == 1:
        asked = dict(model=model, max_tokens=64, messages=history)
        if stream:
            with client.messages.stream(**asked) as events:
                return events.get_final_text()
        return client.messages.create(**asked).content[0].text
    reply = client.chat.completions.create(model=model, messages=history, stream=stream)
    if stream:
        return "".join(c.choices[0].delta.content or "" for c in reply if c.choices)
    return reply.choices[0].message.content

history = []
for number in range(1, calls + 1):
    history.append({"role": "user", "content": f"sample {sid} call {number}"})
    history.append({"role": "assistant", "content": say(history, rng.random() < 0.5)})
print(calls)
"""
"""The program of every attempt: 1-4 calls (seeded by the sample id), streamed or not at random,
each prompt naming its sample and its number, the conversation growing; it answers its count."""


def ids(count: int = SAMPLES) -> list[str]:
    return [f"s{i:03d}" for i in range(count)]


def calls_of(sample_id: str) -> int:
    """How many calls the program makes for `sample_id` (its first draw)."""
    return random.Random(sample_id).randint(1, 4)


def write_samples(path: Path) -> Path:
    """SAMPLES distinct questions whose gold is the number of calls their program makes."""
    rows = [
        {"id": i, "question": f"How many calls for {i}?", "answer": f"#### {calls_of(i)}"}
        for i in ids()
    ]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def run_args(workers: list[MockWorker], tmp_path: Path) -> tuple[list[str], Path, str]:
    """`run`'s arguments for the program over `workers`, its run directory and the argument
    that marks the program's grandchildren."""
    (tmp_path / "agent.py").write_text(AGENT)
    mark = str(tmp_path / "grandchild")
    cmd = shlex.join([sys.executable, str(tmp_path / "agent.py"), mark])
    run_dir = tmp_path / "run"
    endpoints = [arg for worker in workers for arg in ("--endpoint", worker.url)]
    args = [
        "run", "--agent", "command", f"agent.options.cmd={cmd}", "--dataset",
        str(write_samples(tmp_path / "samples.jsonl")), *endpoints, "-j", str(SAMPLES),
        "-o", str(run_dir),
    ]  # fmt: skip
    return args, run_dir, mark


def prompts(record: dict) -> list[str]:
    """The user prompts of an attempt's trajectory, in order (a text, or Messages' blocks)."""
    said = [m["content"] for m in record["trajectory"]["messages"] if m["role"] == "user"]
    return [text if isinstance(text, str) else text[0]["text"] for text in said]


def assert_each_attempt_holds_its_own_calls(records: list[dict]) -> None:
    """Every attempt's trajectory holds its program's calls, in order, and no other's."""
    assert sorted(r["sample_id"] for r in records) == ids()
    for record in records:
        sid, made = record["sample_id"], calls_of(record["sample_id"])
        assert record["error"] is None, record["error"]
        assert record["answer"] == str(made) and record["correct"]
        assert prompts(record) == [f"sample {sid} call {n}" for n in range(1, made + 1)]
        assert len(record["trajectory"]["model_calls"]) == made


def assert_workers_served_every_call(records: list[dict], workers: list[MockWorker]) -> None:
    """As many calls recorded as the workers served, on both workers."""
    recorded = sum(len(r["trajectory"]["model_calls"]) for r in records)
    served = [worker.stats.generation_requests for worker in workers]
    assert recorded == sum(calls_of(i) for i in ids()) == sum(served)
    assert all(served), served


def assert_no_attempt_left_open(run_dir: Path) -> None:
    """The proxy's log: every key it opened was ended, and at its stop none was open."""
    log = (run_dir / "proxy.log").read_text()
    opened = Counter(re.findall(r"attempt (\w+) \(.*?\) opened for", log))
    ended = Counter(re.findall(r"attempt (\w+) \(.*?\) ended after", log))
    assert opened and opened == ended
    assert set(re.findall(r"(\d+) attempt\(s\) open at stop", log)) == {"0"}


def assert_no_process_left(tmp_path: Path, mark: str) -> None:
    assert running_with(str(tmp_path / "agent.py")) == [] and running_with(mark) == []


def kept_whole(run_dir: Path) -> list[dict]:
    """The records samples.jsonl keeps, which ends at a line's end (none when it is not there:
    no attempt had finished)."""
    path = run_dir / "samples.jsonl"
    data = path.read_bytes() if path.exists() else b""
    assert data == b"" or data.endswith(b"\n")
    return [orjson.loads(line) for line in data.splitlines()]


async def test_200_programs_at_once_each_get_exactly_their_own_calls(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    args, run_dir, mark = run_args(workers, tmp_path)
    code, _, err = await finish(await agent_eval(*args, cwd=tmp_path), 900)
    assert code == 0, err
    records = lines(run_dir)
    assert_each_attempt_holds_its_own_calls(records)
    assert_workers_served_every_call(records, workers)
    assert summary(run_dir)["quality"]["accuracy"]["value"] == 1.0
    assert_no_attempt_left_open(run_dir)
    assert_no_process_left(tmp_path, mark)


async def test_ctrl_c_among_200_programs_then_resume_loses_and_leaves_nothing(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.latency = 1.0  # programs still playing when Ctrl-C comes
    args, run_dir, mark = run_args(workers, tmp_path)
    process = await agent_eval(*args, cwd=tmp_path)
    await eventually(lambda: len(running_with(mark)) >= SAMPLES // 2, 600)
    process.send_signal(signal.SIGINT)
    code, _, err = await finish(process, 300)
    assert code == 130 and "interrupted" in err, err
    assert_no_process_left(tmp_path, mark)
    assert_no_attempt_left_open(run_dir)
    kept = kept_whole(run_dir)
    assert len(kept) < SAMPLES

    for worker in workers:
        worker.behavior.latency = 0.0
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(run_dir), cwd=tmp_path), 900
    )
    assert code == 0, err
    records = lines(run_dir)
    assert records[: len(kept)] == kept
    assert_each_attempt_holds_its_own_calls(records)
    assert_no_attempt_left_open(run_dir)
    assert_no_process_left(tmp_path, mark)
