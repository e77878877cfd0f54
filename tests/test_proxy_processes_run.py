"""`agent-eval run --proxy-processes 2`: each attempt's calls and record stay with the proxy
process that opened its key, so a run plays and records as with one process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, summary, write_dataset
from tests.helpers.proxy import StartWorkers


async def test_two_proxy_processes_give_a_captured_run_the_same_results_as_one(
    start_workers: StartWorkers, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    data = write_dataset(tmp_path / "say.jsonl")
    endpoints = [arg for w in workers for arg in ("--endpoint", w.url)]
    results = []
    for processes in ("1", "2"):
        run_dir = tmp_path / f"run-{processes}"
        process = await agent_eval(
            "run", "--agent", "math_calculator", "--dataset", str(data), *endpoints, "-n", "2",
            "-j", "8", "-o", str(run_dir), "--proxy-processes", processes, "eval.capture=true",
            "proxy.policy=fixed", cwd=tmp_path,
        )  # fmt: skip
        code, _, err = await finish(process, timeout=300)
        assert code == 0, err
        results.append((_played(run_dir), _outcome(summary(run_dir))))
    (one, one_outcome), (two, two_outcome) = results
    assert len(two) == 2 * ROWS and two == one
    assert two_outcome == one_outcome
    log = (tmp_path / "run-2" / "proxy.log").read_text()
    assert log.count("ended after 1 call(s)") == 2 * ROWS
    for member in ("[proxy 0]", "[proxy 1]"):  # both processes held attempts
        assert any(member in line and "opened" in line for line in log.splitlines()), member


def _outcome(summary: dict[str, Any]) -> tuple[Any, ...]:
    return summary["quality"], summary["attempts"], summary["scored"], summary["unscored"]


def _played(run_dir: Path) -> dict[tuple[str, int], Any]:
    """Each attempt's outcome and its captured calls (on the same workers: the fixed policy),
    their timings left out."""
    played = {}
    for line in lines(run_dir):
        trajectory = line["trajectory"]
        assert line["error"] is None and line["model_calls"] == 1
        calls = [{**c, "latency_s": None} for c in trajectory["model_calls"]]
        key = (line["sample_id"], line["attempt"])
        played[key] = (line["reward"], trajectory["final_output"], trajectory["messages"], calls)
    return played
