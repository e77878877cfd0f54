"""Launched workers require the proxy's worker key, and the key is written nowhere."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerCommand, WorkerConfig, get_backend
from agent_eval.errors import ConfigError
from agent_eval.launch.schedulers import SlurmConfig
from agent_eval.schedulers.base import Launch
from agent_eval.schedulers.local import LocalScheduler
from agent_eval.schedulers.slurm import SlurmScheduler, task_commands
from agent_eval.schedulers.slurm_script import job_layout
from agent_eval.system.credentials import WORKER_API_KEY
from agent_eval.testing.mock_backend import MockBackend
from tests.helpers.files import files_holding
from tests.helpers.proxy import MakeClient, StartProxy
from tests.helpers.proxy_calls import CHAT

KEY = "k3y-that-must-not-leak"


def keyed(backend: str) -> WorkerCommand:
    """The command of one worker of `backend`, made to require KEY."""
    chosen = get_backend(backend)
    command = chosen.command(WorkerConfig(model="m"), Allocation.parse(f"{backend}:d1"), "h", 1)
    return chosen.require_key(command, KEY)


async def status(url: str, headers: dict[str, str] | None = None) -> int:
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, json=CHAT, headers=headers) as response,
    ):
        return response.status


async def test_keyed_worker_refuses_others_and_serves_the_proxy(
    tmp_path: Path,
    start_proxy: StartProxy,
    make_client: MakeClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    scheduler = LocalScheduler(tmp_path)
    scheduler.worker_key = SecretStr(KEY)
    async with scheduler:
        # A guarded ready path: the wait passes only if the probe sends the key.
        backend = MockBackend(ready_path="/v1/models")
        (worker,) = await scheduler.launch(backend, WorkerConfig(), Allocation("mock"))
        await scheduler.wait_ready(timeout=30)
        chat = f"{worker.url}/v1/chat/completions"
        assert await status(chat) == 401
        assert await status(chat, {"Authorization": "Bearer wrong"}) == 401
        base_url = await start_proxy([worker.url], worker_api_key=KEY)
        reply = await make_client(base_url).chat.completions.create(**CHAT)
        assert reply.choices[0].message.content
    assert KEY not in caplog.text
    assert not await asyncio.to_thread(files_holding, tmp_path, KEY)


def test_unkeyed_workers_do_not_inherit_a_key_from_the_shell() -> None:
    # A worker's key comes from its scheduler (the proxy's), never straight from the shell.
    command = Launch(MockBackend(), WorkerConfig(), Allocation("mock")).command("h", 1)
    assert command.env == {WORKER_API_KEY: ""}


def test_vllm_takes_the_key_from_its_environment() -> None:
    command = keyed("vllm")
    assert command.env == {"VLLM_API_KEY": KEY}
    assert KEY not in json.dumps(command.argv)


def test_sglang_gets_api_key_expanded_by_a_shell(tmp_path: Path) -> None:
    command = keyed("sglang")
    assert command.env == {WORKER_API_KEY: KEY}
    assert KEY not in json.dumps(command.argv)
    wrapper = command.argv[: command.argv.index("sh", 1) + 1]
    # Stand in for SGLang with a program that prints its arguments.
    shown = subprocess.run(
        [*wrapper, sys.executable, "-c", "import sys; print(sys.argv[1:])", "--port", "1"],
        env=command.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert shown.strip() == str(["--port", "1", "--api-key", KEY])


def test_llamacpp_takes_the_key_from_its_environment() -> None:
    chosen = get_backend("llamacpp")
    command = chosen.require_key(WorkerCommand(["python", "-m", "server"]), KEY)
    assert command.env == {WORKER_API_KEY: KEY}
    assert KEY not in json.dumps(command.argv)


def test_a_backend_without_keys_refuses_one() -> None:
    with pytest.raises(ConfigError, match="external workers cannot require a key"):
        get_backend("external").require_key(WorkerCommand(["x"]), KEY)


def test_slurm_task_script_that_holds_the_key_is_private(tmp_path: Path) -> None:
    slurm = SlurmScheduler(tmp_path, SlurmConfig())
    command = MockBackend().require_key(WorkerCommand(["x"]), KEY)
    layout = job_layout(Allocation("mock"), SlurmConfig(), needs_gpus=False)
    slurm._write_scripts(task_commands(MockBackend(), command, 1), layout)
    task = tmp_path / "workers" / "task.sh"
    assert KEY in task.read_text()
    assert stat.S_IMODE(task.stat().st_mode) == 0o600
