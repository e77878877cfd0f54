"""Which worker served each model call: the proxy's header, and the trajectory that keeps it."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from agents import RunConfig, Runner
from openai import AsyncOpenAI

from agent_eval.agents import RunContext, Sampling, Trajectory, load_runner
from agent_eval.agents.calculator import calculator_tools
from agent_eval.agents.math_calculator import MathCalculatorAgent
from agent_eval.agents.recording import AttemptRecorder
from agent_eval.agents.sdk import sdk_agent
from agent_eval.data import load_dataset
from agent_eval.results.files import RunDirectory
from agent_eval.rewards import RewardScorer
from agent_eval.run.config import RunConfig as EvalConfig
from agent_eval.run.engine import Engine
from agent_eval.run.parts import engine_config
from agent_eval.testing.mock_worker import MockWorker
from agent_eval.wire import WORKER_HEADER
from tests.helpers.proxy import MakeClient, StartProxy, StartWorkers
from tests.helpers.waits import eventually

MESSAGES = [{"role": "user", "content": "What is 2 + 3?"}]
CALLS = {
    "chat": ("/chat/completions", {"model": "mock-model", "messages": MESSAGES}, True),
    "completions": ("/completions", {"model": "mock-model", "prompt": "2 + 3 ="}, True),
    "responses": ("/responses", {"model": "mock-model", "input": "What is 2 + 3?"}, True),
    "translated": ("/responses", {"model": "mock-model", "input": "What is 2 + 3?"}, False),
}
QUESTION = SimpleNamespace(id="q1", question="What is 2 + 3?")


def served(workers: list[MockWorker]) -> Counter[str]:
    """Generation requests each worker answered, by its URL."""
    return Counter({w.url: w.stats.generation_requests for w in workers})


async def call(base_url: str, path: str, body: dict[str, Any]) -> tuple[int, str | None]:
    """Status and worker header of one request; a stream is read to its end."""
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as http,
        http.post(base_url + path, json=body) as response,
    ):
        await response.read()
        return response.status, response.headers.get(WORKER_HEADER)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", list(CALLS))
async def test_every_answer_names_the_worker_that_made_it(
    start_workers: StartWorkers, start_proxy: StartProxy, kind: str, stream: bool
) -> None:
    path, body, native = CALLS[kind]
    workers = await start_workers(2, responses_api=native)
    base_url = await start_proxy(workers, policy="round_robin")
    for _ in range(4):
        before = served(workers)
        status, worker = await call(base_url, path, {**body, "stream": stream})
        assert status == 200
        assert served(workers) - before == Counter({worker: 1})


async def test_a_workers_client_error_names_it(
    start_workers: StartWorkers, start_proxy: StartProxy
) -> None:
    workers = await start_workers(2)
    base_url = await start_proxy(workers)
    for worker in workers:
        worker.behavior.update({"error_status": 400})
    path, body, _ = CALLS["chat"]
    status, named = await call(base_url, path, body)
    assert status == 400 and served(workers) == Counter({named: 1})


@pytest.mark.parametrize("status", [500, 503])
async def test_a_workers_server_error_names_it_after_the_retries(
    start_workers: StartWorkers, start_proxy: StartProxy, status: int
) -> None:
    # 500 ends as a poisoned request (the same failure twice), 503 as retries run out.
    (worker,) = await start_workers(1)
    worker.behavior.update({"error_status": status})
    base_url = await start_proxy([worker], retry={"max_retries": 1, "backoff_base": 0.001})
    path, body, _ = CALLS["chat"]
    assert await call(base_url, path, body) == (status, worker.url)


async def test_an_answer_the_proxy_makes_names_no_worker(start_proxy: StartProxy) -> None:
    base_url = await start_proxy([])
    path, body, _ = CALLS["chat"]
    assert await call(base_url, path, body) == (503, None)


@pytest.fixture
async def scorer() -> AsyncIterator[RewardScorer]:
    async with RewardScorer(max_workers=1) as pool:
        yield pool


def proxy_record(path: Path) -> list[str]:
    """The workers the proxy recorded for one session, in order."""
    return [json.loads(line)["worker"] for line in path.read_text().splitlines()]


async def test_each_model_call_of_an_attempt_names_its_worker(
    scorer: RewardScorer, start_workers: StartWorkers, start_proxy: StartProxy, tmp_path: Path
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.two_step = True
    recorded = tmp_path / "recorded"
    base_url = await start_proxy(workers, policy="round_robin", record_dir=recorded)
    items = list(load_dataset("gsm8k_mini", limit=4))
    config = engine_config(EvalConfig.model_validate({"eval": {"concurrency": 4}}), "mock-model")
    async with AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
        engine = Engine(load_runner("math_calculator"), scorer, client, config)
        await engine.run(items, RunDirectory(tmp_path / "run"), total=len(items))
    played = list(RunDirectory(tmp_path / "run").records())
    named = {r.session_id: [c["worker"] for c in r.trajectory["model_calls"]] for r in played}
    assert Counter(w for calls in named.values() for w in calls) == served(workers)
    assert all(len(calls) == 2 for calls in named.values())
    # Concurrent attempts share the client: each keeps its own calls' workers, as the proxy saw.
    for session, calls in named.items():
        await eventually(lambda s=session: len(proxy_record(recorded / f"{s}.jsonl")) == 2)
        assert calls == proxy_record(recorded / f"{session}.jsonl")


async def test_a_streamed_run_names_each_calls_worker(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    workers = await start_workers(2)
    for worker in workers:
        worker.behavior.two_step = True
    base_url = await start_proxy(workers, policy="round_robin")
    ctx = RunContext(make_client(base_url, "q1-0"), "mock-model", "q1-0", 1, Sampling())
    agent = sdk_agent("a", "Solve it.", calculator_tools(), ctx, "chat_completions")
    recorder = AttemptRecorder(Trajectory())
    with recorder.listening():
        streamed = Runner.run_streamed(
            agent, "What is 2 + 3?", hooks=recorder, run_config=RunConfig(tracing_disabled=True)
        )
        async for _ in streamed.stream_events():
            pass
    named = [call.worker for call in recorder.trajectory.model_calls]
    assert len(named) == 2 and Counter(named) == served(workers)


async def test_a_worker_answering_500_is_named_in_the_error(
    start_workers: StartWorkers, start_proxy: StartProxy, make_client: MakeClient
) -> None:
    (worker,) = await start_workers(1)
    worker.behavior.update({"error_status": 500})
    base_url = await start_proxy([worker])
    ctx = RunContext(make_client(base_url, "q1-0"), "mock-model", "q1-0", 1, Sampling())
    trajectory = await MathCalculatorAgent().run(QUESTION, ctx)
    assert trajectory.error is not None and trajectory.error.kind == "upstream_error"
    assert trajectory.error.to_dict()["worker"] == worker.url
