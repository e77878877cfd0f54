"""Real llama.cpp workers of the embedded model: launched, tool calls served, nothing left after."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

import aiohttp
from openai import AsyncOpenAI

from agent_eval.system.credentials import WORKER_API_KEY
from tests.helpers.llamacpp import MULTIPLY, QUESTION, servers_on
from tests.helpers.waits import eventually, wait_ready


async def ask_for_a_tool_call(base_url: str) -> dict:
    async with AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
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


async def workers_of(root: str) -> list[dict]:
    """The workers the proxy at `root` lists."""
    async with aiohttp.ClientSession() as http, http.get(root + "/workers") as response:
        return (await response.json())["workers"]


async def test_serve_over_two_keyed_llamacpp_workers_serves_tool_calls_then_cleans_up(
    tmp_path: Path,
) -> None:
    """Two workers answer the proxy, only with the worker key, and leave nothing: one launch of
    the model for all of it, since each launch loads it anew."""
    keyed = {**os.environ, WORKER_API_KEY: "worker-key"}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent_eval", "serve", "--backend", "llamacpp:d2", "--port", "0",
        "--run-dir", str(tmp_path), "model.context_length=2048",
        stdout=asyncio.subprocess.PIPE, env=keyed,
    )  # fmt: skip
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 240)).decode()
        base_url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        announced = [(await process.stdout.readline()).decode().split() for _ in range(2)]
        assert [words[0] for words in announced] == ["worker", "worker"], announced
        # Their ready path, /v1/models, is guarded: the launch waited with the key to get here.
        await wait_ready(base_url, 2)
        root = base_url.removesuffix("/v1")
        async with aiohttp.ClientSession() as http:
            for worker in await workers_of(root):
                async with http.get(worker["url"] + "/v1/models") as answer:
                    assert answer.status == 401
        for _ in range(2):
            assert set(await ask_for_a_tool_call(base_url)) == {"a", "b"}
        workers = await workers_of(root)
        assert all(w["served"] == 1 for w in workers), "the two calls did not spread over both"
        ports = {int(w["url"].rsplit(":", 1)[1]) for w in workers}
        assert len(servers_on(ports)) == 2
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 60) == 0
    await eventually(lambda: servers_on(ports) == [], timeout=15)
