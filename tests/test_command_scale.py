"""200 command-runner attempts at once through `agent-eval run` over two mock workers, their
programs speaking through all three carriers of a key (OpenAI's header, Anthropic's, the
/a/KEY/v1 base path): no call recorded under the wrong attempt, none lost, no attempt left open
in the proxy and no process left, after the run; and the same after a Ctrl-C among 60 programs
at once and its resume.

The programs speak plain HTTP, as the SDKs do (whose real clients tests/test_real_agents*.py
run): 200 imports of the openai and anthropic SDKs would take minutes of CPU on two cores.
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
"""Programs at once in the whole run: the scale the harness holds."""
INTERRUPTED = 60
"""Programs at once when Ctrl-C comes: enough to stop many mid-call (each start costs CPU, and
the resume plays them again)."""

AGENT = """import json, os, random, subprocess, sys, urllib.request

sample = json.load(open(os.environ["AGENT_EVAL_SAMPLE_FILE"]))
sid, model = sample["id"], os.environ["AGENT_EVAL_MODEL"]
# A grandchild that would outlive the program if the harness stopped only the program.
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]])
rng = random.Random(sid)
calls, carrier = rng.randint(1, 4), int(sid[1:]) % 3
key, root = os.environ["OPENAI_API_KEY"], os.environ["ANTHROPIC_BASE_URL"]
if carrier == 1:  # Anthropic's header, on its route
    url = root + "/v1/messages"
    headers = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
elif carrier == 2:  # the key in the base path, as a client that cannot set a key sends it
    url, headers = root + "/a/" + key + "/v1/chat/completions", {}
else:  # OpenAI's header
    url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
    headers = {"Authorization": "Bearer " + key}

def events(response):
    for line in response:
        if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
            yield json.loads(line[6:])

def say(history, stream):
    body = {"model": model, "messages": history, "stream": stream, "max_tokens": 64}
    sent = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers}
    )
    with urllib.request.urlopen(sent, timeout=300) as response:
        if not stream:
            answer = json.load(response)
            if carrier == 1:
                return answer["content"][0]["text"]
            return answer["choices"][0]["message"]["content"]
        if carrier == 1:
            deltas = (e["delta"] for e in events(response) if e["type"] == "content_block_delta")
            return "".join(delta.get("text", "") for delta in deltas)
        chunks = (c["choices"][0]["delta"] for c in events(response) if c.get("choices"))
        return "".join(delta.get("content") or "" for delta in chunks)

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


def write_samples(path: Path, count: int) -> Path:
    """`count` distinct questions whose gold is the number of calls their program makes."""
    rows = [
        {"id": i, "question": f"How many calls for {i}?", "answer": f"#### {calls_of(i)}"}
        for i in ids(count)
    ]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def run_args(
    workers: list[MockWorker], tmp_path: Path, count: int = SAMPLES
) -> tuple[list[str], Path, str]:
    """`run`'s arguments for `count` programs at once over `workers`, its run directory and
    the argument that marks the program's grandchildren."""
    (tmp_path / "agent.py").write_text(AGENT)
    mark = str(tmp_path / "grandchild")
    cmd = shlex.join([sys.executable, str(tmp_path / "agent.py"), mark])
    run_dir = tmp_path / "run"
    endpoints = [arg for worker in workers for arg in ("--endpoint", worker.url)]
    args = [
        "run", "--agent", "command", f"agent.options.cmd={cmd}", "--dataset",
        str(write_samples(tmp_path / "samples.jsonl", count)), *endpoints, "-j", str(count),
        "-o", str(run_dir),
    ]  # fmt: skip
    return args, run_dir, mark


def prompts(record: dict) -> list[str]:
    """The user prompts of an attempt's trajectory, in order (a text, or Messages' blocks)."""
    said = [m["content"] for m in record["trajectory"]["messages"] if m["role"] == "user"]
    return [text if isinstance(text, str) else text[0]["text"] for text in said]


def assert_each_attempt_holds_its_own_calls(records: list[dict], count: int = SAMPLES) -> None:
    """Every attempt's trajectory holds its program's calls, in order, and no other's."""
    assert sorted(r["sample_id"] for r in records) == ids(count)
    for record in records:
        sid, made = record["sample_id"], calls_of(record["sample_id"])
        assert record["error"] is None, record["error"]
        assert record["answer"] == str(made) and record["correct"]
        assert prompts(record) == [f"sample {sid} call {n}" for n in range(1, made + 1)]
        assert len(record["trajectory"]["model_calls"]) == made


def assert_workers_served_every_call(records: list[dict], workers: list[MockWorker]) -> None:
    """As many calls recorded as the workers served, on both workers (a request the proxy sent
    again, to another worker, is served twice and recorded once, with its retry)."""
    calls = [call for r in records for call in r["trajectory"]["model_calls"]]
    served = [worker.stats.generation_requests for worker in workers]
    assert len(calls) == sum(calls_of(i) for i in ids())
    assert sum(served) == len(calls) + sum(call["retries"] for call in calls)
    assert all(served), served


def assert_no_attempt_left_open(run_dir: Path) -> None:
    """The proxy's log: every key it opened was ended, and at its stop none was open."""
    log = (run_dir / "proxy.log").read_text()
    opened = Counter(re.findall(r"attempt (\w+) \(.*?\) opened for", log))
    ended = Counter(re.findall(r"attempt (\w+) \(.*?\) ended after", log))
    assert opened and opened == ended
    assert "open at stop" not in log


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


async def test_ctrl_c_among_many_programs_then_resume_loses_and_leaves_nothing(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.latency = 1.0  # programs still playing when Ctrl-C comes
    args, run_dir, mark = run_args(workers, tmp_path, INTERRUPTED)
    process = await agent_eval(*args, cwd=tmp_path)
    await eventually(lambda: len(running_with(mark)) >= INTERRUPTED // 2, 600)
    process.send_signal(signal.SIGINT)
    code, _, err = await finish(process, 300)
    assert code == 130 and "interrupted" in err, err
    assert_no_process_left(tmp_path, mark)
    assert_no_attempt_left_open(run_dir)
    kept = kept_whole(run_dir)
    assert len(kept) < INTERRUPTED

    for worker in workers:
        worker.behavior.latency = 0.0
    code, _, err = await finish(
        await agent_eval("run", "--resume", str(run_dir), cwd=tmp_path), 900
    )
    assert code == 0, err
    records = lines(run_dir)
    assert records[: len(kept)] == kept
    assert_each_attempt_holds_its_own_calls(records, INTERRUPTED)
    assert_no_attempt_left_open(run_dir)
    assert_no_process_left(tmp_path, mark)
