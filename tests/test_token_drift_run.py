"""Drift produced on purpose and reported: a run with `eval.tokens` over a mock worker whose
toy chat template renders a re-sent assistant turn differently drifts at every second call,
at the token where `<|end|>` became `<|end_of_turn|>`; without that template it never does."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

from agent_eval.metrics import DriftPoint, recorded_continuity
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.worker_state import Behavior
from tests.helpers.cli_runs import ROWS, agent_eval, finish, lines, write_dataset

# The mock worker's token fields and drifting template come with the proxy's token capture.


async def _run(tmp_path: Path, name: str, drift: bool) -> Path:
    """A math_calculator run with tokens over a two-step mock worker speaking vLLM's fields."""
    async with AsyncExitStack() as stack:
        worker = MockWorker("w", behavior=Behavior(two_step=True), token_fields="vllm", drift=drift)
        await stack.enter_async_context(worker)
        data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / name
        process = await agent_eval(
            "run", "--agent", "math_calculator", "--dataset", str(data), "--endpoint", worker.url,
            "-n", "1", "-o", str(run_dir), "eval.tokens=true", cwd=tmp_path,
        )  # fmt: skip
        code, out, err = await finish(process, timeout=300)
        assert code == 0, err
    (run_dir / "stdout.txt").write_text(out)
    return run_dir


@pytest.mark.slow
async def test_a_template_that_renders_a_turn_anew_drifts_and_is_reported(tmp_path: Path) -> None:
    run_dir = await _run(tmp_path, "drift", drift=True)
    for line in lines(run_dir):
        first, second = (call["tokens"] for call in line["trajectory"]["model_calls"])
        turn = recorded_continuity(line["trajectory"]["model_calls"]).turns[0]
        # "<|end" is shared; the earlier call ended "|>", the re-sent turn goes on "_of_turn|>".
        at = len(first["prompt_ids"]) + len(first["completion_ids"]) - 2
        assert (turn.call, turn.previous) == (1, 0)
        assert turn.drift == DriftPoint(at, expected=ord("|"), found=ord("_"))
        assert second["prompt_ids"][:at] == (first["prompt_ids"] + first["completion_ids"])[:at]
    continuity = json.loads((run_dir / "summary.json").read_text())["continuity"]
    assert continuity["drift_rate"]["value"] == 1.0 and continuity["drift_rate"]["n"] == ROWS
    assert continuity["attempts_with_drift"]["n"] == ROWS
    assert continuity["untokenized_calls"] == 0
    assert "drift rate" in (run_dir / "stdout.txt").read_text()


@pytest.mark.slow
async def test_a_template_that_renders_turns_alike_never_drifts(tmp_path: Path) -> None:
    run_dir = await _run(tmp_path, "steady", drift=False)
    continuity = json.loads((run_dir / "summary.json").read_text())["continuity"]
    assert continuity["drift_rate"]["value"] == 0.0 and continuity["drift_rate"]["n"] == ROWS
