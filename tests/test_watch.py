"""`agent-eval watch`: checkpoints appear in a folder, get probed, and evaluated when it matters."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
from openai import AsyncOpenAI
from typer.testing import CliRunner

from agent_eval.backends.llamacpp import embedded_model
from agent_eval.cli import app
from agent_eval.run.config import RunConfig
from agent_eval.run.serving import Served
from agent_eval.run.workers import WorkerEndpoint
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.trigger import checkpoint_server
from agent_eval.trigger.checkpoint_server import CheckpointServer, _swap
from tests.helpers.llamacpp import ONE_THREAD, servers_on
from tests.helpers.proxy import MakeClient, StartProxy
from tests.helpers.waits import eventually
from tests.helpers.watches import decisions, fake_serving

KEY = "worker-key-7"


async def test_new_checkpoints_are_probed_and_evaluated_on_the_real_model(tmp_path: Path) -> None:
    checkpoints, watch_dir = tmp_path / "ckpts", tmp_path / "watch"
    (checkpoints / "checkpoint-50").mkdir(parents=True)
    (checkpoints / "checkpoint-50" / "config.json").write_text("{}")  # weights never written
    shutil.copy(embedded_model(), checkpoints / "step-100.gguf")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", "watch", str(checkpoints),
        "--agent", "math_calculator", "--probe-size", "1", "-o", str(watch_dir),
        "rollout.backend=llamacpp:d1", ONE_THREAD, "dataset.limit=2",
        "agent.max_turns=1",
        "watch.settle_seconds=0", "watch.poll_interval=0.2", "watch.stop_after=2",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    await eventually(lambda: len(decisions(watch_dir)) == 1, 300)
    shutil.copy(embedded_model(), checkpoints / "step-200.gguf")
    _, err = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, err.decode()[-3000:]
    first, second = decisions(watch_dir)
    assert (first["step"], first["reason"], first["fired"]) == (100, "first", True)
    # The first checkpoint has nothing to be compared with: it is evaluated unprobed.
    assert first["full"]["attempts"] == 2 and "probe" not in first
    assert second["step"] == 200 and second["probe"]["attempts"] == 1
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
        assert await _swap(served, checkpoint, None)
        assert first.state.model_path == second.state.model_path == str(checkpoint)
        assert not await _swap(served, tmp_path / "missing", None)  # refused: the caller restarts


async def ask_on_every_route(client: AsyncOpenAI, model: str) -> set[str]:
    """One request naming `model` on each OpenAI route; the models the answers name."""
    chat = await client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}]
    )
    completion = await client.completions.create(model=model, prompt="hi")
    response = await client.responses.create(model=model, input="hi")
    return {chat.model, completion.model, response.model}


async def test_keyed_workers_swap_checkpoints_in_place_and_keep_answering_to_their_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    start_proxy: StartProxy,
    make_client: MakeClient,
) -> None:
    # SGLang launched with --served-model-name policy --api-key KEY; a judge model shares the
    # proxy, so it routes by name, and a swap renames both policy workers to the weights' path.
    async with (
        MockWorker("a", "policy", api_key=KEY) as a,
        MockWorker("b", "policy", api_key=KEY) as b,
        MockWorker("judge", "judge", api_key=KEY) as judge,
    ):
        base_url = await start_proxy([a, b, judge], worker_api_key=KEY)
        workers = [WorkerEndpoint(w.url, "/health") for w in (a, b)]
        served = Served(base_url, "unused", make_client(base_url), "policy", workers)
        starts: list[Path] = []
        monkeypatch.setattr(checkpoint_server, "serving", fake_serving(served, starts))
        config = RunConfig.model_validate(
            {
                "rollout": {"backend": "sglang:d2"},
                "model": {"path": str(tmp_path / "base"), "name": "policy"},
                "proxy": {"worker_api_key": KEY},
            }
        )
        async with CheckpointServer(config, lambda _: None, lambda *_: None) as server:
            assert await server.load(tmp_path / "checkpoint-100") is served
            for step in (200, 300):
                checkpoint = tmp_path / f"checkpoint-{step}"
                checkpoint.mkdir()
                assert await server.load(checkpoint) is served
                assert a.state.model_path == b.state.model_path == str(checkpoint)
                await eventually(lambda c=checkpoint: proxy_lists(served, {str(c), "judge"}))
                assert await ask_on_every_route(served.client, served.model) == {"policy"}
        assert [p.name for p in starts] == ["checkpoint-100"]  # swapped in place, never restarted
        assert (a.stats.weight_updates, b.stats.weight_updates) == (2, 2)
        assert a.stats.generation_requests + b.stats.generation_requests == 6
        assert judge.stats.generation_requests == 0


async def proxy_lists(served: Served, models: set[str]) -> bool:
    """Whether the proxy's /v1/models is exactly `models`: its probes saw the swap."""
    return {m.id for m in (await served.client.models.list()).data} == models
