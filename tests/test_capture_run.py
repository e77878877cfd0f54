"""`agent-eval run eval.capture=true`: every attempt's trajectory is the proxy's record, in
the run's own process and in its other engine processes."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, write_dataset
from tests.helpers.proxy import StartWorkers


async def test_a_captured_run_keeps_the_proxys_record_of_every_attempt(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    process = await agent_eval(
        "run", "--agent", "math_calculator", "--dataset", str(data), *endpoints, "-n", "1",
        "-o", str(run_dir), "eval.capture=true", "eval.processes=2", cwd=tmp_path,
    )  # fmt: skip
    code, _, err = await finish(process, timeout=300)
    assert code == 0, err
    played = lines(run_dir)
    assert len(played) == ROWS
    for line in played:
        trajectory = line["trajectory"]
        assert line["error"] is None and line["model_calls"] == 1
        [call] = trajectory["model_calls"]
        assert call["worker"] in {w.url for w in workers} and call["prompt_tokens"] > 0
        # The Chat Completions shape the proxy saw, not the Agents SDK's items.
        last = trajectory["messages"][-1]
        assert last["role"] == "assistant" and last["content"] == trajectory["final_output"]
        assert trajectory["setups"][0]["tools"]
    log = (run_dir / "proxy.log").read_text()
    assert log.count("ended after 1 call(s)") == ROWS
