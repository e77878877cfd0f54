"""`agent-eval run` takes its keys from the environment as `serve` does, and writes them nowhere."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import aiohttp

from agent_eval.testing.mock_worker import MockWorker
from agent_eval.testing.ports import free_port
from tests.helpers.cli_runs import finish, write_dataset
from tests.helpers.files import files_holding

CLIENT_KEY, WORKER_KEY = "client-key-5e1f0a", "worker-key-c72d94"
KEYS = {"AGENT_EVAL_API_KEY": CLIENT_KEY, "AGENT_EVAL_WORKER_API_KEY": WORKER_KEY}
NO_KEYS = {name: value for name, value in os.environ.items() if name not in KEYS}


async def run(*args: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """`agent-eval --debug run ARGS` to its end, with exactly `env` as its environment."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", "--debug", "run", *args, cwd=cwd, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        return await finish(process)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def models_status(port: int, key: str | None) -> int:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/v1/models", headers=headers) as response,
    ):
        return response.status


async def test_run_takes_its_keys_from_the_environment_and_writes_them_nowhere(
    tmp_path: Path,
) -> None:
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    port = free_port("127.0.0.1")
    async with MockWorker(api_key=WORKER_KEY) as worker:
        worker.behavior.hang = True  # the run's proxy stays up while the test knocks on it
        given = ("--dataset", str(data), "--limit", "2", "--endpoint", worker.url, "-o", "run")
        playing = asyncio.create_task(
            run(*given, f"proxy.port={port}", cwd=tmp_path, env=os.environ | KEYS)
        )
        await worker.gate.wait_for_arrivals(1, timeout=60)
        statuses = [await models_status(port, key) for key in (None, "wrong", CLIENT_KEY)]
        worker.behavior.hang = False
        worker.gate.release()
        code, out, err = await playing
    assert code == 0, err
    assert statuses == [401, 401, 200]  # the run's proxy wants the client key
    assert set(worker.stats.authorizations) == {f"Bearer {WORKER_KEY}"}
    assert {"config.yaml", "proxy.json", "proxy.log", "workers.json"} <= {
        path.name for path in run_dir.iterdir()
    }
    for key in (CLIENT_KEY, WORKER_KEY):
        assert key not in out + err
        assert not await asyncio.to_thread(files_holding, run_dir, key)


async def test_a_config_run_again_takes_the_keys_of_its_environment_never_a_mask(
    tmp_path: Path,
) -> None:
    data = write_dataset(tmp_path / "say.jsonl")
    async with MockWorker() as worker:
        given = ("--dataset", str(data), "--limit", "1", "--endpoint", worker.url)
        code, _, err = await run(*given, "-o", "first", cwd=tmp_path, env=os.environ | KEYS)
        assert code == 0, err
        assert set(worker.stats.authorizations) == {f"Bearer {WORKER_KEY}"}
        worker.stats.authorizations.clear()
        again = ("--config", "first/config.yaml", "-o", "again")
        code, _, err = await run(*again, cwd=tmp_path, env=NO_KEYS)
        assert code == 0, err
    assert set(worker.stats.authorizations) == {None}  # no key in the environment: none sent
