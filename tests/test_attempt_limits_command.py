"""eval.limits on agent programs (`agent-eval run --agent command`): the proxy refuses the
program's call past its attempt's tokens or cost, the program sees a clear error, and the
attempt ends as limit_exceeded naming the limit, with the calls made up to there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_eval.testing.replies import Reply, ToolCall
from tests.helpers.agent_programs import python_example
from tests.helpers.command_runs import dataset, run_command
from tests.helpers.programs import agent_script, running
from tests.helpers.proxy import StartWorkers

ROW = {"question": "A crate holds 16 bottles. How many bottles are in 3 crates?", "answer": "48"}
CALCULATE = ToolCall("calculator", json.dumps({"expression": "16 * 3"}))
PRICES = ("eval.prices.mock-model.prompt=1000000", "eval.prices.mock-model.completion=1000000")
"""A token costs 1: a cost limit reads as a token limit."""


@pytest.mark.parametrize(("limit", "settings"), [("tokens", ()), ("cost", PRICES)])
async def test_a_programs_call_past_its_tokens_is_refused_and_the_attempt_ends_there(
    start_workers: StartWorkers, tmp_path: Path, limit: str, settings: tuple[str, ...]
) -> None:
    [worker] = await start_workers(1)
    worker.script(Reply(tool_calls=[CALCULATE]), Reply("48"))
    data = dataset(tmp_path / "data.jsonl", ROW)
    # Any first call uses a token: the second would go past.
    code, err, [record] = await run_command(
        python_example("anthropic_tool_loop.py"), data, [worker], tmp_path / "run",
        f"eval.limits.{limit}=1", *settings,
    )  # fmt: skip
    assert code == 0, err
    error = record["error"]
    assert (error["kind"], error["class"], error["limit"]) == ("limit_exceeded", "model", limit)
    assert f"eval.limits.{limit}=1" in error["message"], error
    assert (record["reward"], record["correct"]) == (0.0, False)
    # The proxy refused the second call before any worker saw it; the first is kept.
    assert len(worker.served()) == 1 and record["model_calls"] == 1
    [call] = record["trajectory"]["model_calls"]
    assert call["prompt_tokens"] + call["completion_tokens"] >= 1
    # The program was told why: the proxy's error, which its stderr shows.
    assert "so its calls are refused" in record["trajectory"]["program"]["stderr_tail"]


ONE_CALL = """
import urllib.request
asked = {"model": os.environ["OPENAI_MODEL"], "messages": [{"role": "user", "content": "?"}]}
request = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    json.dumps(asked).encode(),
    {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"},
)
print(json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"])
"""
"""A program of one call, from the standard library: it works a fraction of a second."""


async def test_a_programs_working_time_leaves_out_its_calls_wait_for_a_free_worker(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    busy, free = await start_workers(2)
    busy.behavior.error_status = 429  # the call tries it first, then waits to go to `free`
    free.script(Reply("48"))
    data = dataset(tmp_path / "data.jsonl", ROW)
    program = [sys.executable, str(agent_script(tmp_path, ONE_CALL))]
    # The call waits 3 to 6 s, longer than the program's working time; the engine reads the
    # wait so far in the proxy's record while the call still waits.
    code, err, [record] = await run_command(
        program, data, [busy, free], tmp_path / "run", "eval.limits.working_time=2",
        "proxy.policy=round_robin", "proxy.retry.backoff_base=6", "proxy.retry.backoff_max=6",
    )  # fmt: skip
    assert code == 0, err
    assert record["error"] is None and record["correct"] is True, record["error"]
    assert record["latency_s"] > 2
    [call] = record["trajectory"]["model_calls"]
    assert call["worker"] == free.url


async def test_a_program_past_its_wall_time_is_stopped_and_never_replayed(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    [worker] = await start_workers(1)
    data = dataset(tmp_path / "data.jsonl", ROW)
    pid_file = tmp_path / "pid"
    body = f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    program = [sys.executable, str(agent_script(tmp_path, body))]
    code, err, [record] = await run_command(
        program, data, [worker], tmp_path / "run", "eval.limits.wall_time=2"
    )
    assert code == 0, err
    error = record["error"]
    # Its time spent before any model call is still its own: the model's failure, kept.
    assert (error["kind"], error["class"], error["limit"]) == (
        "limit_exceeded",
        "model",
        "wall_time",
    )
    assert record["trajectory"]["replays"] == [] and record["correct"] is False
    assert not running(int(pid_file.read_text()))
