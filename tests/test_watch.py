"""`agent-eval watch`: checkpoints appear in a folder, get probed, and evaluated when it matters."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

from openai import AsyncOpenAI
from typer.testing import CliRunner

from agent_eval.backends.llamacpp import embedded_model
from agent_eval.checkpoint_server import _swap
from agent_eval.cli import app
from agent_eval.launch import WorkerEndpoint
from agent_eval.serving import Served
from agent_eval.testing.mock_worker import MockWorker
from tests.conftest import eventually
from tests.test_llamacpp_workers import servers_on


def decisions(watch_dir: Path) -> list[dict]:
    path = watch_dir / "decisions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_new_checkpoints_are_probed_and_evaluated_on_the_real_model(tmp_path: Path) -> None:
    checkpoints, watch_dir = tmp_path / "ckpts", tmp_path / "watch"
    (checkpoints / "checkpoint-50").mkdir(parents=True)
    (checkpoints / "checkpoint-50" / "config.json").write_text("{}")  # weights never written
    shutil.copy(embedded_model(), checkpoints / "step-100.gguf")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", "watch", str(checkpoints),
        "--agent", "math_calculator", "--probe-size", "2", "-o", str(watch_dir),
        "rollout.backend=llamacpp:d1", "dataset.limit=3", "agent.max_turns=1",
        "watch.settle_seconds=0", "watch.poll_interval=0.2", "watch.stop_after=2",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    await eventually(lambda: len(decisions(watch_dir)) == 1, 300)
    shutil.copy(embedded_model(), checkpoints / "step-200.gguf")
    _, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, err.decode()[-3000:]
    first, second = decisions(watch_dir)
    assert (first["step"], first["reason"], first["fired"]) == (100, "first", True)
    assert first["full"]["attempts"] == 3 and first["probe"]["attempts"] == 2
    assert second["step"] == 200 and second["probe"]["attempts"] == 2
    assert second["fired"] == ("full" in second)
    # llama.cpp cannot swap weights: the workers restarted on the new file.
    assert (first["model"], second["model"]) == ("step-100", "step-200")
    assert (watch_dir / "step-100" / "full" / "summary.json").is_file()
    assert json.loads((watch_dir / "trigger.json").read_text())["last_step"] == 200
    workers = json.loads((watch_dir / "workers.json").read_text())["workers"]
    assert servers_on({int(w["url"].rsplit(":", 1)[1]) for w in workers}) == []
    shown = CliRunner().invoke(app, ["report", str(watch_dir)])
    assert shown.exit_code == 0, shown.output
    assert "first" in shown.output and "200" in shown.output
    assert '<figure id="curve"><svg' in (watch_dir / "report.html").read_text()


async def test_sglang_workers_swap_weights_in_place(tmp_path: Path) -> None:
    checkpoint = tmp_path / "checkpoint-300"
    checkpoint.mkdir()
    async with MockWorker() as first, MockWorker() as second:
        workers = [WorkerEndpoint(w.url, "/health") for w in (first, second)]
        served = Served("http://unused/v1", "unused", AsyncOpenAI(api_key="x"), "m", workers)
        assert await _swap(served, checkpoint)
        assert first.state.model_path == second.state.model_path == str(checkpoint)
        assert not await _swap(served, tmp_path / "missing")  # refused: the caller restarts
