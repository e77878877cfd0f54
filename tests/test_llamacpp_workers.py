"""Real llama.cpp workers of the embedded model: launched, tool calls served, nothing left after."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from pathlib import Path

import aiohttp
from openai import AsyncOpenAI
from pydantic import SecretStr

from agent_eval.allocation import Allocation
from agent_eval.backends import WorkerConfig, get_backend
from agent_eval.schedulers.local import LocalScheduler
from tests.helpers.llamacpp import MULTIPLY, QUESTION, servers_on
from tests.helpers.waits import eventually, wait_ready


async def ask_for_a_tool_call(base_url: str, api_key: str = "unused") -> dict:
    async with AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0) as client:
        answer = await client.chat.completions.create(
            model="smollm2-135m-instruct",
            messages=QUESTION,
            tools=[MULTIPLY],
            tool_choice={"type": "function", "function": {"name": "multiply"}},
            max_tokens=64,
            temperature=0,
        )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    (call,) = choice.message.tool_calls
    assert call.function.name == "multiply"
    return json.loads(call.function.arguments)


def _running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


async def test_local_scheduler_runs_two_keyed_llamacpp_workers(tmp_path: Path) -> None:
    """Two workers answer, only with the worker key, and leave nothing: one launch of the model
    for all three, since each launch loads it anew."""
    scheduler = LocalScheduler(tmp_path)
    scheduler.worker_key = SecretStr("worker-key")
    async with scheduler:
        workers = await scheduler.launch(
            get_backend("llamacpp"),
            WorkerConfig(context_length=2048),
            Allocation.parse("llamacpp:d2"),
        )
        # Their ready path, /v1/models, is guarded: the wait passes only if the probe sends the key.
        await scheduler.wait_ready(timeout=180)
        pids = scheduler.pids
        async with aiohttp.ClientSession() as http:
            for worker in workers:
                async with http.get(worker.url + "/v1/models") as answer:
                    assert answer.status == 401
        for worker in workers:
            arguments = await ask_for_a_tool_call(worker.url + "/v1", "worker-key")
            assert set(arguments) == {"a", "b"}
    assert servers_on({w.port for w in workers}) == []
    assert not any(_running(pid) for pid in pids)


async def test_serve_with_llamacpp_backend_serves_tool_calls_then_cleans_up(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", "serve", "--backend", "llamacpp:d2", "--port", "0",
        "--run-dir", str(tmp_path), "model.context_length=2048",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 240)).decode()
        base_url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        announced = [(await process.stdout.readline()).decode().split() for _ in range(2)]
        assert [words[0] for words in announced] == ["worker", "worker"], announced
        await wait_ready(base_url, 2)
        for _ in range(2):
            assert set(await ask_for_a_tool_call(base_url)) == {"a", "b"}
        root = base_url.removesuffix("/v1")
        async with aiohttp.ClientSession() as http, http.get(root + "/workers") as response:
            workers = (await response.json())["workers"]
        assert all(w["served"] == 1 for w in workers), "the two calls did not spread over both"
        ports = {int(w["url"].rsplit(":", 1)[1]) for w in workers}
        assert len(servers_on(ports)) == 2
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 60) == 0
    await eventually(lambda: servers_on(ports) == [], timeout=15)
