"""A worker URL with a user name or password is refused wherever a worker URL comes in.

Taken, it would show on the unauthenticated /metrics, in X-Agent-Eval-Worker on every answer
and in workers.json; the refusal says how to pass a worker key instead, and never echoes it.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
import yaml

from agent_eval.testing.mock_worker import MockWorker
from tests.helpers.cli_runs import finish, write_dataset
from tests.helpers.proxy import StartProxy, StartWorkers

SECRET = "s3cret-in-a-url"
TOKEN = "admin-token-for-the-test"
CREDENTIALS = (f"user:{SECRET}@", f"{SECRET}@", f"user:{SECRET}@@")


def with_credentials(url: str, credentials: str = CREDENTIALS[0]) -> str:
    return url.replace("://", f"://{credentials}", 1)


def refusal_is_clear(text: str) -> None:
    """The message names the way to pass a worker key, and holds nothing secret."""
    assert "user name or password" in text, text
    assert "--worker-api-key" in text and "AGENT_EVAL_WORKER_API_KEY" in text, text
    assert SECRET not in text


async def text_of(http: aiohttp.ClientSession, url: str) -> str:
    async with http.get(url) as response:
        return await response.text()


@pytest.fixture
async def worker(start_workers: StartWorkers) -> MockWorker:
    (started,) = await start_workers(1)
    return started


@pytest.mark.parametrize(
    "given",
    [
        ["run", "--endpoint", "{bad}"],
        ["run", "--endpoint", "{good}", "proxy.endpoints=[{bad}]"],
        ["run", "--config", "{config}"],
        ["serve", "--port", "0", "--endpoint", "{bad}"],
        ["serve", "--port", "0", "proxy.endpoints=[{bad}]"],
    ],
    ids=["run flag", "run override", "run config file", "serve flag", "serve override"],
)
async def test_the_cli_refuses_a_worker_url_with_a_password(
    given: list[str], worker: MockWorker, tmp_path: Path
) -> None:
    bad = with_credentials(worker.url)
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"rollout": {"endpoints": [bad]}}))
    data, run_dir = write_dataset(tmp_path / "say.jsonl"), tmp_path / "run"
    args = [arg.format(bad=bad, good=worker.url, config=config) for arg in given]
    if args[0] == "run":
        args += ["--dataset", str(data), "--limit", "1", "-o", str(run_dir)]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", *args, cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        code, out, err = await finish(process, 60)
    finally:
        if process.returncode is None:  # a proxy that took the URL serves until stopped
            process.kill()
            await process.wait()
    assert code == 2, out + err
    assert "Traceback" not in err
    refusal_is_clear(out + err)
    assert not run_dir.exists()  # refused before anything was written


@pytest.mark.parametrize("credentials", CREDENTIALS)
async def test_the_admin_api_refuses_a_worker_url_with_a_password(
    credentials: str, worker: MockWorker, start_proxy: StartProxy
) -> None:
    root = (await start_proxy([], admin_token=TOKEN)).removesuffix("/v1")
    admin = {"Authorization": f"Bearer {TOKEN}"}
    async with aiohttp.ClientSession() as http:
        added = {"url": with_credentials(worker.url, credentials), "worker_key": True}
        async with http.post(f"{root}/workers", json=added, headers=admin) as response:
            status, error = response.status, (await response.json())["error"]
        shown = [await text_of(http, f"{root}{path}") for path in ("/workers", "/metrics")]
    assert (status, error["code"]) == (400, "invalid_worker_url"), error
    refusal_is_clear(error["message"])
    assert not any(SECRET in text for text in shown)


def test_a_slurm_host_with_a_password_is_refused(tmp_path: Path) -> None:
    # Slurm workers publish http://HOST:PORT from scheduler.slurm.host: the one URL not given.
    result = subprocess.run(
        [sys.executable, "-m", "agent_eval", "workers", "up", "--run-dir", str(tmp_path / "w"),
         "--backend", "llamacpp:d1", "--scheduler", "slurm",
         f"scheduler.slurm.host=user:{SECRET}@10.0.0.5"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "scheduler.slurm.host must be a host name" in result.stderr
    assert SECRET not in result.stdout + result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "w").exists()
